package gpubatmap

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/xsect/xsect/internal/engine"

	"github.com/xsect/xsect/batmap"
	"github.com/xsect/xsect/internal/allpairs"
	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/pairs"
)

func init() {
	pairs.Register(pairsEngine{})
	allpairs.Register(allpairsEngine{})
}

// The cost model, measured on the H100 host (docs/BATMAP.md; the device is
// gpurt.ReferenceH100; opening the GPU and its teardown at exit are
// gpurt.OpenCost and CloseCost): 32-bit word pairs the kernel compares per second (tile padding
// included; ALU-bound, so other devices scale it by their SMs × clock), the
// fixed costs of a run and a batch, the upload rate (the bus, which the
// driver does not describe), and the CPU's cost of inserting one element
// into a batmap (per thread, with the tidlists built on the way: 70 to 100
// ns on the H100 host's 16 cores).
const (
	wordPairRate = 3.5e12
	runSetup     = 3e-3
	batchSetup   = 50e-6
	uploadRate   = 15e9
	insertNS     = 80
	// cpuWordPairNS is about what the CPU's AVX-512 kernel takes per word
	// pair and thread: past gpurt.OpenCost of such work, the allpairs
	// engine's estimates start opening the GPU.
	cpuWordPairNS = 0.035
)

// estimated is estimate's prediction of a run.
type estimated struct {
	sec    float64 // seconds
	memory int64   // device bytes
	detail string  // a description
	gpus   []int   // the GPUs the run takes (gpurt.Spread.GPUs)
	on     string  // and their description, where weighed
}

// estimate predicts a run over sets of the given sizes with layout l:
// seconds (the CPU's building on threads while the GPUs open, whichever
// takes longer, then the devices' work, and the cost of closing the GPU
// unless it is open already), the device memory, and a description.
// elements is the sum of the sizes. Where gpus leaves the GPUs to the
// planner (nil), the run is weighed on the first GPU alone and on every
// GPU, once per problem p and layout cfg (gpurt.WeighOnce; Run takes the
// same GPUs, gpurt.RunGPUs). With warm, when the comparisons alone would keep the
// CPU busy longer than opening the GPU takes, it starts opening the GPUs
// the estimates plan on (gpurt.PlanningGPUs), so that they are ready by
// the time the planner has chosen and the batmaps are built.
//
// The comparisons, spread over devices GPUs, take 1/devices of the time;
// the rest (opening, building, uploading everything to every GPU) does not
// shrink.
func estimate(p gpurt.Memoizer, cfg batmap.Config, l *batmap.Layout, sizes []int, elements int64, threads int, gpus []int, m mode, warm bool) (estimated, error) {
	if err := gpurt.Present(); err != nil {
		return estimated{}, err
	}
	info := gpurt.FirstInfo()
	widths := make([]int, len(sizes))
	maxN := 0
	for i, n := range sizes {
		widths[i] = l.Words(n)
		maxN = max(maxN, n)
	}
	slices.Sort(widths)
	offsets := make([]uint64, len(widths)+1)
	for i, w := range widths {
		offsets[i+1] = offsets[i] + uint64(w)
	}
	pl, err := newPlan(planInput{offsets: offsets, maxSize: maxN}, m, maxBatchEntries, int64(info.Memory)-reserve)
	if err != nil {
		return estimated{}, err
	}
	// The batmaps are built while the GPUs open. Closing them counts until
	// one is being opened; then it is paid whatever runs.
	build := float64(elements) * insertNS * 1e-9 / float64(max(threads, 1))
	rate := wordPairRate * info.SpeedOver(gpurt.ReferenceH100()).Compute
	sp, _ := gpurt.WeighOnce(p, weighKey(cfg), gpus, func(list []int) (estimated, float64, error) {
		devices := max(gpurt.GuessDevices(list), 1)
		sec := max(gpurt.SetLeft(list).Seconds(), build) + gpurt.CloseLeft().Seconds()
		sec += runSetup + float64(4*pl.words)/uploadRate + (pl.wordPairs/rate+batchSetup*float64(len(pl.batches)))/float64(devices)
		detail := fmt.Sprintf("%s; %d batmaps in %d groups, %d tiles in %d batches, %.3g word pairs on %s",
			l, len(sizes), len(pl.groups), len(pl.tiles), len(pl.batches), pl.wordPairs, info.Name)
		if devices > 1 {
			detail += fmt.Sprintf(", spread over %d GPUs", devices)
		}
		on := gpurt.WeighedName(devices, info) // weighed: the first GPU, or all
		return estimated{sec: sec, memory: pl.memory(), detail: detail, on: on}, sec, nil
	})
	e := sp.Plan
	e.gpus = sp.GPUs
	e.detail = sp.Noted(e.detail)
	if sp.Note == "" {
		e.on = "" // nothing weighed: the device describes it
	}
	if warm && pl.wordPairs*cpuWordPairNS*1e-9/float64(max(threads, 1)) > gpurt.OpenCost.Seconds() {
		// The GPUs the estimates plan on, not yet the others: another
		// engine may well be chosen, and a context being created on one
		// GPU holds up the work of the others (docs/PERFORMANCE.md, runs
		// E to I). Run opens the rest.
		gpurt.PrewarmGPUs(gpurt.PlanningGPUs(e.gpus))
	}
	return e, nil
}

// weighKey names an engine laid out by cfg in a problem's memo
// (gpurt.WeighOnce): tests force configurations.
func weighKey(cfg batmap.Config) string { return fmt.Sprintf("gpubatmap %+v", cfg) }

// String describes the figures in one line, then the owners' shares.
func (s *Stats) String() string {
	str := fmt.Sprintf("%s: %d batches, %d tiles, %.3g word pairs, %d entries back, upload %.1f ms, kernels %.1f ms (device), run %.1f ms, %s of device memory",
		s.Kernel, s.Batches, s.Tiles, s.WordPairs, s.Entries, ms(s.Upload), ms(s.KernelDev), ms(s.Total), gpurt.FormatBytes(uint64(s.Memory)))
	if s.GPUs != "" {
		str += fmt.Sprintf("\ngpu: on %s: %s", s.GPUs, s.Owners.Describe("batches"))
	}
	return str
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }

// ------------------------------------------------------------ pairs

// pairsEngine mines frequent pairs with BATMAP on the GPU: one batmap per
// frequent item's tidlist, built on the CPU, all pairs compared on the
// device, the frequent ones compacted there.
type pairsEngine struct {
	cfg batmap.Config // the layout; tests force insertion failures and entry widths
}

func (pairsEngine) Name() string { return "batmap" }

func (pairsEngine) Kind() engine.Kind { return engine.GPU }

// Device checks only that a GPU is present: the device is opened when the
// engine runs, not while the planner compares estimates.
func (pairsEngine) Device() (engine.Device, error) {
	if err := gpurt.Present(); err != nil {
		return engine.Device{Kind: engine.GPU, Name: "no GPU"}, engine.Cannot("%v", err)
	}
	return engine.Device{Kind: engine.GPU, Name: "GPU (opened to run)"}, nil
}

func (e pairsEngine) Estimate(d *pairs.Data) (pairs.Estimate, error) {
	l, sizes, err := d.BatmapLayout(e.cfg)
	if err != nil {
		return pairs.Estimate{}, fmt.Errorf("%w: %v", pairs.ErrCannotRun, err)
	}
	// No speculative opening here: the planner may well choose a CPU
	// engine (the padded tiles of sparse data overstate the comparisons),
	// and a process that opened the GPU pays its teardown at exit. Run
	// starts opening it before it builds the batmaps.
	est, err := estimate(d, e.cfg, l, sizes, d.Occurrences, d.Threads, d.GPUs, modePairs, false)
	if err != nil {
		return pairs.Estimate{}, fmt.Errorf("%w: %v", pairs.ErrCannotRun, err)
	}
	return pairs.Estimate{Seconds: est.sec, Memory: d.VerticalBytes() + l.Memory(sizes, d.Threads),
		Detail:     fmt.Sprintf("%s, %s of device memory", est.detail, gpurt.FormatBytes(uint64(est.memory))),
		DeviceName: est.on}, nil
}

func (e pairsEngine) Run(ctx context.Context, d *pairs.Data, out *pairs.Output) error {
	// Open the GPUs while the tidlists and batmaps are built on the CPU.
	gpus := gpurt.RunGPUs(d, weighKey(e.cfg), d.GPUs)
	gpurt.PrewarmGPUs(gpus)
	l, _, err := d.BatmapLayout(e.cfg)
	if err != nil {
		return err
	}
	b, err := d.BuildBatmaps(ctx, l, out)
	if err != nil {
		return err
	}
	set, err := gpurt.OpenSet(gpus)
	if err != nil {
		return err
	}
	opt := Options{MinCount: uint32(min(d.MinSupport, 1<<32-1)), Threads: d.Threads,
		Progress: func(done, total int64) { out.Progress("pairs", done, total) }, Stats: new(Stats)}
	defer func() { out.Note("gpu: %v", opt.Stats) }()
	writers := make([]*pairs.Writer, Workers(opt, set))
	for i := range writers {
		writers[i] = out.Writer()
	}
	defer func() {
		for _, w := range writers {
			w.Close()
		}
	}()
	if out.CountOnly() {
		n, err := Count(ctx, set, b, opt)
		writers[0].AddCount(n)
		return err
	}
	return Pairs(ctx, set, b, opt, func(w int, ps []Pair) error {
		wr := writers[w]
		for _, p := range ps {
			wr.Add(b.IDs[p.I], b.IDs[p.J], p.Count)
		}
		return out.Err()
	})
}

// ------------------------------------------------------------ allpairs

// allpairsEngine is BATMAP in package allpairs on the GPU: self-joins
// only, every set a batmap, the pairs that reach their threshold
// compacted on the device.
type allpairsEngine struct {
	cfg batmap.Config // the layout, as pairsEngine's
}

func (allpairsEngine) Name() string { return "batmap" }

func (allpairsEngine) Kind() allpairs.DeviceKind { return allpairs.GPU }

// Opening reports whether the default GPU is opening or open already
// (engine.Opening): the planner then estimates this engine beside the
// CPU's.
func (allpairsEngine) Opening() bool { return gpurt.DefaultStarted() }

var _ engine.Opening = allpairsEngine{}

// Device describes every GPU of the host (the default choice), opening
// the first at first use (gpurt.PlanningGPUs); the planner asks
// DeviceFor.
func (allpairsEngine) Device() (allpairs.Device, error) { return setDevice(nil) }

// DeviceFor describes the GPUs p runs on (Problem.GPUs), opening them, and
// only them, at first use.
func (allpairsEngine) DeviceFor(p *allpairs.Problem) (allpairs.Device, error) {
	return setDevice(p.GPUs)
}

// setDevice opens the GPUs of list (OpenSet) and describes them, with the
// least free memory an owner may plan in. Where the list is every GPU of
// a host of several, it opens the first alone: how many more pay is the
// estimate's to weigh.
func setDevice(list []int) (allpairs.Device, error) {
	d := allpairs.Device{Kind: allpairs.GPU, Name: "no GPU"}
	set, err := gpurt.OpenSet(gpurt.PlanningGPUs(list))
	if err != nil {
		return d, fmt.Errorf("%w: %v", allpairs.ErrCannotRun, err)
	}
	free, err := set.FreeMemory()
	if err != nil {
		return d, fmt.Errorf("%w: %v", allpairs.ErrCannotRun, err)
	}
	d.Name, d.Parallelism, d.Memory = gpurt.PlanningName(list, set), set.Owner(0).Info().SMs, free
	return d, nil
}

func allpairsLayout(p *allpairs.Problem, cfg batmap.Config) (*batmap.Layout, []int, error) {
	sizes := make([]int, p.R.Len())
	for i := range sizes {
		sizes[i] = p.R.SetLen(i)
	}
	l, err := batmap.NewLayout(uint64(max(p.Universe, 1)), sizes, cfg)
	return l, sizes, err
}

func (e allpairsEngine) Estimate(p *allpairs.Problem) (allpairs.Estimate, error) {
	if _, _, ok := p.Tiled(); ok {
		return allpairs.Estimate{}, fmt.Errorf("%w: its tiles follow the batmaps' order, not the caller's grid", allpairs.ErrCannotRun)
	}
	if !p.Self {
		return allpairs.Estimate{}, fmt.Errorf("%w: compares a collection with itself only", allpairs.ErrCannotRun)
	}
	l, sizes, err := allpairsLayout(p, e.cfg)
	if err != nil {
		return allpairs.Estimate{}, fmt.Errorf("%w: %v", allpairs.ErrCannotRun, err)
	}
	est, err := estimate(p, e.cfg, l, sizes, p.Stats.R.Elements, p.Threads, p.GPUs, modePairs, true)
	if err != nil {
		return allpairs.Estimate{}, fmt.Errorf("%w: %v", allpairs.ErrCannotRun, err)
	}
	// The pairs are reported after the batmaps' counts, on the host.
	return allpairs.Estimate{Seconds: est.sec + p.ReportSeconds(), Memory: est.memory, Detail: est.detail, DeviceName: est.on}, nil
}

func (e allpairsEngine) Run(ctx context.Context, p *allpairs.Problem, out *allpairs.Output) error {
	// Open the GPUs while the batmaps are built on the CPU.
	gpus := gpurt.RunGPUs(p, weighKey(e.cfg), p.GPUs)
	gpurt.PrewarmGPUs(gpus)
	l, _, err := allpairsLayout(p, e.cfg)
	if err != nil {
		return err
	}
	b, err := l.Build(p.R, p.Threads, nil)
	if err != nil {
		return err
	}
	set, err := gpurt.OpenSet(p.GPUs)
	if err != nil {
		return err
	}
	// Thresholds by position: a pair's is the smaller of its sets'
	// (Problem.Need), the same array on both sides of a self-join.
	need := make([]uint32, b.Len())
	for k, id := range b.IDs {
		need[k] = p.NeedR(int(id))
	}
	var reported int64 // Progress is called under a lock
	opt := Options{Need: need, Threads: p.Threads, Progress: func(done, total int64) {
		out.Progress(done - reported)
		reported = done
	}, Stats: new(Stats)}
	defer func() { out.Note("gpu: %v", opt.Stats) }()
	writers := make([]*allpairs.Writer, Workers(opt, set))
	for i := range writers {
		writers[i] = out.Writer()
	}
	defer func() {
		for _, w := range writers {
			w.Close()
		}
	}()
	if writers[0].CountOnly() {
		n, err := Count(ctx, set, b, opt)
		writers[0].AddCount(n)
		return err
	}
	return Pairs(ctx, set, b, opt, func(w int, ps []Pair) error {
		wr := writers[w]
		for _, pr := range ps {
			i, j := int(b.IDs[pr.I]), int(b.IDs[pr.J])
			if i > j {
				i, j = j, i
			}
			wr.Add(i, j, pr.Count)
		}
		return out.Err()
	})
}
