package pairs

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/xsect/xsect/internal/par"
	"github.com/xsect/xsect/sets"
)

// fpgrowth is FP-growth restricted to pairs. Transactions, items in
// decreasing order of support, are stored in a prefix tree (the FP-tree)
// with a count per node; the pairs {b, a} with b more frequent than a are
// then counted from a's conditional pattern base: for every node of a, its
// count is added to each item on the path up to the root. With pairs only
// there is no recursion into conditional trees.
//
// The tree is built without hashing children: the transactions are sorted
// lexicographically, after which each one shares with the tree exactly
// its longest common prefix with the previous one. One tree is built per
// worker, on its share of the transactions, in parallel; the counting
// then walks every tree's nodes of a.
type fpgrowth struct{ cpu }

func (fpgrowth) Name() string { return "fpgrowth" }

func (fpgrowth) Estimate(d *Data) (Estimate, error) {
	// The walk is at most the pair occurrences (trees that share no
	// prefix); transactions that share their most frequent items make it
	// shorter: estimated from a sample.
	m := float64(d.Transactions)
	c := d.unitCosts()
	walk := fpWalk(d, fpSample(d))
	sec := (walk*c.fpStep + m*log2(m)*c.fpSort + float64(d.Occurrences)*c.fpNode) / float64(d.Threads)
	// The relabelled transactions, the trees' nodes (parent, item,
	// count, and by item), the transactions kept, each tree's index by
	// item and the path it builds along, the labels, each thread's
	// counters.
	f, parts := int64(d.Frequent()), int64(fpParts(d))
	mem := d.HorizontalBytes() + 4*d.Occurrences + 16*d.Occurrences + 4*int64(d.Transactions) +
		parts*(8*(f+1)+8*int64(maxLength(d))) + 8*f + 8*f*int64(d.Threads) + forItemsBytes(int(f)) + writersBytes(d.Threads)
	return Estimate{Seconds: sec, Memory: mem, Detail: fmt.Sprintf("%d trees of at most %d nodes", d.Threads, d.Occurrences)}, nil
}

// fpSample is the number of transactions fpWalk samples: 8192, or fewer
// long ones, about 2^17 item occurrences in all (a few milliseconds).
func fpSample(d *Data) int {
	avg := float64(d.Occurrences) / float64(max(d.Transactions, 1))
	return max(256, min(1<<13, int((1<<17)/max(avg, 1))))
}

// fpWalk estimates the steps of fpgrowth's counting walk, the sum over the
// nodes of its trees of their depth less one, from at most n of the
// transactions that hold pairs, taken evenly. The walk of each tree's
// share of the sample is counted exactly (its transactions sorted as the
// tree's are, each adds the nodes below its longest common prefix with
// the previous one), and that of half of it: the walk grows as a power of
// the transactions (linearly where they share nothing, slower as they
// share their most frequent items, as a vocabulary grows with a text), and
// the exponent measured between the half and the whole sample carries it
// to the tree's transactions. It is exact when every transaction is
// sampled, and at most the pair occurrences.
func fpWalk(d *Data, n int) float64 {
	tids := make([]int, 0, pairTransactions(d))
	for t, l := range d.Lengths {
		if l >= 2 {
			tids = append(tids, t)
		}
	}
	m := len(tids)
	if m == 0 {
		return 0
	}
	n = min(n, m)
	label := supportLabels(d)
	// The sample, relabelled as Run relabels, in the order of the
	// transactions, so that consecutive runs of it fall in one tree.
	sample := make([][]uint32, n)
	var buf []uint32
	for i := range sample {
		t := tids[int(int64(i)*int64(m)/int64(n))]
		var s []uint32
		if d.prepared {
			s = d.horiz.Set(t)
		} else {
			s = d.tx.Set(t)
			buf = slices.Grow(buf[:0], len(s))
			s = buf[:d.ranks(s, buf[:len(s)])]
		}
		x := make([]uint32, len(s))
		for j, r := range s {
			x[j] = label[r]
		}
		slices.Sort(x)
		sample[i] = x
	}
	parts := fpParts(d)
	walk := 0.0
	for p := range parts {
		tree := sample[p*n/parts : (p+1)*n/parts]
		size := (p+1)*m/parts - p*m/parts // the tree's transactions
		if len(tree) == 0 {
			continue
		}
		half := make([][]uint32, 0, (len(tree)+1)/2)
		for i := 0; i < len(tree); i += 2 {
			half = append(half, tree[i])
		}
		w, wh := trieWalk(tree), trieWalk(half)
		if len(tree) == size || wh == 0 {
			walk += w * float64(size) / float64(len(tree))
			continue
		}
		grow := float64(len(tree)) / float64(len(half))
		alpha := min(max(math.Log(w/wh)/math.Log(grow), 0), 1)
		walk += w * math.Pow(float64(size)/float64(len(tree)), alpha)
	}
	return min(walk, float64(d.PairSteps))
}

// trieWalk returns the walk of a tree of the transactions ts (sorted in
// place): the sum over its nodes of their depth less one.
func trieWalk(ts [][]uint32) float64 {
	slices.SortFunc(ts, slices.Compare)
	walk := 0.0
	for i, s := range ts {
		prev := 0
		if i > 0 {
			p := ts[i-1]
			for prev < len(p) && prev < len(s) && p[prev] == s[prev] {
				prev++
			}
		}
		// The new nodes, at depths prev+1 .. len(s).
		l := len(s)
		walk += float64(l*(l-1)/2 - prev*(prev-1)/2)
	}
	return walk
}

// supportLabels returns the label of every rank in the order FP-growth
// stores items: label 0 the most frequent.
func supportLabels(d *Data) []uint32 {
	byFreq := make([]uint32, d.Frequent()) // label -> rank
	for r := range byFreq {
		byFreq[r] = uint32(r)
	}
	slices.SortStableFunc(byFreq, func(a, b uint32) int { return cmp.Compare(d.Support[b], d.Support[a]) })
	label := make([]uint32, len(byFreq)) // rank -> label
	for l, r := range byFreq {
		label[r] = uint32(l)
	}
	return label
}

// pairTransactions is the number of transactions with two frequent items
// or more: those that hold pairs.
func pairTransactions(d *Data) int {
	n := 0
	for _, l := range d.Lengths {
		if l >= 2 {
			n++
		}
	}
	return n
}

// fpParts is the number of trees Run builds: one per thread, of a
// thousand transactions at least.
func fpParts(d *Data) int { return min(max(d.Threads, 1), max(1, pairTransactions(d)>>10)) }

// maxLength is the most frequent items of a transaction.
func maxLength(d *Data) int {
	n := uint32(0)
	for _, l := range d.Lengths {
		n = max(n, l)
	}
	return int(n)
}

// fpTree is a prefix tree in arrays; node 0 is the root.
type fpTree struct {
	parent []int32
	item   []uint32
	count  []uint32
	// nodes[start[a]:start[a+1]] are the nodes of item a.
	start []int32
	nodes []int32
}

func buildTree(h *sets.Collection, tids []uint32, f int) *fpTree {
	slices.SortFunc(tids, func(x, y uint32) int { return slices.Compare(h.Set(int(x)), h.Set(int(y))) })
	nodes := 1
	for _, tid := range tids {
		nodes += h.SetLen(int(tid))
	}
	t := &fpTree{parent: make([]int32, 1, nodes), item: make([]uint32, 1, nodes), count: make([]uint32, 1, nodes)}
	t.parent[0] = -1
	var path []int32 // nodes of the previous transaction, by depth
	var prev []uint32
	for _, tid := range tids {
		s := h.Set(int(tid))
		l := 0
		for l < len(s) && l < len(prev) && s[l] == prev[l] {
			l++
		}
		path = path[:l]
		for _, n := range path {
			t.count[n]++
		}
		for _, it := range s[l:] {
			p := int32(0)
			if len(path) > 0 {
				p = path[len(path)-1]
			}
			t.parent = append(t.parent, p)
			t.item = append(t.item, it)
			t.count = append(t.count, 1)
			path = append(path, int32(len(t.parent)-1))
		}
		prev = s
	}
	// Group the nodes by item (counting sort).
	t.start = make([]int32, f+1)
	for _, it := range t.item[1:] {
		t.start[it+1]++
	}
	for a := range f {
		t.start[a+1] += t.start[a]
	}
	t.nodes = make([]int32, len(t.item)-1)
	at := slices.Clone(t.start[:f])
	for n := 1; n < len(t.item); n++ {
		it := t.item[n]
		t.nodes[at[it]] = int32(n)
		at[it]++
	}
	return t
}

// relabel returns the transactions of h with every rank r replaced by
// label[r], each transaction sorted.
func relabel(h *sets.Collection, label []uint32, threads int) *sets.Collection {
	out := &sets.Collection{Offsets: h.Offsets, Elements: make([]uint32, len(h.Elements))}
	m := h.Len()
	workers := min(max(threads, 1), max(1, m>>10))
	par.Do(workers, func(w int) {
		for t := w * m / workers; t < (w+1)*m/workers; t++ {
			dst := out.Elements[h.Offsets[t]:h.Offsets[t+1]]
			for i, r := range h.Set(t) {
				dst[i] = label[r]
			}
			slices.Sort(dst)
		}
	})
	return out
}

func (fpgrowth) Run(ctx context.Context, d *Data, out *Output) error {
	f := d.Frequent()
	// FP-growth orders items by decreasing support: relabel the ranks
	// (label 0 the most frequent) and sort each transaction by label.
	byFreq := make([]uint32, f) // label -> rank
	for r := range byFreq {
		byFreq[r] = uint32(r)
	}
	slices.SortStableFunc(byFreq, func(a, b uint32) int { return cmp.Compare(d.Support[b], d.Support[a]) })
	label := make([]uint32, f) // rank -> label
	for l, r := range byFreq {
		label[r] = uint32(l)
	}
	h := relabel(d.Horizontal(), label, d.Threads)
	// Transactions with fewer than two frequent items hold no pair.
	tids := make([]uint32, 0, pairTransactions(d))
	for t, n := range d.Lengths {
		if n >= 2 {
			tids = append(tids, uint32(t))
		}
	}
	parts := fpParts(d)
	trees := make([]*fpTree, parts)
	var wg sync.WaitGroup
	for p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			trees[p] = buildTree(h, tids[p*len(tids)/parts:(p+1)*len(tids)/parts], f)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	writers := make([]*Writer, d.Threads)
	counters := make([][]uint32, d.Threads)
	touched := make([][]uint32, d.Threads)
	for i := range writers {
		writers[i] = out.Writer()
	}
	need := uint32(d.MinSupport)
	// Label a's nodes lie at depth up to a.
	weight := func(a int) int64 { return int64(d.Support[byFreq[a]]) * int64(a) / int64(max(f, 1)) * 16 }
	err := forItems(ctx, d.Threads, f, weight, out, "pairs", func(w, a int) {
		cnt := counters[w]
		if cnt == nil {
			cnt = make([]uint32, f)
			counters[w] = cnt
		}
		tl := touched[w][:0]
		for _, t := range trees {
			parent, item := t.parent, t.item
			for _, n := range t.nodes[t.start[a]:t.start[a+1]] {
				c := t.count[n]
				for p := parent[n]; p > 0; p = parent[p] {
					it := item[p]
					if cnt[it] == 0 {
						tl = append(tl, it)
					}
					cnt[it] += c
				}
			}
		}
		// Ancestors are more frequent: labels below a.
		wr := writers[w]
		for _, b := range tl {
			if c := cnt[b]; c >= need {
				wr.Add(byFreq[b], byFreq[a], c)
			}
			cnt[b] = 0
		}
		touched[w] = tl
	})
	for _, wr := range writers {
		wr.Close()
	}
	return err
}
