#!/usr/bin/env bash
# simjoin-mann.sh times xsect simjoin against Mann et al.'s set similarity
# join code side by side, on the five data sets of issue 12's anchor
# (BMS2, retail, the kosarak prefix, tags-math-sx, gcide), Jaccard with
# equal sets counted once, at t = 0.5 and 0.7, and checks that both find
# the same number of pairs.
#
#   scripts/simjoin-mann.sh MANN [DATA_DIR]
#
# MANN is Mann et al.'s source folder (ssjoin-0.1 of mshcruz/SSJOINLib at
# 171bac7), built here with g++ (Debian's libboost-program-options-dev
# and libsparsehash-dev), or a set_sim_join binary built before. DATA_DIR
# is the shared data folder (default ../shared/data from the repository
# root). Environment: ROUNDS (default 5), OUT (scratch folder, default a
# temporary one), CORES (two CPUs to pin to, default "0,1").
#
# Mann's time is index + join, in one thread, as its --timings prints it
# (reading and preprocessing excluded: its input is preprocessed here, in
# Python, the way its paper does); per data set, the best of its three
# algorithms. xsect's is its whole work after reading the file, its own
# preprocessing included, as --explain prints it ("after ... of
# preparation" plus the run), the planner choosing the algorithm, on one
# core (--threads 1, pinned) and on two. The rounds alternate the
# programs; each figure is the median of the rounds, with the least and
# the largest (Mann's: the algorithm of the least median), and the
# speedups are ratios of the summed medians (and of the summed least
# times: on a machine that others share, the least is the run least
# disturbed, for both programs alike). The load average is printed before
# and after.
set -eu -o pipefail
mann=$1
root=$(cd "$(dirname "$0")/.." && pwd)
data=${2:-$root/../shared/data}
out=${OUT:-$(mktemp -d)}
rounds=${ROUNDS:-5}
cores=${CORES:-0,1}
one=${cores%%,*}

sets=(
	"BMS2|fimi/BMS2.dat"
	"retail|fimi/retail.dat"
	"kosarak|fimi/kosarak_head36682.dat"
	"tags-math-sx|hypergraphs/tags-math-sx.dedup.sets"
	"gcide|ir/gcide/gcide.docs.sets.gz"
)

# Mann et al.'s code, built with the two changes g++ 12 needs.
bin=$mann
if [ -d "$mann" ]; then
	src=$out/mann-src
	rm -rf "$src" && cp -r "$mann" "$src"
	sed -i 's/std::tr1::hash/std::hash/g' "$src/data.h" "$src/inv_index.h"
	sed -i 's/struct isless/struct mann_isless/; s/isless())/mann_isless())/' "$src/data.h"
	sed 's/@GIT_SHA1@/171bac7/' "$src/GitSHA1.cxx.in" >"$src/GitSHA1.cxx"
	grep -v cmakedefine "$src/config.h.in" >"$src/config.h"
	(cd "$src" && g++ -O3 -DNDEBUG -std=c++11 -o set_sim_join main.cxx input.cxx statistics.cxx timing.cxx GitSHA1.cxx lsh.cxx cmdline_*.cxx -lboost_program_options)
	bin=$src/set_sim_join
fi
(cd "$root" && go build -o "$out/xsect" ./cmd/xsect)

# Mann et al.'s input: distinct nonempty sets, elements renumbered by
# increasing frequency (ties by value), sorted; sets sorted by size, then
# lexicographically.
for s in "${sets[@]}"; do
	name=${s%%|*}
	python3 - "$data/${s#*|}" "$out/$name.txt" <<'EOF'
import collections, gzip, sys
src, dst = sys.argv[1], sys.argv[2]
op = gzip.open if src.endswith('.gz') else open
recs = set()
with op(src, 'rt') as f:
    for line in f:
        r = frozenset(int(x) for x in line.split())
        if r:
            recs.add(r)
freq = collections.Counter(t for r in recs for t in r)
rank = {t: i for i, t in enumerate(sorted(freq, key=lambda t: (freq[t], t)))}
out = sorted((tuple(sorted(rank[t] for t in r)) for r in recs), key=lambda r: (len(r), r))
with open(dst, 'w') as f:
    for r in out:
        f.write(' '.join(map(str, r)) + '\n')
EOF
done

# median, least and largest of the numbers on standard input.
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR+1)/2)]}'; }
least() { sort -n | head -1; }
largest() { sort -n | tail -1; }
spread() { local v; v=$(tr ' ' '\n' | grep .); echo "$(echo "$v" | median) [$(echo "$v" | least)-$(echo "$v" | largest)]"; }
echo "load before: $(uptime)"
# xsect_ms prints the milliseconds of preparation plus run that --explain
# reports, and checks the count.
xsect_ms() {
	local want=$1
	shift
	"$@" 2>"$out/explain" >"$out/count"
	[ "$(cat "$out/count")" = "$want" ] || { echo "xsect: $(cat "$out/count") pairs, Mann $want: $*" >&2; exit 1; }
	awk '/^ran / {
		for (i = 1; i <= NF; i++) { if ($i == "in") run = $(i+1); if ($i == "after") prep = $(i+1) }
		print ms(run) + ms(prep) }
		function ms(d) { if (d ~ /ms$/) return d + 0; if (d ~ /µs$|us$/) return d / 1000; if (d ~ /s$/) return d * 1000; return d }' "$out/explain"
}

declare -A mann_ms xs1 xs2 pairs
for ((round = 0; round < rounds; round++)); do
	for t in 0.5 0.7; do
		for s in "${sets[@]}"; do
			name=${s%%|*}
			key=$t/$name
			for alg in allpairs ppjoin groupjoin; do
				res=$(taskset -c "$one" "$bin" --timings --input "$out/$name.txt" --algorithm $alg --threshold $t |
					awk '/Result pair count/ {c = $4} /algoindex|algojoin/ {ms += $2} END {print c, ms}')
				pairs[$key]=${res% *}
				mann_ms[$key/$alg]="${mann_ms[$key/$alg]:-} ${res#* }"
			done
			file=$data/${s#*|}
			xs1[$key]="${xs1[$key]:-} $(xsect_ms "${pairs[$key]}" taskset -c "$one" "$out/xsect" simjoin "$file" --threshold $t --distinct --count-only --explain --threads 1)"
			xs2[$key]="${xs2[$key]:-} $(xsect_ms "${pairs[$key]}" taskset -c "$cores" "$out/xsect" simjoin "$file" --threshold $t --distinct --count-only --explain)"
		done
	done
done

echo "load after: $(uptime)"
printf '%-14s %4s %10s %-10s %-22s %-22s %-22s\n' data t pairs "Mann alg" "Mann ms, median [range]" "1 core" "2 cores"
for t in 0.5 0.7; do
	sm=0 s1=0 s2=0 lm=0 l1=0 l2=0
	for s in "${sets[@]}"; do
		name=${s%%|*}
		key=$t/$name
		best= balg=
		for alg in allpairs ppjoin groupjoin; do
			m=$(echo ${mann_ms[$key/$alg]} | tr ' ' '\n' | median)
			if [ -z "$best" ] || awk "BEGIN {exit !($m < $best)}"; then best=$m balg=$alg; fi
		done
		a=$(echo ${xs1[$key]} | tr ' ' '\n' | median)
		b=$(echo ${xs2[$key]} | tr ' ' '\n' | median)
		printf '%-14s %4s %10s %-10s %-22s %-22s %-22s\n' "$name" $t "${pairs[$key]}" $balg \
			"$(echo ${mann_ms[$key/$balg]} | spread)" "$(echo ${xs1[$key]} | spread)" "$(echo ${xs2[$key]} | spread)"
		sm=$(awk "BEGIN {print $sm + $best}") s1=$(awk "BEGIN {print $s1 + $a}") s2=$(awk "BEGIN {print $s2 + $b}")
		lm=$(awk "BEGIN {print $lm + $(echo ${mann_ms[$key/$balg]} | tr ' ' '\n' | least)}")
		l1=$(awk "BEGIN {print $l1 + $(echo ${xs1[$key]} | tr ' ' '\n' | least)}")
		l2=$(awk "BEGIN {print $l2 + $(echo ${xs2[$key]} | tr ' ' '\n' | least)}")
	done
	printf '%-14s %4s medians: Mann %s ms, xsect %s ms on 1 core (%.2fx), %s ms on 2 (%.2fx)\n' sum $t "$sm" "$s1" \
		"$(awk "BEGIN {print $sm / $s1}")" "$s2" "$(awk "BEGIN {print $sm / $s2}")"
	printf '%-14s %4s least:   Mann %s ms, xsect %s ms on 1 core (%.2fx), %s ms on 2 (%.2fx)\n' sum $t "$lm" "$l1" \
		"$(awk "BEGIN {print $lm / $l1}")" "$l2" "$(awk "BEGIN {print $lm / $l2}")"
done
