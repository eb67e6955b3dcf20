package gpurt

import (
	"fmt"
	"time"
)

// ContextCost is what each GPU of a set beyond the first adds to its
// start: the driver creates the contexts one at a time (105-150 ms each on
// the 2-H200 host, docs/PERFORMANCE.md).
const ContextCost = 130 * time.Millisecond

// SetLeft estimates how long a run on the GPUs of list (nil: all of the
// host's, GuessDevices) still waits for them to open: OpenLeft for the
// driver and the first GPU, then ContextCost for each other GPU that is
// not open, less what its opening has run already (OpenSet opens them one
// after another). Planners take it before anything of the estimate opens
// the GPUs.
func SetLeft(list []int) time.Duration {
	if list == nil {
		list = ordinals(GuessDevices(nil))
	}
	return OpenLeft() + contextsLeft(list, time.Now())
}

// contextsLeft is SetLeft's part for the GPUs of list after its first.
func contextsLeft(list []int, now time.Time) time.Duration {
	var left time.Duration
	seen := map[int]bool{}
	openMu.Lock()
	defer openMu.Unlock()
	for i, o := range list {
		if seen[o] {
			continue // another owner: no context of its own
		}
		seen[o] = true
		if i == 0 || opened[o] != nil {
			continue // the first is OpenLeft's
		}
		c := ContextCost
		if st := opening[o]; st != nil {
			c = max(0, c-now.Sub(st.since))
		}
		left += c
	}
	return left
}

// Spread is an estimate of a run over GPUs that Weigh chose.
type Spread[T any] struct {
	// Plan is what the estimate of the chosen GPUs returned.
	Plan T
	// Seconds is that estimate, the wait for the GPUs included.
	Seconds float64
	// GPUs is the choice the run takes (ParseGPUs' form): the caller's,
	// or, where the caller left it to the planner, []int{0} (the first
	// GPU alone) or nil (every GPU).
	GPUs []int
	// Note says why the run takes the first GPU alone or every GPU, for
	// an explanation; "" where there was nothing to weigh.
	Note string
}

// Noted returns detail, an estimate's explanation, with the spread's Note
// after it where there is one.
func (s Spread[T]) Noted(detail string) string {
	if s.Note == "" {
		return detail
	}
	return detail + "; " + s.Note
}

// Weigh estimates a run on a choice of GPUs (ParseGPUs) with est, which
// returns its plan and seconds for a list of GPUs, the wait for them to
// open included (SetLeft). est opens no GPU past the first of every GPU
// (nil): it plans on PlanningGPUs and spreads the work over the others,
// assumed alike, by arithmetic (Spreading). Where the choice names its
// GPUs, or the host has one, est gets the choice. Where it is every GPU of
// a host of several, est gets the first GPU alone and every GPU, and the
// lower estimate wins: a run of a few tenths of a second is not held up by
// contexts it cannot use (ContextCost each), a run of seconds takes them
// all.
func Weigh[T any](choice []int, est func(list []int) (T, float64, error)) (Spread[T], error) {
	n := 1
	if choice == nil {
		n = GuessDevices(nil)
	}
	return weigh(choice, n, est)
}

// weigh is Weigh with the host's GPUs counted.
func weigh[T any](choice []int, n int, est func([]int) (T, float64, error)) (Spread[T], error) {
	if choice != nil || n <= 1 {
		plan, sec, err := est(choice)
		return Spread[T]{Plan: plan, Seconds: sec, GPUs: choice}, err
	}
	first := []int{0}
	plan, sec, err := est(first)
	if err != nil {
		// What one GPU cannot run, all of them cannot either (each holds
		// the whole plan); its error says why.
		return Spread[T]{GPUs: first}, err
	}
	one := Spread[T]{Plan: plan, Seconds: sec, GPUs: first}
	planAll, secAll, err := est(nil)
	switch {
	case err != nil:
		one.Note = fmt.Sprintf("on GPU 0 alone: on all %d GPUs, %v", n, err)
		return one, nil
	case secAll >= sec:
		one.Note = fmt.Sprintf("on GPU 0 alone: %v against %v on all %d GPUs", round(sec), round(secAll), n)
		return one, nil
	}
	return Spread[T]{Plan: planAll, Seconds: secAll, Note: fmt.Sprintf("on all %d GPUs: %v against %v on GPU 0 alone", n, round(secAll), round(sec))}, nil
}

// PlanningGPUs returns the GPUs an estimate of a run on list opens to
// plan on: list itself where it names them, the first GPU where it is
// every GPU (nil), whose others open for the run alone (Weigh).
func PlanningGPUs(list []int) []int {
	if list == nil {
		return []int{0}
	}
	return list
}

// PlanningName describes for a planner the GPUs of a choice (list) whose
// estimates plan on set, the GPUs of PlanningGPUs(list): set's own
// description, and, where the choice is every GPU of a host of several,
// how many more the run may take.
func PlanningName(list []int, set *Set) string {
	name := set.String()
	if n := GuessDevices(nil); list == nil && n > set.Devices() {
		name += fmt.Sprintf(", and %d more where they pay", n-set.Devices())
	}
	return name
}

// Spreading describes how a run on list spreads, for an estimate planned
// on set, the GPUs of PlanningGPUs(list): its distinct GPUs, its owners
// and their description (Set.String's form). For every GPU (nil) those
// are the host's, one owner each, known without opening them.
func Spreading(list []int, set *Set) (devices, owners int, name string) {
	if list != nil {
		return set.Devices(), set.Len(), set.String()
	}
	infos := KnownDevices()
	if len(infos) <= 1 {
		return set.Devices(), set.Len(), set.String()
	}
	return len(infos), len(infos), describe(infos, nil)
}

// Memoizer is a problem that memoises what its engines decide, once per
// key (allpairs.Problem, pairs.Data).
type Memoizer interface {
	Memo(key string, build func() any) any
}

// weighed is a memoised Weigh.
type weighed[T any] struct {
	sp  Spread[T]
	err error
}

func (w weighed[T]) chosen() ([]int, bool) { return w.sp.GPUs, w.err == nil }

// notWeighed stands in the memo for a run whose estimate was never made:
// it chose nothing.
type notWeighed struct{}

// weighKey is the memo key of an engine's weighing.
func weighKey(key string) string { return "gpurt.weigh " + key }

// WeighOnce is Weigh made once per problem p and key (an engine and its
// tuning): est is called the first time only, and RunGPUs finds the
// choice for the run.
func WeighOnce[T any](p Memoizer, key string, choice []int, est func(list []int) (T, float64, error)) (Spread[T], error) {
	v := p.Memo(weighKey(key), func() any {
		sp, err := Weigh(choice, est)
		return weighed[T]{sp, err}
	})
	w, ok := v.(weighed[T])
	if !ok {
		return Spread[T]{}, fmt.Errorf("gpu: %s ran before its estimate", key)
	}
	return w.sp, w.err
}

// RunGPUs returns the GPUs a run under key takes of a choice: the choice
// where it names them, else those WeighOnce chose for p, else, for a run
// that was never estimated, every GPU.
func RunGPUs(p Memoizer, key string, choice []int) []int {
	if choice != nil {
		return choice
	}
	v := p.Memo(weighKey(key), func() any { return notWeighed{} })
	if c, ok := v.(interface{ chosen() ([]int, bool) }); ok {
		if gpus, ok := c.chosen(); ok {
			return gpus
		}
	}
	return nil
}

// round writes seconds for an explanation as engine.Seconds does for the
// planners' tables ("732 s", "3.20 s", "86.2 ms"), which the GPU layer
// does not import (it imports only cuda).
func round(s float64) string {
	switch {
	case s >= 100:
		return fmt.Sprintf("%.0f s", s)
	case s >= 1:
		return fmt.Sprintf("%.2f s", s)
	}
	return fmt.Sprintf("%.1f ms", s*1e3)
}

// WeighedName names for a planner's choice line the GPUs a weighed run
// takes, described as the first (first): "GPU 0, NVIDIA H200" for the
// first alone (devices 1), "2 GPUs, NVIDIA H200" for every GPU of a host
// of two.
func WeighedName(devices int, first Info) string {
	if devices > 1 {
		return fmt.Sprintf("%d GPUs, %s", devices, first.Name)
	}
	return "GPU 0, " + first.Name
}
