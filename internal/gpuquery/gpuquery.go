// Package gpuquery answers batches of conjunctive queries on an NVIDIA GPU,
// after Wu et al., "A Batched GPU Algorithm for Set Intersection": the
// posting lists, a term table and bitmaps of the longer lists resident on
// the device, uploaded once per index; a batch's queries sent as they are
// (their terms' ids, through pinned memory) and prepared there, a thread
// per query looking its terms up, sorting them by list length and
// dropping duplicates, the shortest list cut into slices, each a job
// semi-sorted into a bucket by its length; one launch per bucket, a group
// of threads per job (a warp for short slices, a block of up to 512
// threads for long ones) looking each element of the slice up in the
// query's other lists, then a scan and a compaction; the counts and the
// ids kept copied back. A query of more than 32 terms, or one whose ids
// find no room in a batch's buffers, is answered on the host by the CPU
// engine. docs/QUERY.md has the design and the measurements.
//
// It registers itself with package query (internal/query) as the "svs" engine on the GPU.
package gpuquery

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/invindex"
	"github.com/xsect/xsect/internal/query"
)

func init() { query.Register(gpuEngine{}) }

// The cost model, fitted to the pipelined engine on the H100 host
// (docs/QUERY.md, "Cost model"; opening the GPU and its teardown at exit
// are gpurt.OpenCost and CloseCost): the upload rate of the lists (from
// pageable memory through the stager); then a search's fixed cost (its first batch's stages, which
// nothing overlaps), the host's cost per query and thread, and how many
// CPU threads' worth of list work the device does. The last three were
// fitted to the median passes of searches of 31,432, 26,801 and 1,005,824
// queries (counting) and validated on others.
const (
	uploadRate    = 10e9
	searchSeconds = 416e-6
	hostQueryNS   = 12
	deviceSpeed   = 120
	// nominalQueries is the workload assumed when the queries are not
	// known in advance: a service that answers many.
	nominalQueries = 1e6
	nominalQueryNS = 1000
)

type gpuEngine struct{}

func (gpuEngine) Name() string      { return "svs" }
func (gpuEngine) Kind() engine.Kind { return engine.GPU }

// Device checks that a GPU may be present, without opening it.
func (gpuEngine) Device() (engine.Device, error) {
	if err := gpurt.Present(); err != nil {
		return engine.Device{Kind: engine.GPU, Name: "no GPU"}, engine.Unavailable(engine.Cannot("%v", err))
	}
	info := gpurt.FirstInfo()
	return engine.Device{Kind: engine.GPU, Name: info.Name, Memory: int64(info.Memory), Parallelism: info.SMs}, nil
}

// residentBytes is the device memory an index takes.
func residentBytes(ix *invindex.Index) int64 {
	return 4*int64(len(ix.Postings)) + termBytes*int64(ix.Terms()) +
		8*int64(ix.BitmapWords())*int64(len(gpuDense(ix)))
}

// Estimate divides the device's work over the distinct GPUs of w.GPUs
// (owners of one GPU share it) and the host's over the threads; the
// memory is what the most shared GPU holds: the index and the runners'
// batch buffers at most, for each of its owners. Where w.GPUs leaves the
// GPUs to the planner and the queries are known (a command's sample), it
// weighs the first GPU alone against every GPU (gpurt.WeighOnce) and Open
// takes the lower's; unknown queries (a server's stream, which has no
// end) take every GPU.
func (gpuEngine) Estimate(w *query.Workload) (engine.Estimate, error) {
	if w.GPUs == nil && len(w.Sample) == 0 {
		return estimateOn(w, nil), nil
	}
	sp, err := gpurt.WeighOnce(w, weighKey, w.GPUs, func(list []int) (engine.Estimate, float64, error) {
		est := estimateOn(w, list)
		return est, est.Seconds, nil
	})
	if err != nil {
		return engine.Estimate{}, err
	}
	est := sp.Plan
	est.Detail = sp.Noted(est.Detail)
	return est, nil
}

// weighKey is the key of the engine's weighing of the GPUs.
const weighKey = "gpuquery.svs"

// estimateOn estimates w on the GPUs of list (nil: every GPU), the wait
// for them to open included.
func estimateOn(w *query.Workload, list []int) engine.Estimate {
	threads := query.Threads(w.Threads)
	gpus := gpurt.GuessDevices(list)
	share := int64(mostOwners(list))
	resident := residentBytes(w.Index)
	mem := share * (resident + runnersPerOwner*numSlots*int64(batchBytes))
	sec := gpurt.StartupLeftOn(list).Seconds()
	// The GPUs upload in parallel, the owners of one GPU in turn.
	sec += float64(share*resident) / uploadRate
	queries := float64(w.Queries)
	work := query.SampleCost(w)
	if len(w.Sample) == 0 {
		queries, work = nominalQueries, nominalQueries*nominalQueryNS
	}
	sec += searchSeconds + queries*hostQueryNS*1e-9/float64(threads) + work*1e-9/deviceSpeed/float64(gpus)
	on := "1 GPU"
	if gpus > 1 {
		on = fmt.Sprintf("%d GPUs", gpus)
	}
	est := engine.Estimate{Seconds: sec, Memory: mem,
		Detail: fmt.Sprintf("%s of posting lists resident; a group of threads per query, semi-sorted by shortest list; over %s", engine.Bytes(resident), on)}
	if w.GPUs == nil && len(w.Sample) > 0 {
		est.DeviceName = gpurt.WeighedName(gpus, gpurt.FirstInfo()) // weighed: which GPUs the run takes
	}
	return est
}

// mostOwners returns the most owners that list (from gpurt.ParseGPUs)
// gives one GPU: 1 for nil, every GPU once.
func mostOwners(list []int) int {
	most := 1
	n := map[int]int{}
	for _, o := range list {
		n[o]++
		most = max(most, n[o])
	}
	return most
}

// Open opens the GPUs of w.GPUs (for nil, those Estimate chose, or every
// GPU), uploads the index to each owner and readies runnersPerOwner
// runners on each.
func (gpuEngine) Open(w *query.Workload) (query.Runner, error) {
	set, err := gpurt.OpenSet(gpurt.RunGPUs(w, weighKey, w.GPUs))
	if err != nil {
		return nil, engine.Unavailable(err)
	}
	return openOwners(set, w.Index, w.Threads, runnersPerOwner)
}

// resident is an index's lists on a device, shared by the runners on it:
// the postings, a term table (each term's list and bitmap, deviceTerm),
// and bitmaps of the device's own, for many more lists than the index
// file has: on the device a probe of a bitmap costs one load where a
// binary search costs a dozen dependent ones.
type resident struct {
	postings, table, gbitmaps gpurt.Buffer
	gdense                    int // lists with a bitmap on the device
	refs                      int
}

// The device's own bitmaps: every list of at least 1/gpuDenseRatio of the
// documents (and at least gpuDenseMin long) gets one, the longest first,
// within gpuBitmapBytes.
const (
	gpuDenseRatio  = 1024
	gpuDenseMin    = 32
	gpuBitmapBytes = 1 << 30
)

// gpuDense returns the terms that get a bitmap on the device.
func gpuDense(ix *invindex.Index) []uint32 {
	minLen := max(gpuDenseMin, (ix.NumDocs+gpuDenseRatio-1)/gpuDenseRatio)
	var terms []uint32
	for t := range ix.Terms() {
		if ix.Len(uint32(t)) >= minLen {
			terms = append(terms, uint32(t))
		}
	}
	each := 8 * ix.BitmapWords()
	if each > 0 && len(terms)*each > gpuBitmapBytes {
		slices.SortStableFunc(terms, func(a, b uint32) int { return ix.Len(b) - ix.Len(a) })
		terms = terms[:gpuBitmapBytes/each]
		slices.Sort(terms)
	}
	return terms
}

// residents holds each device's resident indexes.
var residents gpurt.PerDevice[*deviceIndexes]

// deviceIndexes is the indexes resident on one device.
type deviceIndexes struct {
	mu sync.Mutex
	m  map[*invindex.Index]*resident
}

func indexesOn(dev *gpurt.Device) *deviceIndexes {
	return residents.Get(dev, func() *deviceIndexes { return &deviceIndexes{m: map[*invindex.Index]*resident{}} })
}

// acquire returns ix's lists on dev, uploading them the first time.
func acquire(dev *gpurt.Device, ix *invindex.Index) (*resident, error) {
	on := indexesOn(dev)
	on.mu.Lock()
	defer on.mu.Unlock()
	if r := on.m[ix]; r != nil {
		r.refs++
		return r, nil
	}
	r := &resident{refs: 1}
	// The owners of one GPU share its link to the host: one uploads at a
	// time, so that the first starts answering while the others upload.
	link := dev.UploadLock()
	link.Lock()
	defer link.Unlock()
	dense := gpuDense(ix)
	r.gdense = len(dense)
	words := ix.BitmapWords()
	err := dev.Do(func(c *gpurt.Ctx) error {
		var err error
		free := func() {
			c.Free(r.postings)
			c.Free(r.table)
			c.Free(r.gbitmaps)
		}
		// Never a zero-sized buffer: kernels take the pointers.
		for _, b := range []struct {
			buf *gpurt.Buffer
			n   int
		}{{&r.postings, 4 * len(ix.Postings)}, {&r.table, termBytes * ix.Terms()}, {&r.gbitmaps, 8 * words * len(dense)}} {
			if *b.buf, err = c.Alloc(max(b.n, 16)); err != nil {
				free()
				return err
			}
		}
		table := make([]deviceTerm, ix.Terms())
		for t := range table {
			table[t] = deviceTerm{off: ix.Offsets[t], len: uint32(ix.Len(uint32(t))), slot: -1}
		}
		for s, t := range dense {
			table[t].slot = int32(s)
		}
		// The lists may be a file mapping: pageable memory, staged
		// through pinned slots.
		st := gpurt.NewStager(4, 8<<20)
		defer st.Free(c)
		up := st.Uploads(nil)
		var err1, err2 error
		if len(ix.Postings) > 0 {
			err1 = up.Add(r.postings.Slice(0, 4*len(ix.Postings)), gpurt.Bytes(ix.Postings))
		}
		if len(table) > 0 {
			err2 = up.Add(r.table.Slice(0, termBytes*len(table)), unsafe.Slice((*byte)(unsafe.Pointer(&table[0])), termBytes*len(table)))
		}
		if err := errors.Join(err1, err2); err != nil {
			free()
			return err
		}
		if err := up.Flush(c); err != nil {
			free()
			return err
		}
		// The device's bitmaps, built here a few at a time.
		const group = 64
		buf := make([]uint64, group*words)
		for lo := 0; lo < len(dense); lo += group {
			hi := min(lo+group, len(dense))
			clear(buf)
			for s, t := range dense[lo:hi] {
				bm := buf[s*words : (s+1)*words]
				for _, d := range ix.List(t) {
					bm[d>>6] |= 1 << (d & 63)
				}
			}
			n := 8 * words * (hi - lo)
			if err := st.Upload(c, nil, r.gbitmaps.Slice(8*words*lo, n), gpurt.Bytes(buf[:words*(hi-lo)])); err != nil {
				free()
				return err
			}
		}
		return c.Synchronize()
	})
	if err != nil {
		return nil, fmt.Errorf("query: uploading the index to the GPU: %w", err)
	}
	on.m[ix] = r
	return r, nil
}

// release drops one reference to ix's lists on dev, freeing them after
// the last.
func release(dev *gpurt.Device, ix *invindex.Index) error {
	on := indexesOn(dev)
	on.mu.Lock()
	defer on.mu.Unlock()
	r := on.m[ix]
	if r == nil {
		return nil
	}
	if r.refs--; r.refs > 0 {
		return nil
	}
	delete(on.m, ix)
	return dev.Do(func(c *gpurt.Ctx) error {
		if err := c.Synchronize(); err != nil {
			return err
		}
		return errors.Join(c.Free(r.postings), c.Free(r.table), c.Free(r.gbitmaps))
	})
}
