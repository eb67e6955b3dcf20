#!/bin/bash
# GPU verification of the similarity join on a device host (docs/SIMJOIN.md, "GPU verification").
#
# Here (no Go needed there):
#   CGO_ENABLED=0 go test -c -ldflags=-s -o DIR/gpusimjoin.test ./internal/gpusimjoin
#   CGO_ENABLED=0 go build -ldflags=-s -o DIR/xsect ./cmd/xsect
#   CGO_ENABLED=0 go test -c -ldflags=-s -o DIR/simjoin.test ./internal/simjoin   # for the phases step
#   cp scripts/simjoin-gpu.sh DIR/run.sh
#   DIR/data: fimi/{BMS2,retail,kosarak_head36682}.dat.gz and hypergraphs/tags-math-sx.dedup.sets.gz
#             (gzip -9 of ../shared/data's files), ir/gcide/gcide.docs.sets.gz as it is
# There, from DIR's parent, with OUT a folder for the logs:
#   bash DIR/run.sh tests bench cli clifull filteronly
# Steps: tests[:REGEX] (every GPU test), bench[:REGEX] (BenchmarkMann, $ROUNDS rounds, default 9, of the variants
# $VARIANTS, default the benchmark's: see -mann.variants; go test reads a top-level | in REGEX as two whole
# patterns, so name one data set a step: bench:count//gcide), filteronly[:REGEX] (BenchmarkFilterOnly),
# cli (xsect simjoin --count-only, --device cpu and gpu alternating, 3 rounds), clifull (pairs written to /dev/null),
# phases[:REGEX] (internal/simjoin's BenchmarkMann on the CPU alone, $ROUNDS rounds: where the time goes, planning
# included, e.g. phases:t=0.5/gcide/auto).
# Use parentheses for alternatives within a step's REGEX: bench:count/t=0.5/(tags|gcide).
set -u
cd "$(dirname "$0")"
export XSECT_CACHE_DIR=/tmp/xc XSECT_DATA=/tmp/data XSECT_REQUIRE_GPU=1 # a GPU test that finds no GPU fails
mkdir -p /tmp/data
cp -r data/* /tmp/data/
for f in /tmp/data/fimi/*.gz /tmp/data/hypergraphs/*.gz; do gunzip -f "$f"; done
chmod +x xsect gpusimjoin.test simjoin.test 2>/dev/null
nproc; nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader; uptime
files="BMS2:fimi/BMS2.dat retail:fimi/retail.dat kosarak:fimi/kosarak_head36682.dat tags-math-sx:hypergraphs/tags-math-sx.dedup.sets gcide:ir/gcide/gcide.docs.sets.gz"
for step in "$@"; do
  case $step in
  tests*)
    pat=${step#tests}; pat=${pat#:}
    ./gpusimjoin.test -test.v -test.count=1 -test.timeout 280s ${pat:+-test.run "$pat"} 2>&1 | grep -v '^=== ' | tee $OUT/tests.log | tail -60 ;;
  bench*)
    pat=${step#bench}; pat=${pat#:}
    ./gpusimjoin.test -test.run '^$' -test.bench "Mann${pat:+/$pat}" -test.benchtime ${ROUNDS:-9}x ${VARIANTS:+-mann.variants "$VARIANTS"} 2>&1 | tee $OUT/bench.log | grep -E '^Benchmark|ok|FAIL' ;;
  phases*)
    pat=${step#phases}; pat=${pat#:}
    ./simjoin.test -test.run '^$' -test.bench "Mann${pat:+/$pat}" -test.benchtime ${ROUNDS:-9}x 2>&1 | tee $OUT/phases.log | grep -E '^Benchmark|ok|FAIL' ;;
  filteronly*)
    pat=${step#filteronly}; pat=${pat#:}
    ./gpusimjoin.test -test.run '^$' -test.bench "FilterOnly${pat:+/$pat}" -test.benchtime 10x 2>&1 | tee $OUT/filteronly.log | grep -E '^Benchmark|ok|FAIL' ;;
  cli)
    for t in 0.5 0.7; do for fs in $files; do n=${fs%%:*}; f=/tmp/data/${fs#*:}
      for round in 1 2 3; do for dev in cpu gpu; do
        echo "== $n t=$t $dev round $round"
        TIMEFORMAT="process %R s"; { time ./xsect simjoin $f --threshold $t --distinct --count-only --explain --device $dev 2>&1 | grep -E '^(ran|gpu:|[0-9]+$|\* )'; } 2>&1
      done; done
    done; done 2>&1 | tee $OUT/cli.log | grep -E '^(==|ran|process)' | tail -100 ;;
  clifull)
    for t in 0.5 0.7; do for fs in tags-math-sx:hypergraphs/tags-math-sx.dedup.sets gcide:ir/gcide/gcide.docs.sets.gz; do n=${fs%%:*}; f=/tmp/data/${fs#*:}
      for round in 1 2 3; do for dev in cpu gpu; do
        echo "== $n t=$t $dev round $round (pairs written)"
        TIMEFORMAT="process %R s"; { time ./xsect simjoin $f --threshold $t --distinct --explain --device $dev -o /dev/null 2>&1 | grep -E '^(ran|gpu:|\* )'; } 2>&1
      done; done
    done; done 2>&1 | tee $OUT/clifull.log | grep -E '^(==|ran|process)' | tail -40 ;;
  esac
done
