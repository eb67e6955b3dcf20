package gpurt

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Step is one step of the GPU's start-up in a process: loading the driver,
// opening a device's context, loading a module, pinning host memory, or
// loading cuBLAS. The steps of different devices overlap.
type Step struct {
	// What names the step, such as "GPU 1 context".
	What string
	// Start is when it began.
	Start time.Time
	// Took is how long it took.
	Took time.Duration
	// Bytes is the memory the step pinned, if it pinned any.
	Bytes int64
}

// maxSteps bounds the steps kept: a long-lived process (the server, a
// library's caller) pins and loads again and again, and the start-up is
// what the steps are for.
const maxSteps = 1024

var timeline struct {
	sync.Mutex
	steps []Step
}

// pinnedStep names the steps that pin host memory (AllocHost): the runs'
// as they go, which the start-up's summary and span set apart.
const pinnedStep = "pinned memory"

// record adds a step that began at start and ends now.
func record(what string, start time.Time, bytes int64) {
	timeline.Lock()
	if len(timeline.steps) < maxSteps {
		timeline.steps = append(timeline.steps, Step{What: what, Start: start, Took: time.Since(start), Bytes: bytes})
	}
	timeline.Unlock()
}

// Steps returns the start-up steps so far, in the order they ended: the
// first maxSteps of the process.
func Steps() []Step {
	timeline.Lock()
	defer timeline.Unlock()
	return append([]Step(nil), timeline.steps...)
}

// StartupSummary describes the start-up steps for --explain, their times
// counted from since (the process's start): when the GPUs began and
// finished opening (StartupSpan), each step's time and start, modules
// summed, and then the host memory pinned, summed, which the runs pin as
// they need it. It returns "" when no GPU was opened.
func StartupSummary(since time.Time) string {
	steps := Steps()
	first, last, ok := startupSpan(steps)
	if !ok {
		return ""
	}
	var b strings.Builder
	var modules, pins int
	var moduleTime, pinTime time.Duration
	var pinned int64
	var parts []string
	for _, s := range steps {
		switch {
		case strings.HasPrefix(s.What, "module "):
			modules++
			moduleTime += s.Took
		case s.What == pinnedStep:
			pins++
			pinTime += s.Took
			pinned += s.Bytes
		default:
			// Where each began shows what waited for what.
			parts = append(parts, fmt.Sprintf("%s %s at %s", s.What, ms(s.Took), ms(s.Start.Sub(since))))
		}
	}
	if modules > 0 {
		parts = append(parts, fmt.Sprintf("%d modules %s", modules, ms(moduleTime)))
	}
	fmt.Fprintf(&b, "gpu start    from %s to %s of the process: %s", ms(first.Sub(since)), ms(last.Sub(since)), strings.Join(parts, ", "))
	if pins > 0 {
		fmt.Fprintf(&b, "; then %s pinned in %d buffers %s", FormatBytes(uint64(pinned)), pins, ms(pinTime))
	}
	b.WriteByte('\n')
	return b.String()
}

// StartupSpan returns when the process's GPU start-up steps began and
// when the last ended, leaving out the host memory pinned, which the runs
// pin as they go; ok is false where no GPU was opened.
func StartupSpan() (first, last time.Time, ok bool) { return startupSpan(Steps()) }

// StartupEstimate is what planners assume the start-up recorded so far
// takes: OpenCost for the driver and the first GPU, and ContextCost for
// each other GPU opened (owners of one GPU share its context). It is 0
// where no GPU was opened.
func StartupEstimate() time.Duration { return startupEstimate(Steps()) }

func startupEstimate(steps []Step) time.Duration {
	gpus := map[string]bool{}
	for _, s := range steps {
		if strings.HasPrefix(s.What, "GPU ") {
			gpus[s.What] = true
		}
	}
	if len(gpus) == 0 {
		return 0
	}
	return OpenCost + time.Duration(len(gpus)-1)*ContextCost
}

func startupSpan(steps []Step) (first, last time.Time, ok bool) {
	if !slices.ContainsFunc(steps, func(s Step) bool { return strings.HasPrefix(s.What, "GPU ") }) {
		return time.Time{}, time.Time{}, false
	}
	for _, s := range steps {
		if s.What == pinnedStep {
			continue
		}
		if !ok || s.Start.Before(first) {
			first = s.Start
		}
		if end := s.Start.Add(s.Took); !ok || end.After(last) {
			last = end
		}
		ok = true
	}
	return first, last, true
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}
