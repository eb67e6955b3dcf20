package gpusimjoin

import (
	"fmt"
	"math"
	"math/bits"
	"time"

	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/simjoin"
)

// kernel is one of the paper's verification alternatives.
type kernel int

const (
	kThread kernel = iota // A: a thread per probing record
	kBlock                // B: a block per probing record
	kPair                 // C: a tile of threads per pair, Intersect Path
)

var kernelNames = [...]string{"thread", "block", "pair"}

func (k kernel) String() string { return kernelNames[k] }

// entry is the kernel's function in verify.cu.
func (k kernel) entry() string { return "verify_" + kernelNames[k] }

func kernelNamed(name string) (kernel, bool) {
	for k, n := range kernelNames {
		if n == name {
			return kernel(k), true
		}
	}
	return 0, false
}

// The cost model (seconds on the device host, gpurt.ReferenceH100 for the
// device; docs/SIMJOIN.md has the runs it was fitted to; opening the GPU
// and its teardown at exit are gpurt.OpenCost and CloseCost): a run's fixed
// costs (the records' upload, the post goroutines, the last chunk's round
// trip); the bus through pinned staging; the CPU's cost of handing a pair
// on (per core: the filter's batch, the chunk; BenchmarkFilterOnly) and
// of verifying one on the CPU (per pair, per element of the remainders
// read), which the GPU saves.
const (
	runSetup   = 3e-3
	launchCost = 20e-6
	uploadRate = 11e9
	emitNS     = 10.0
	cpuStepNS  = 1.0
	cpuPairNS  = 20.0
	// bitmapNS and bitmapWordNS are the filters' check of two bitmaps,
	// per pair past the bound and per core, and per word of the bitmaps
	// (read at random: cache misses), which a run without the bitmap
	// filter saves (BenchmarkFilterOnly on the H100 host: tags-math-sx's
	// 1-word bitmaps, gcide's 8 words).
	bitmapNS     = 10.0
	bitmapWordNS = 2.5
)

// mergeRate and pairRate are each kernel's elements merged and pairs
// verified per second on the reference H100, fitted to its runs on
// tags-math-sx (14 million pairs of 7 elements) and gcide (1.5 million of
// 59) at Jaccard 0.5.
var (
	mergeRate = [...]float64{kThread: 13e9, kBlock: 86e9, kPair: 120e9}
	pairRate  = [...]float64{kThread: 0.5e9, kBlock: 26e9, kPair: 10e9}
)

// Chunk sizes: at least a filter's batch, at most what keeps the host's
// chunks and the device's slots a few hundred MB; about a thirtieth of the
// pairs, so that verification starts early and the last chunk, which
// nothing hides, is short.
const (
	minChunk  = 1 << 14
	maxChunk  = 1 << 21
	perChunk  = 32
	numChunks = 6 // host chunks: one filling, others waiting or uploading
	numSlots  = 2 // device slots: one verified while the next is uploaded
	// endgame is the share of the filters' work left (1/32: the last
	// two tasks of each worker) from which chunks are sealed at tailCands
	// candidates, a sixteenth of a chunk from 1024 to 16384.
	endgame = 1.0 / 32
	// tailTrip is what a last chunk's round trip costs, in seconds: its
	// upload, launch, the count and the results back, the host's wait
	// (0.2 to 0.6 ms of device work and 0.3 to 2 ms of wall after the
	// filters, measured before the CPU took the tail). The CPU verifies
	// the last chunk instead where it is done sooner. No chunk is sealed
	// small once the filters' predicted end is sealTrip away: it would
	// still be on the device when they are done.
	tailTrip = 500e-6
	sealTrip = 300 * time.Microsecond
	// cpuMergeNS and cpuTailNS are the CPU's cost of verifying a pair of
	// the tail, per element of both sets (package intersect's kernels
	// over small sets) and per pair (finding both sets, the call, the
	// report: 150 to 180 ns measured on the H100 host's tails).
	cpuMergeNS = 1.0
	cpuTailNS  = 150.0
	// maxShared is the most elements of a probe that the block kernel
	// keeps in shared memory (8 KB: many blocks fit on a multiprocessor).
	maxShared = 2048
)

// runPlan is how a run verifies: the kernel, its shapes, the chunks, and
// the prediction.
type runPlan struct {
	gpus         []int // the GPUs the run takes (gpurt.ParseGPUs' form)
	filter       simjoin.Filter
	filterForced bool // by the engine's tuning
	kernel       kernel
	forced       bool
	tile         int // pair: threads per pair
	capCands     int
	capProbes    int
	tailCands    int // chunks' candidates in the endgame
	cpuTail      int // the CPU's share of the chunks left at the end, in candidates
	// cpuNS and devNS are the prices of a pair left at the end, in
	// nanoseconds: on the CPU (wall, on every core) and on the devices.
	cpuNS, devNS float64
	shareOnly    bool // the CPU's share forced (a test's): it takes no more
	shCap        int  // block: probe elements kept in shared memory

	pairs, avgLen, perProbe float64 // predicted
	seconds                 float64
	spread                  gpuSpread
	hostChunks              int // numChunks, and one more per further owner
	filterSec, gpuSec       float64
	hostMemory, devMemory   int64
}

// plan chooses how to verify the candidates of w on the device info,
// spread over sp: every owner verifies chunks of the same plan, and the
// devices' time is divided by the distinct GPUs (owners of one GPU share
// it).
func plan(p *simjoin.Problem, w simjoin.Work, info gpurt.Info, sp gpuSpread, tu tuning) *runPlan {
	pl := &runPlan{pairs: w.Pairs, spread: sp, hostChunks: numChunks + max(sp.owners, 1) - 1}
	if w.Pairs > 0 {
		pl.avgLen = w.Elements / w.Pairs
	}
	if w.Probes > 0 {
		pl.perProbe = w.Pairs / float64(w.Probes)
	}
	if k, ok := kernelNamed(p.GPUKernel); ok {
		pl.kernel, pl.forced = k, true
	} else {
		pl.kernel = choose(pl.avgLen, pl.perProbe)
	}
	// About 16 elements of the merge per thread of a pair's tile.
	pl.tile = clampPow2(int(pl.avgLen/16), 4, 256)
	pl.capCands = clampPow2(int(w.Pairs/perChunk), minChunk, maxChunk)
	pl.capProbes = pl.capCands
	if tu.chunkLimit > 0 {
		pl.capCands, pl.capProbes = tu.chunkLimit, max(1, tu.chunkLimit/3)
	}
	if tu.tile > 0 {
		pl.tile = tu.tile
	}
	threads := float64(max(p.Threads, 1))
	pl.tailCands = min(pl.capCands, clampPow2(pl.capCands/16, 1024, 16384))
	// The CPU verifies the chunks left at the end (the device's chunks
	// not taken yet, the last one) that it does in less than a round trip
	// to the device, on every core, and more where the device would still
	// be busy with the rest (builder.split).
	pl.cpuNS = (cpuTailNS + pl.avgLen*cpuMergeNS) / threads
	pl.cpuTail = max(1, int(tailTrip*1e9/pl.cpuNS))
	switch {
	case tu.cpuTail > 0:
		pl.cpuTail, pl.shareOnly = tu.cpuTail, true
	case tu.cpuTail < 0:
		pl.cpuTail = 0
	}
	pl.shCap = min(int(p.S.MaxSize), maxShared)
	pl.hostMemory = w.Memory + int64(pl.hostChunks)*16*int64(pl.capCands) + 8*int64(p.R.Len()+p.S.Len())
	pl.devMemory = recordBytes(p.R)
	if !p.Self {
		pl.devMemory += recordBytes(p.S)
	}
	pl.devMemory += numSlots * slotBytes(pl.capProbes, pl.capCands)

	speed := info.SpeedOver(gpurt.ReferenceH100())
	// Filtering alone: the CPU engine's time without its verification
	// (and without the bitmap checks it leaves out), plus handing the
	// pairs on.
	check := bitmapNS + bitmapWordNS*float64(w.BitmapWords)
	saved := (w.Steps*cpuStepNS + w.Verified*cpuPairNS + w.Unchecked*check) * 1e-9 / threads
	pl.filterSec = max(w.Seconds-saved, w.Seconds/4) + w.Pairs*emitNS*1e-9/threads
	chunks := math.Ceil(w.Pairs / float64(pl.capCands))
	pl.gpuSec = (w.Elements/mergeRate[pl.kernel]+w.Pairs/pairRate[pl.kernel])/speed.Compute +
		w.Pairs*16/uploadRate + chunks*launchCost
	up := float64(pl.devMemory-numSlots*slotBytes(pl.capProbes, pl.capCands)) / uploadRate
	// The device opens and takes the records while the filters start;
	// the chunks left at the end, about the last one (tailCands
	// candidates or fewer), are verified after them: split between the
	// CPU and the device as builder.split does (the CPU's share, or where
	// both end together, whichever is more), else on the device.
	devices := float64(max(1, min(sp.devices, int(chunks))))
	if w.Pairs > 0 {
		pl.devNS = pl.gpuSec * 1e9 / w.Pairs / devices
	}
	lastPairs := min(float64(pl.tailCands), w.Pairs)
	onCPU := min(lastPairs, max(float64(pl.cpuTail), (float64(sealTrip)+lastPairs*pl.devNS)/(pl.cpuNS+pl.devNS)))
	last := onCPU * pl.cpuNS * 1e-9
	if pl.cpuTail <= 0 {
		last = tailTrip + pl.gpuSec*lastPairs/max(w.Pairs, 1)
	}
	pl.seconds = runSetup + max(pl.filterSec, sp.wait+up+pl.gpuSec/devices) + last + gpurt.CloseLeft().Seconds()
	return pl
}

// choose picks the alternative from the records' lengths and the
// candidates per probe: the faster of the block and pair kernels by the
// rates above (the paper's finding, section 5.4.1: a block per probe for
// short records, the cooperative pair kernel for long ones), or a thread
// per probe where probes have about one candidate, too few to keep a
// block's threads busy.
func choose(avgLen, perProbe float64) kernel {
	if perProbe < 1.5 {
		return kThread
	}
	cost := func(k kernel) float64 { return avgLen/mergeRate[k] + 1/pairRate[k] }
	if cost(kPair) < cost(kBlock) {
		return kPair
	}
	return kBlock
}

// detail describes the plan for Explain.
func (pl *runPlan) detail(info gpurt.Info) string {
	how := "chosen"
	if pl.forced {
		how = "forced"
	}
	shape := ""
	switch pl.kernel {
	case kBlock:
		shape = fmt.Sprintf(", blocks sized by candidates per probe, probes up to %d elements in shared memory", pl.shCap)
	case kPair:
		shape = fmt.Sprintf(", %d threads per pair", pl.tile)
	}
	bm := "with the bitmap filter"
	if pl.filter.NoBitmap {
		bm = "without the bitmap filter"
	}
	if pl.filterForced {
		bm += " (forced)"
	}
	d := fmt.Sprintf("%s; kernel %s (%s: %.3g pairs of %.0f elements, %.2g per probe%s), chunks of %d; filtering %.3g s, %s %.3g s, overlapped; %s of device memory",
		bm, pl.kernel, how, pl.pairs, pl.avgLen, pl.perProbe, shape, pl.capCands, pl.filterSec, info.Name, pl.gpuSec, gpurt.FormatBytes(uint64(pl.devMemory)))
	if sp := pl.spread; sp.owners > 1 {
		d += fmt.Sprintf(" per owner; chunks spread over %d owners on %d GPUs (device time divided by %d)", sp.owners, sp.devices, sp.devices)
	}
	return d
}

// recordBytes is a side's device memory: its caller's elements and each
// record's start and length.
func recordBytes(s *simjoin.Side) int64 {
	return 4*int64(len(s.Orig.Elements)) + 8*int64(s.Len())
}

// slotBytes is one device slot: a chunk and its results (three words per
// candidate at most) and the count.
func slotBytes(capProbes, capCands int) int64 {
	return 4*int64(2*capProbes+1) + 4*2*int64(capCands) + 12*int64(capCands) + 4
}

// clampPow2 returns the power of two nearest below n, within [lo, hi].
func clampPow2(n, lo, hi int) int {
	if n < lo {
		return lo
	}
	if n > hi {
		return hi
	}
	return 1 << (bits.Len(uint(n)) - 1)
}

// blockFor returns the block kernel's block size for a chunk: its
// candidates per probe, as a power of two from a warp to 256.
func blockFor(np, nc int) int {
	return clampPow2(nc/max(np, 1), 32, 256)
}
