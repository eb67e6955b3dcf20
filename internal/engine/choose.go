package engine

import (
	"cmp"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"
)

// Estimator is what the planning step needs of an engine: a one-shot
// Engine and the query workload's engines, which open a runner in place
// of Run, are both planned by Choose.
type Estimator[P any] interface {
	Named
	// Device returns the device the engine runs on, or an error that
	// says why it is not available on this machine (Choose marks it
	// with ErrUnavailable).
	Device() (Device, error)
	// Estimate predicts the engine's time and memory on p, or returns an
	// error wrapping ErrCannotRun that says why it cannot run p. It must
	// be cheap next to the run, and safe to call beside other engines'
	// estimates.
	Estimate(p P) (Estimate, error)
}

// GPUStartup is what opening a GPU costs before any work: the driver, the
// contexts and the prebuilt kernels, gpurt.OpenCost (which a test holds it
// to; this package does not import the GPU layer). With the device "auto",
// Choose does not even ask a GPU engine for its device when a CPU engine's
// estimate is below it.
const GPUStartup = 350 * time.Millisecond

// Planning is what a workload's planner hands Choose: the problem, its
// engines, the caller's choice, and the few things that differ between
// workloads.
type Planning[P any, E Estimator[P]] struct {
	// Workload names the workload in errors: "allpairs".
	Workload string
	// Choice is the caller's choice, normalized (Choice.Normalize).
	Choice Choice
	// Problem is what the engines estimate.
	Problem P
	// Engines are the registered engines, in the order they were
	// registered: equal estimates keep it.
	Engines []E
	// Threads is the CPU threads the problem runs on (what the chosen
	// CPU device says), and how many estimates run at once; 0 means
	// GOMAXPROCS.
	Threads int
	// Budget is the CPU memory that a CPU engine's estimate and the
	// Prepared bytes may take together; 0 means no budget.
	Budget int64
	// Prepared is the memory the prepared problem holds within Budget.
	Prepared int64
	// DeviceOf returns e's device for the problem, where an engine's
	// device depends on it (the GPUs a problem names); nil means
	// E.Device.
	DeviceOf func(e E) (Device, error)
	// Bound returns, for an engine whose Estimate costs more than a look
	// at the statistics, seconds that its estimate cannot go below (0:
	// none known), and false for other engines. Such engines are asked
	// after the others of their kind, lowest bound first, one at a time,
	// and not at all when an estimate already made is no higher.
	Bound func(e E) (float64, bool)
	// Again, if not nil, sees the candidates once estimated and returns
	// which engines to estimate again (nil: none), for a workload that
	// measures its costs only when the estimates are close.
	Again func(cs []Candidate[E]) func(e E) bool
}

// Choose is the planning step of every workload: it considers the engines
// that the choice allows, CPU engines first (their estimates decide
// whether a GPU is worth opening at all; GPU engines whose GPUs are
// opening already, see Opening, beside them), asks each for its device and
// its estimate, checks the estimate against the device's memory and the
// CPU budget, ranks the candidates (Rank) and picks the first (Pick).
//
// It returns the candidates, ranked, for the explanation (WriteChoice),
// and the chosen one. When none can run, the error is Pick's, and the
// chosen candidate (the first, if any) carries why.
func Choose[P any, E Estimator[P]](pl Planning[P, E]) ([]Candidate[E], Candidate[E], error) {
	threads := pl.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	var cs []Candidate[E]
	best, bestCPU := math.Inf(1), math.Inf(1)
	seen := func(c Candidate[E]) {
		if c.Err == nil && !c.Bounded {
			best = min(best, c.Estimate.Seconds)
			if c.Device.Kind == CPU {
				bestCPU = min(bestCPU, c.Estimate.Seconds)
			}
		}
	}
	// The GPU's plain engines are estimated beside the CPU's where their
	// GPUs are opening already: asking them then opens nothing more.
	var early []Candidate[E]
	var earlyDone chan struct{}
	if gpu, _, _ := pl.split(GPU); len(gpu) > 0 && pl.Choice.Device == "auto" && opening(gpu) {
		earlyDone = make(chan struct{})
		go func() {
			defer close(earlyDone)
			early = make([]Candidate[E], len(gpu))
			for i, e := range gpu {
				early[i] = pl.device(e)
			}
			pl.estimate(early, threads, func(E) bool { return true })
		}()
	}
	for _, kind := range []Kind{CPU, GPU} {
		plain, bounded, bounds := pl.split(kind)
		if kind == GPU && earlyDone != nil {
			<-earlyDone
		}
		order := make([]int, len(bounded))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(bounds[a], bounds[b]) })
		if kind == GPU && pl.Choice.Device == "auto" && bestCPU < GPUStartup.Seconds() {
			what := "not tried"
			if earlyDone != nil {
				what = "not taken"
			}
			skip := Cannot("%s: the CPU's estimate, %v, is under the %v it takes to start a GPU", what,
				time.Duration(bestCPU*float64(time.Second)).Round(time.Millisecond), GPUStartup)
			dev := Device{Kind: GPU, Name: "not opened"}
			if earlyDone != nil {
				dev.Name = "not used"
			}
			for _, e := range plain {
				cs = append(cs, Candidate[E]{Engine: e, Device: dev, Err: skip})
			}
			for _, i := range order {
				cs = append(cs, Candidate[E]{Engine: bounded[i], Device: dev, Err: skip})
			}
			continue
		}
		first := len(cs)
		if kind == GPU && earlyDone != nil {
			cs = append(cs, early...)
		} else {
			for _, e := range plain {
				cs = append(cs, pl.device(e))
			}
			pl.estimate(cs[first:], threads, func(E) bool { return true })
		}
		for _, c := range cs[first:] {
			seen(c)
		}
		for _, i := range order {
			c := pl.device(bounded[i])
			if b := bounds[i]; c.Err == nil && b > 0 && b >= best {
				c.Bounded = true
				c.Estimate = Estimate{Seconds: b, Detail: "not estimated: at least this, and another estimate is lower"}
			} else if c.Err == nil {
				pl.estimateOne(&c)
			}
			cs = append(cs, c)
			seen(c)
		}
	}
	if pl.Again != nil {
		if again := pl.Again(cs); again != nil {
			pl.estimate(cs, threads, again)
		}
	}
	for i := range cs {
		cs[i].Device = cs[i].Device.OnThreads(threads)
	}
	Rank(cs)
	chosen, err := Pick(pl.Workload, pl.Choice, cs)
	if err != nil && chosen.Err == nil {
		chosen.Err = err
	}
	return cs, chosen, err
}

// split returns the engines of kind that the choice allows: the plain
// ones, and those with a bound (Planning.Bound) with their bounds.
func (pl *Planning[P, E]) split(kind Kind) (plain, bounded []E, bounds []float64) {
	for _, e := range pl.Engines {
		// Filter before Device, which may open a GPU.
		if e.Kind() != kind || !pl.Choice.Allows(e.Name(), e.Kind()) {
			continue
		}
		if b, ok := pl.bound(e); ok {
			bounded, bounds = append(bounded, e), append(bounds, b)
		} else {
			plain = append(plain, e)
		}
	}
	return plain, bounded, bounds
}

// Opening is implemented by GPU engines that can tell, without opening
// anything, whether their GPUs are opening or open already (a command
// started them beside its reading). Where every one of a planning's plain
// GPU engines says so, Choose estimates them beside the CPU's engines
// rather than after: asking them then costs no start-up, and the plan
// is ready sooner.
type Opening interface {
	Opening() bool
}

// opening reports whether every engine of es implements Opening and says
// its GPUs are opening.
func opening[E any](es []E) bool {
	for _, e := range es {
		if o, ok := any(e).(Opening); !ok || !o.Opening() {
			return false
		}
	}
	return len(es) > 0
}

func (pl *Planning[P, E]) bound(e E) (float64, bool) {
	if pl.Bound == nil {
		return 0, false
	}
	return pl.Bound(e)
}

// device is e's candidate before its estimate: its device, or why that
// is not available.
func (pl *Planning[P, E]) device(e E) Candidate[E] {
	var d Device
	var err error
	if pl.DeviceOf != nil {
		d, err = pl.DeviceOf(e)
	} else {
		d, err = e.Device()
	}
	return Candidate[E]{Engine: e, Device: d, Err: Unavailable(err)}
}

// estimate estimates, up to threads at once, the candidates that can run
// and that which selects, and checks their memory: some estimates sample
// the problem or lay out its structures, milliseconds each on large
// problems.
func (pl *Planning[P, E]) estimate(cs []Candidate[E], threads int, which func(E) bool) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, threads)
	for i := range cs {
		c := &cs[i]
		if c.Err != nil || c.Bounded || !which(c.Engine) {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			pl.estimateOne(c)
			<-sem
		}()
	}
	wg.Wait()
}

func (pl *Planning[P, E]) estimateOne(c *Candidate[E]) {
	c.Estimate, c.Err = c.Engine.Estimate(pl.Problem)
	c.checkMemory(pl.Budget, pl.Prepared)
}
