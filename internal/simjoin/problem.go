package simjoin

import (
	"bytes"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/internal/par"
	"github.com/xsect/xsect/internal/radix"
	"github.com/xsect/xsect/internal/sortnet"
	"github.com/xsect/xsect/sets"
)

// Problem is what engines work on: each collection's distinct nonempty
// sets, as Mann et al. prepare them (elements renumbered by increasing
// frequency over both collections, ties by value, so that a set's first
// elements are its rarest; sets sorted by size, then lexicographically),
// and the threshold. Engines treat it as read-only.
type Problem struct {
	// R holds the first collection's records; S the second's, or R
	// again in a self-join.
	R, S *Side
	// Self reports a self-join: only pairs of records x < y count.
	Self bool
	// Threshold is the caller's measure and threshold.
	Threshold Threshold
	// Distinct reports that identical sets count once, as their smallest
	// id: pairs of records are not expanded to the sets they stand for.
	Distinct bool
	// Universe is the number of distinct elements: renumbered elements
	// lie in [0, Universe).
	Universe int
	// Unique is the number of elements that one record only holds (of
	// either side): they are the rarest, [0, Unique), and no filter needs
	// them.
	Unique uint32
	// Threads is the number of CPU worker goroutines to use.
	Threads int
	// Memory is the CPU memory budget in bytes.
	Memory int64
	// GPUs are the GPUs GPU engines may use (Options.GPUs; nil: all).
	GPUs []int
	// Stats describes the problem, for the planner.
	Stats Stats
	// GPUKernel is Options.GPUKernel: the GPU verification's kernel that
	// the caller forces, or "" for the planner's choice.
	GPUKernel string

	phases        Phases // the preparation's (Plan left out)
	stampUniverse int    // see Options.stampUniverse
	pairMax       int    // see Options.pairMax

	memos engine.Memos
}

// Memo returns the value that build returns for key, calling build once per
// problem: an engine's Estimate and Run share their analysis this way
// (engines of other packages prefix their keys with their package).
func (p *Problem) Memo(key string, build func() any) any {
	return p.memos.Get(key, build)
}

// Side is one prepared collection. Its records are its distinct nonempty
// sets in increasing size, their elements renumbered. Only the probing
// prefix of each record and one more element (Threshold.ProbePrefix of its
// size plus one, which no filter reads past) are sorted; the rest of a record, its larger
// elements, is in no particular order: what verification needs of it is
// which elements it holds, and the caller's set, in the caller's order,
// serves merges. Records of equal size are in lexicographic order of
// what is stored.
type Side struct {
	// Off and Tok hold the records: record x is Tok[Off[x]:Off[x+1]].
	Off []uint32
	Tok []uint32
	// Orig is the caller's collection: record x is the set Orig.Set(ID[x])
	// renumbered.
	Orig *sets.Collection
	// ID[x] is the smallest id of a set equal to record x.
	ID []uint32
	// DupOff and DupIDs list, when some sets are equal, every id of each
	// record's sets in increasing order: DupIDs[DupOff[x]:DupOff[x+1]].
	// Both are nil when all nonempty sets differ.
	DupOff, DupIDs []uint32
	// SizeStart[n] is the first record of size >= n, for n in
	// [0, MaxSize+1].
	SizeStart []uint32
	// MaxSize is the size of the largest record (0 without records).
	MaxSize uint32
	// Sets is the number of sets of the caller's collection; Empty how
	// many of them are empty.
	Sets, Empty int

	// bits holds the records' bitmaps, words each (see setBitmap).
	bits  []uint64
	words int
}

// Len returns the number of records.
func (s *Side) Len() int { return len(s.Off) - 1 }

// bytes is the memory of the side's arrays, the caller's collection
// excepted.
func (s *Side) bytes() int64 {
	return 4*int64(cap(s.Off)+cap(s.Tok)+cap(s.ID)+cap(s.DupOff)+cap(s.DupIDs)+cap(s.SizeStart)) + 8*int64(cap(s.bits))
}

// Record returns record x.
func (s *Side) Record(x int) []uint32 { return s.Tok[s.Off[x]:s.Off[x+1]:s.Off[x+1]] }

// Set returns record x's set as the caller gave it, strictly increasing
// (its elements not renumbered).
func (s *Side) Set(x int) []uint32 {
	id := s.ID[x]
	return s.Orig.Elements[s.Orig.Offsets[id]:s.Orig.Offsets[id+1]]
}

// bitmap returns record x's bitmap.
func (s *Side) bitmap(x int) []uint64 { return s.bits[x*s.words : (x+1)*s.words] }

// Size returns |record x|.
func (s *Side) Size(x int) uint32 { return s.Off[x+1] - s.Off[x] }

// IDs returns the ids of the caller's sets that record x stands for, in
// increasing order.
func (s *Side) IDs(x int) []uint32 {
	if s.DupOff == nil {
		return s.ID[x : x+1]
	}
	return s.DupIDs[s.DupOff[x]:s.DupOff[x+1]]
}

// Stats describes a problem for the planner and for Explain.
type Stats struct {
	R, S SideStats // S equals R in a self-join
	// Universe is the number of distinct elements.
	Universe int
	// MaxDF is the largest number of records holding one element.
	MaxDF int
}

// SideStats describes one prepared collection.
type SideStats struct {
	Sets     int     // sets of the caller's collection
	Empty    int     // empty sets among them
	Records  int     // distinct nonempty sets
	Elements int64   // elements of the records
	AvgSize  float64 // average record size
	MaxSize  int
}

// Options are the options of package simjoin, whose Options documents
// each exported field (simjoin converts its Options to these in one
// place); the unexported ones are switches for tests.
type Options struct {
	Threshold  Threshold
	Technique  string
	Device     string
	Threads    int
	Distinct   bool
	Memory     int64
	Progress   func(done, total int64)
	Rows, Cols sets.Range
	GPUKernel  string
	GPUs       []int

	// stampUniverse, when positive, replaces the largest universe over
	// which remainders of any length are verified by stamps (tests lower
	// it to run the kernels' path on small inputs).
	stampUniverse int
	// pairMax, when positive, replaces the largest size of the records
	// that PairJoin indexes by pairs.
	pairMax int
}

// GPUKernels are the kernels that Options.GPUKernel may force: the three
// verification alternatives of Bellas and Gounaris.
var GPUKernels = []string{"thread", "block", "pair"}

// newProblem prepares r × s (s nil: the self-join of r).
func newProblem(r, s *sets.Collection, opt Options, threads int, memory int64) (*Problem, error) {
	if r == nil {
		return nil, fmt.Errorf("simjoin: nil collection")
	}
	if err := opt.Threshold.Validate(); err != nil {
		return nil, err
	}
	kernel := strings.ToLower(strings.TrimSpace(opt.GPUKernel))
	if kernel == "auto" {
		kernel = ""
	}
	if kernel != "" && !slices.Contains(GPUKernels, kernel) {
		return nil, fmt.Errorf("simjoin: unknown GPU kernel %q (auto, %s)", opt.GPUKernel, strings.Join(GPUKernels, ", "))
	}
	p := &Problem{Self: s == nil, Threshold: opt.Threshold, Distinct: opt.Distinct, Threads: threads, Memory: memory, stampUniverse: opt.stampUniverse, GPUKernel: kernel, GPUs: opt.GPUs, pairMax: opt.pairMax}
	if p.stampUniverse <= 0 {
		p.stampUniverse = 1 << 20
	}
	for _, c := range []*sets.Collection{r, s} {
		if c == nil {
			continue
		}
		if c.Len() >= math.MaxUint32 {
			return nil, fmt.Errorf("simjoin: %d sets: at most 2^32-2 are supported", c.Len())
		}
		if uint64(len(c.Elements)) >= math.MaxUint32 {
			return nil, fmt.Errorf("simjoin: %d elements: at most 2^32-2 are supported", len(c.Elements))
		}
	}
	t0 := time.Now()
	rd := distinct(r, threads)
	var sd *dedup
	if s != nil {
		sd = distinct(s, threads)
	}
	t1 := time.Now()
	tm := newTokenMap(threads, r, rd, s, sd)
	t2 := time.Now()
	p.Universe, p.Unique = tm.universe, tm.unique
	// The probing prefix and one more element: PairJoin's pair prefixes
	// are up to one longer.
	prefix := func(n uint32) uint32 { return min(opt.Threshold.ProbePrefix(n)+1, n) }
	p.R = tm.side(threads, r, rd, prefix)
	p.S = p.R
	if s != nil {
		p.S = tm.side(threads, s, sd, prefix)
	}
	p.Stats = Stats{R: p.R.stats(), S: p.S.stats(), Universe: tm.universe, MaxDF: int(tm.maxDF)}
	p.phases = Phases{Distinct: t1.Sub(t0), Renumber: t2.Sub(t1), Order: time.Since(t2)}
	return p, nil
}

func (s *Side) stats() SideStats {
	st := SideStats{Sets: s.Sets, Empty: s.Empty, Records: s.Len(), Elements: int64(len(s.Tok)), MaxSize: int(s.MaxSize)}
	if st.Records > 0 {
		st.AvgSize = float64(st.Elements) / float64(st.Records)
	}
	return st
}

// dedup is a collection's distinct nonempty sets: keep lists the first
// occurrence of each in increasing order, and first[i] is the position in
// keep of set i's first occurrence (for every nonempty set i; empty sets
// get noRecord).
type dedup struct {
	keep  []uint32
	first []uint32
	dups  bool // some set occurs twice
	empty int
}

const noRecord = math.MaxUint32

// distinct finds c's distinct nonempty sets by hashing them.
func distinct(c *sets.Collection, threads int) *dedup {
	k := c.Len()
	hash := make([]uint64, k)
	chunks(threads, k, int64(len(c.Elements)), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			hash[i] = hashSet(c.Elements[c.Offsets[i]:c.Offsets[i+1]])
		}
	})
	// rep[i] is the first set equal to set i. Each worker takes the sets
	// of one range of hashes, in order, with a table of its own.
	rep := make([]uint32, k)
	shards := max(1, min(threads, k>>10))
	chunks(shards, shards, int64(len(c.Elements)), func(lo, hi int) {
		for w := lo; w < hi; w++ {
			size := 1
			for size < 2*k/shards+2 {
				size <<= 1
			}
			mask := uint64(size - 1)
			table := make([]uint32, size) // a set id, plus one
			for i := 0; i < k; i++ {
				h := hash[i]
				if int(h>>32*uint64(shards)>>32) != w {
					continue
				}
				set := c.Elements[c.Offsets[i]:c.Offsets[i+1]]
				slot := h & mask
				for {
					e := table[slot]
					if e == 0 {
						table[slot] = uint32(i) + 1
						rep[i] = uint32(i)
						break
					}
					j := e - 1
					if hash[j] == h && equalSets(set, c.Elements[c.Offsets[j]:c.Offsets[j+1]]) {
						rep[i] = j
						break
					}
					slot = (slot + 1) & mask
				}
			}
		}
	})
	d := &dedup{first: make([]uint32, k)}
	for i := 0; i < k; i++ {
		switch {
		case c.Offsets[i] == c.Offsets[i+1]:
			d.first[i] = noRecord
			d.empty++
		case rep[i] == uint32(i):
			d.first[i] = uint32(len(d.keep))
			d.keep = append(d.keep, uint32(i))
		default:
			d.first[i] = d.first[rep[i]]
			d.dups = true
		}
	}
	return d
}

// hashSet mixes a set's elements into 64 bits, in four independent lanes
// (a multiply's latency per element would otherwise bound it).
func hashSet(s []uint32) uint64 {
	const m = 0xff51afd7ed558ccd
	h0, h1, h2, h3 := uint64(len(s)), uint64(1), uint64(2), uint64(3)
	for len(s) >= 4 {
		h0 = (h0 ^ uint64(s[0])) * m
		h1 = (h1 ^ uint64(s[1])) * m
		h2 = (h2 ^ uint64(s[2])) * m
		h3 = (h3 ^ uint64(s[3])) * m
		s = s[4:]
	}
	for _, e := range s {
		h0 = (h0 ^ uint64(e)) * m
	}
	h := h0 ^ bits.RotateLeft64(h1, 16) ^ bits.RotateLeft64(h2, 32) ^ bits.RotateLeft64(h3, 48)
	h ^= h >> 29
	h *= 0x9e3779b97f4a7c15
	return h ^ h>>32
}

// equalSets reports whether a and b are equal, comparing their bytes
// (which the runtime does many at a time).
func equalSets(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 {
		return true
	}
	return bytes.Equal(unsafe.Slice((*byte)(unsafe.Pointer(&a[0])), 4*len(a)), unsafe.Slice((*byte)(unsafe.Pointer(&b[0])), 4*len(b)))
}

// tokenMap renumbers elements by increasing frequency among the distinct
// records of both collections, ties by value.
type tokenMap struct {
	universe int
	unique   uint32 // elements of one record only: ranks [0, unique)
	maxDF    uint32
	dense    []uint32 // rank by value, when values are dense enough
	values   []uint32 // the distinct values, sorted, otherwise
	ranks    []uint32 // rank of values[i]
	words    int      // the width of the records' bitmaps
}

func (tm *tokenMap) rank(e uint32) uint32 {
	if tm.dense != nil {
		return tm.dense[e]
	}
	i, _ := slices.BinarySearch(tm.values, e)
	return tm.ranks[i]
}

func newTokenMap(threads int, r *sets.Collection, rd *dedup, s *sets.Collection, sd *dedup) *tokenMap {
	var n int64
	var maxV uint32
	type part struct {
		c *sets.Collection
		d *dedup
	}
	parts := []part{{r, rd}}
	if s != nil {
		parts = append(parts, part{s, sd})
	}
	for _, pt := range parts {
		for _, i := range pt.d.keep {
			set := pt.c.Elements[pt.c.Offsets[i]:pt.c.Offsets[i+1]]
			n += int64(len(set))
			maxV = max(maxV, set[len(set)-1])
		}
	}
	records := len(rd.keep)
	if sd != nil {
		records += len(sd.keep)
	}
	tm := &tokenMap{words: bitmapWords(float64(n) / float64(max(1, records)))}
	var freq []uint32 // by value (dense) or by position in values
	if uint64(maxV) < uint64(8*n)+1<<16 {
		// Count per worker, then add up.
		u := int(maxV) + 1
		if n == 0 {
			u = 0
		}
		var mu sync.Mutex
		for _, pt := range parts {
			keep, c := pt.d.keep, pt.c
			chunks(threads, len(keep), n, func(lo, hi int) {
				local := make([]uint32, u)
				for _, i := range keep[lo:hi] {
					for _, e := range c.Elements[c.Offsets[i]:c.Offsets[i+1]] {
						local[e]++
					}
				}
				mu.Lock()
				if freq == nil {
					freq = local
				} else {
					for e, f := range local {
						freq[e] += f
					}
				}
				mu.Unlock()
			})
		}
		if freq == nil {
			freq = []uint32{}
		}
		tm.dense = make([]uint32, len(freq))
	} else {
		// Sparse values: sort them all, count the runs.
		all := make([]uint32, 0, n)
		for _, pt := range parts {
			for _, i := range pt.d.keep {
				all = append(all, pt.c.Elements[pt.c.Offsets[i]:pt.c.Offsets[i+1]]...)
			}
		}
		radix.Sort(all, make([]uint32, len(all)))
		for i := 0; i < len(all); {
			j := i + 1
			for j < len(all) && all[j] == all[i] {
				j++
			}
			tm.values = append(tm.values, all[i])
			freq = append(freq, uint32(j-i))
			i = j
		}
		tm.ranks = make([]uint32, len(freq))
	}
	// Ranks by a counting sort on frequency; values that occur nowhere
	// (dense mode) go last and are never looked up.
	for _, f := range freq {
		tm.maxDF = max(tm.maxDF, f)
	}
	start := make([]uint32, int(tm.maxDF)+2)
	for _, f := range freq {
		if f > 0 {
			start[f+1]++
		}
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	tm.universe = int(start[len(start)-1])
	tm.unique = start[min(2, len(start)-1)]
	out := tm.dense
	if out == nil {
		out = tm.ranks
	}
	for e, f := range freq {
		if f == 0 {
			out[e] = noRecord
			continue
		}
		out[e] = start[f]
		start[f]++
	}
	return tm
}

// side prepares c's distinct records: sorted by size, elements renumbered,
// the first prefix(size) of them sorted.
func (tm *tokenMap) side(threads int, c *sets.Collection, d *dedup, prefix func(size uint32) uint32) *Side {
	k := len(d.keep)
	s := &Side{Sets: c.Len(), Empty: d.empty, Orig: c}
	var maxSize uint32
	for _, i := range d.keep {
		maxSize = max(maxSize, uint32(c.SetLen(int(i))))
	}
	s.MaxSize = maxSize
	// A counting sort of the records by size, stable.
	s.SizeStart = make([]uint32, maxSize+2)
	for _, i := range d.keep {
		s.SizeStart[c.SetLen(int(i))+1]++
	}
	for n := 1; n < len(s.SizeStart); n++ {
		s.SizeStart[n] += s.SizeStart[n-1]
	}
	fill := slices.Clone(s.SizeStart)
	pos := make([]uint32, k) // pos[x]: the record keep[x] becomes
	s.ID = make([]uint32, k)
	for x, i := range d.keep {
		n := c.SetLen(int(i))
		pos[x] = fill[n]
		s.ID[fill[n]] = i
		fill[n]++
	}
	s.Off = make([]uint32, k+1)
	for x := 0; x < k; x++ {
		s.Off[x+1] = s.Off[x] + uint32(c.SetLen(int(s.ID[x])))
	}
	s.Tok = make([]uint32, s.Off[k])
	plen := make([]uint32, maxSize+1)
	for n := range plen {
		plen[n] = prefix(uint32(n))
	}
	// In the caller's order, which reads the sets in sequence.
	w := tm.words
	s.words = w
	s.bits = make([]uint64, k*w)
	chunks(threads, k, int64(len(s.Tok)), func(lo, hi int) {
		tmp := make([]uint32, maxSize)
		for i, id := range d.keep[lo:hi] {
			src := c.Elements[c.Offsets[id]:c.Offsets[id+1]]
			x := pos[lo+i]
			dst := s.Tok[s.Off[x]:s.Off[x+1]]
			if tm.dense != nil {
				for j, e := range src {
					dst[j] = tm.dense[e]
				}
			} else {
				for j, e := range src {
					dst[j] = tm.rank(e)
				}
			}
			setBitmap(s.bits[int(x)*w:int(x+1)*w], dst)
			sortPrefix(dst, plen[len(dst)], tmp)
		}
	})
	s.sortLex(threads, tm.universe, pos)
	if d.dups {
		// Every set's id under its record, in increasing order.
		s.DupOff = make([]uint32, k+1)
		for _, f := range d.first {
			if f != noRecord {
				s.DupOff[pos[f]+1]++
			}
		}
		for x := 0; x < k; x++ {
			s.DupOff[x+1] += s.DupOff[x]
		}
		at := slices.Clone(s.DupOff[:k])
		s.DupIDs = make([]uint32, s.DupOff[k])
		for i, f := range d.first {
			if f != noRecord {
				x := pos[f]
				s.DupIDs[at[x]] = uint32(i)
				at[x]++
			}
		}
	}
	return s
}

// sortLex orders the records of each size lexicographically, as Mann et
// al. do: consecutive probes then share their rarest elements, walk the
// same lists and meet the same candidates, which the caches keep; and
// GroupJoin's groups, records of equal size and prefix, are runs. pos,
// which maps to records, is updated. A radix sort on the size and the
// first lexKeys elements does most of it; runs that tie on those are
// sorted by comparison.
func (s *Side) sortLex(threads, universe int, pos []uint32) {
	k := s.Len()
	const lexKeys = 3
	// The keys: element i of each record plus one, 0 past its end.
	var keys [lexKeys][]uint32
	for i := range keys {
		keys[i] = make([]uint32, k)
	}
	chunks(threads, k, int64(k*lexKeys), func(lo, hi int) {
		for x := lo; x < hi; x++ {
			r := s.Tok[s.Off[x]:s.Off[x+1]]
			for i := range min(len(r), lexKeys) {
				keys[i][x] = r[i] + 1
			}
		}
	})
	// A stable counting sort on each key, least significant first, then
	// on the size: each pass counts and places runs of perm on a thread
	// each.
	perm := make([]uint32, k) // perm[new] = old
	for x := range perm {
		perm[x] = uint32(x)
	}
	tmp := make([]uint32, k)
	parts := 1
	if k >= 1<<15 {
		parts = max(1, threads)
	}
	cut := func(w int) (int, int) { return k * w / parts, k * (w + 1) / parts }
	pass := func(key []uint32, keys int) {
		counts := make([][]uint32, parts)
		chunks(parts, parts, int64(k), func(lo, hi int) {
			for w := lo; w < hi; w++ {
				cnt := make([]uint32, keys)
				a, b := cut(w)
				for _, x := range perm[a:b] {
					cnt[key[x]]++
				}
				counts[w] = cnt
			}
		})
		partStarts(counts, keys)
		chunks(parts, parts, int64(k), func(lo, hi int) {
			for w := lo; w < hi; w++ {
				fill := counts[w]
				a, b := cut(w)
				for _, x := range perm[a:b] {
					v := key[x]
					tmp[fill[v]] = x
					fill[v]++
				}
			}
		})
		perm, tmp = tmp, perm
	}
	for i := lexKeys - 1; i >= 0; i-- {
		pass(keys[i], universe+1)
	}
	size := tmp // free between passes
	tmp = make([]uint32, k)
	chunks(threads, k, int64(k), func(lo, hi int) {
		for x := lo; x < hi; x++ {
			size[x] = s.Off[x+1] - s.Off[x]
		}
	})
	pass(size, int(s.MaxSize)+1)
	// Ties on the size and the first lexKeys elements, by comparison.
	for x := 0; x < k; {
		y := x + 1
		a := perm[x]
		for y < k && s.Off[perm[y]+1]-s.Off[perm[y]] == s.Off[a+1]-s.Off[a] &&
			keys[0][perm[y]] == keys[0][a] && keys[1][perm[y]] == keys[1][a] && keys[2][perm[y]] == keys[2][a] {
			y++
		}
		if y-x > 1 && s.Off[a+1]-s.Off[a] > lexKeys {
			slices.SortFunc(perm[x:y], func(a, b uint32) int {
				return slices.Compare(s.Record(int(a))[lexKeys:], s.Record(int(b))[lexKeys:])
			})
		}
		x = y
	}
	inv := make([]uint32, k)
	id := make([]uint32, k)
	for x, old := range perm {
		inv[old] = uint32(x)
		id[x] = s.ID[old]
	}
	for i := range pos {
		pos[i] = inv[pos[i]]
	}
	s.ID = id
	s.permuteInPlace(threads, perm)
}

// permuteInPlace moves record perm[x] (and its bitmap) to x, where perm
// maps each size's records among themselves: records of one size have
// one length, so they move in place, cycle by cycle, and the offsets stay
// (a second copy of the elements would be as large as the first, and in
// a fresh process the page faults of fresh memory cost more than the
// moves).
func (s *Side) permuteInPlace(threads int, perm []uint32) {
	k := s.Len()
	w := s.words
	done := make([]bool, k)
	// Parts of whole sizes, of about equal elements.
	sizes := len(s.SizeStart) - 1
	parts := max(1, min(threads, sizes))
	if len(s.Tok) < 1<<16 {
		parts = 1
	}
	cuts := []int{0}
	for n := 1; n <= sizes && len(cuts) < parts; n++ {
		if int64(s.Off[s.SizeStart[n]])*int64(parts) >= int64(len(s.Tok))*int64(len(cuts)) {
			cuts = append(cuts, int(s.SizeStart[n]))
		}
	}
	cuts = append(cuts, k)
	chunks(len(cuts)-1, len(cuts)-1, int64(len(s.Tok)), func(lo, hi int) {
		row := make([]uint32, s.MaxSize)
		var bits [8]uint64
		for part := lo; part < hi; part++ {
			for x := cuts[part]; x < cuts[part+1]; x++ {
				if done[x] || int(perm[x]) == x {
					continue
				}
				n := copy(row, s.Record(x))
				copy(bits[:w], s.bitmap(x))
				cur := x
				for {
					next := int(perm[cur])
					done[cur] = true
					if next == x {
						copy(s.Tok[s.Off[cur]:], row[:n])
						copy(s.bitmap(cur), bits[:w])
						break
					}
					copy(s.Tok[s.Off[cur]:s.Off[cur+1]], s.Record(next))
					copy(s.bitmap(cur), s.bitmap(next))
					cur = next
				}
			}
		}
	})
}

// sortPrefix moves the n smallest values of s to its front, sorted; the
// others follow in no particular order. tmp, as long as s, is scratch.
func sortPrefix(s []uint32, n uint32, tmp []uint32) {
	if len(s) <= 2*sortnet.Max || int(n) >= len(s)-len(s)/8 {
		sortSmall(s, tmp)
		return
	}
	if n == 0 {
		return
	}
	selectSmallest(s, int(n), tmp)
	sortSmall(s[:n], tmp)
}

// selectSmallest reorders s so that its n smallest values come first (0 <
// n < len(s)), by quickselect with a median-of-three pivot: linear, and
// quick, on records in no particular order. A record sorted but for its
// smallest values (shifted copies of a long set: the elements that only
// some copies hold are the rarest, renumbered first, and come last) makes
// each pivot the least value of its range but one, and quickselect
// quadratic: 18 s to prepare four shifted copies of 200,000 elements.
// So, as in Musser's introselect, once as many partitions as the length
// has bits have kept more than 3/4 of their range, the range left is
// sorted instead (by radix, in linear time): the partitions that shrink
// the range make a geometric series, the others are at most log n, and
// the worst case is O(n log n). tmp, as long as s, is scratch.
func selectSmallest(s []uint32, n int, tmp []uint32) {
	lo, hi := 0, len(s)-1
	badLeft := bits.Len(uint(len(s)))
	for hi-lo > 16 {
		if badLeft == 0 {
			sortSmall(s[lo:hi+1], tmp[lo:hi+1])
			return
		}
		before := hi - lo
		m := lo + (hi-lo)/2
		a, b, c := s[lo], s[m], s[hi]
		// The median of the three.
		pivot := max(min(a, b), min(max(a, b), c))
		i, j := lo, hi
		for i <= j {
			for s[i] < pivot {
				i++
			}
			for s[j] > pivot {
				j--
			}
			if i <= j {
				s[i], s[j] = s[j], s[i]
				i++
				j--
			}
		}
		// Now s[lo..j] <= pivot <= s[i..hi], and s[j+1..i-1] == pivot.
		switch {
		case n <= j:
			hi = j
		case n >= i:
			lo = i
		default:
			return
		}
		if 4*(hi-lo) > 3*before {
			badLeft--
		}
	}
	// Insertion sort the rest of the range: what remains unsettled.
	for i := lo + 1; i <= hi; i++ {
		v := s[i]
		j := i
		for j > lo && s[j-1] > v {
			s[j] = s[j-1]
			j--
		}
		s[j] = v
	}
}

// sortSmall sorts s, using tmp (as long) as scratch: by sorting networks
// for the short sets that most collections hold (an insertion sort would
// mispredict about once per element), by radix sort for long ones.
func sortSmall(s, tmp []uint32) {
	switch {
	case len(s) <= sortnet.Max:
		sortnet.SortSmall(s)
	case len(s) <= 2*sortnet.Max:
		sortnet.Sort32(s)
	case len(s) > 48:
		radix.Sort(s, tmp)
	default:
		slices.Sort(s)
	}
}

// chunks calls fn on contiguous ranges covering [0, n), on up to threads
// goroutines at once, when the work (about n plus elements) is worth
// spreading.
func chunks(threads, n int, elements int64, fn func(lo, hi int)) {
	if elements+int64(n) < 1<<15 {
		threads = 1
	}
	par.For(n, threads, fn)
}
