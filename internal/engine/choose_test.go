package engine

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fake is an engine whose device and estimate a test sets, counting how
// often the planner asks for them.
type fake struct {
	name    string
	kind    Kind
	sec     float64
	mem     int64
	devMem  int64
	devErr  error
	estErr  error
	bound   float64 // with bounded
	bounded bool
	sleep   time.Duration
	opening bool   // what Opening says
	hook    func() // called as Estimate begins, when set

	devices, estimates atomic.Int32
	running            *atomic.Int32 // estimates under way, when set
	most               *atomic.Int32 // the most at once
}

func (f *fake) Name() string { return f.name }
func (f *fake) Kind() Kind   { return f.kind }

func (f *fake) Device() (Device, error) {
	f.devices.Add(1)
	if f.kind == CPU {
		return CPUDevice(), f.devErr
	}
	return Device{Kind: GPU, Name: "the GPU", Memory: f.devMem}, f.devErr
}

func (f *fake) Opening() bool { return f.opening }

func (f *fake) Estimate(int) (Estimate, error) {
	f.estimates.Add(1)
	if f.hook != nil {
		f.hook()
	}
	if f.running != nil {
		n := f.running.Add(1)
		for m := f.most.Load(); n > m && !f.most.CompareAndSwap(m, n); m = f.most.Load() {
		}
		time.Sleep(f.sleep)
		f.running.Add(-1)
	}
	return Estimate{Seconds: f.sec, Memory: f.mem, Detail: f.name}, f.estErr
}

// choose plans with engines es under choice, the CPU on 3 threads.
func choose(choice Choice, es ...*fake) ([]Candidate[*fake], Candidate[*fake], error) {
	return Choose(Planning[int, *fake]{Workload: "w", Choice: choice, Engines: es, Threads: 3,
		Bound: func(f *fake) (float64, bool) { return f.bound, f.bounded }})
}

func names(cs []Candidate[*fake]) string {
	var s []string
	for _, c := range cs {
		s = append(s, c.Engine.name+"/"+c.Engine.kind.String())
	}
	return strings.Join(s, " ")
}

func TestChooseFilters(t *testing.T) {
	a, b, g := &fake{name: "a", kind: CPU, sec: 2}, &fake{name: "b", kind: CPU, sec: 1}, &fake{name: "a", kind: GPU, sec: 3}
	cs, chosen, err := choose(Choice{Device: "cpu", Technique: "auto"}, a, b, g)
	if err != nil || names(cs) != "b/cpu a/cpu" || chosen.Engine != b {
		t.Errorf("device cpu: %s, chose %s, %v", names(cs), chosen.Engine.name, err)
	}
	if g.devices.Load() != 0 || g.estimates.Load() != 0 {
		t.Error("device cpu asked the GPU engine")
	}
	cs, chosen, err = choose(Choice{Device: "auto", Technique: "a"}, a, b, g)
	if err != nil || names(cs) != "a/cpu a/gpu" || chosen.Engine != a || b.estimates.Load() != 1 {
		t.Errorf("technique a: %s, chose %s, %v; b estimated %d times", names(cs), chosen.Engine.name, err, b.estimates.Load())
	}
	cs, chosen, err = choose(Choice{Device: "gpu", Technique: "b"}, a, b, g)
	if !errors.Is(err, ErrCannotRun) || len(cs) != 0 || chosen.Err == nil || !strings.Contains(err.Error(), "no engine b on device gpu is registered") {
		t.Errorf("nothing allowed: %s, %v, chosen's error %v", names(cs), err, chosen.Err)
	}
}

// With the device auto, a GPU engine is not even asked for its device when
// a CPU estimate is below the GPU's start-up.
func TestChooseSkipsGPU(t *testing.T) {
	quick := GPUStartup.Seconds() / 2
	for _, tc := range []struct {
		device string
		cpu    float64
		opened bool
	}{
		{"auto", quick, false},
		{"auto", 2 * GPUStartup.Seconds(), true},
		{"gpu", quick, true},
	} {
		c, g := &fake{name: "c", kind: CPU, sec: tc.cpu}, &fake{name: "g", kind: GPU, sec: quick / 2}
		cs, chosen, err := choose(Choice{Device: tc.device, Technique: "auto"}, c, g)
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		if opened := g.devices.Load() > 0; opened != tc.opened || opened != (g.estimates.Load() > 0) {
			t.Errorf("%+v: GPU device asked %d times, estimated %d times", tc, g.devices.Load(), g.estimates.Load())
		}
		if !tc.opened {
			last := cs[len(cs)-1]
			if chosen.Engine != c || last.Engine != g || !strings.Contains(Reason(last.Err), "not tried") || last.Device.Name != "not opened" {
				t.Errorf("%+v: chose %s; the GPU's candidate %+v", tc, chosen.Engine.name, last)
			}
		} else if chosen.Engine != g {
			t.Errorf("%+v: chose %s, want the faster GPU", tc, chosen.Engine.name)
		}
	}
}

// With the device auto, GPU engines whose GPUs are opening already are
// estimated beside the CPU's; the others after them. The start-up rule
// still decides whether a GPU is taken.
func TestChooseEarlyGPU(t *testing.T) {
	for _, opening := range []bool{true, false} {
		started := make(chan struct{})
		var once sync.Once
		g := &fake{name: "g", kind: GPU, sec: 1, opening: opening, hook: func() { once.Do(func() { close(started) }) }}
		overlapped := false
		wait := 5 * time.Second // long enough for the GPU's estimate to begin
		if !opening {
			wait = 50 * time.Millisecond // the GPU's must not begin meanwhile
		}
		c := &fake{name: "c", kind: CPU, sec: 2, hook: func() {
			select {
			case <-started:
				overlapped = true
			case <-time.After(wait):
			}
		}}
		cs, chosen, err := choose(Choice{Device: "auto", Technique: "auto"}, c, g)
		if err != nil || chosen.Engine != g || names(cs) != "g/gpu c/cpu" {
			t.Fatalf("opening %v: %s, chose %v, %v", opening, names(cs), chosen.Engine, err)
		}
		if overlapped != opening {
			t.Errorf("opening %v: the GPU's estimate began during the CPU's: %v", opening, overlapped)
		}
	}
	// A CPU estimate under the start-up still leaves the GPU out.
	c, g := &fake{name: "c", kind: CPU, sec: GPUStartup.Seconds() / 2}, &fake{name: "g", kind: GPU, sec: 0.001, opening: true}
	cs, chosen, err := choose(Choice{Device: "auto", Technique: "auto"}, c, g)
	if last := cs[len(cs)-1]; err != nil || chosen.Engine != c || last.Engine != g || !strings.Contains(Reason(last.Err), "under the") {
		t.Errorf("quick CPU: chose %v (%v); the GPU's candidate %+v", chosen.Engine, err, last)
	}
	// A GPU engine that does not say it is opening keeps every GPU engine
	// after the CPU's.
	if !opening([]*fake{{opening: true}}) || opening([]*fake{{opening: true}, {}}) || opening([]*fake{}) {
		t.Error("opening: wrong for one opening engine, a mixed pair or none")
	}
}

func TestChooseMemory(t *testing.T) {
	big := &fake{name: "big", kind: CPU, sec: 1, mem: 100}
	small := &fake{name: "small", kind: CPU, sec: 2, mem: 10}
	gpu := &fake{name: "g", kind: GPU, sec: 1, mem: 50, devMem: 40}
	base := Planning[int, *fake]{Workload: "w", Choice: Choice{Device: "auto", Technique: "auto"}, Engines: []*fake{big, small, gpu}, Budget: 60}
	cs, chosen, err := Choose(base)
	if err != nil || chosen.Engine != small || names(cs) != "small/cpu big/cpu g/gpu" {
		t.Fatalf("%s, chose %s, %v", names(cs), chosen.Engine.name, err)
	}
	if !errors.Is(cs[1].Err, ErrOverBudget) || !strings.Contains(cs[1].Err.Error(), "needs 100 B of memory, over the budget of 60 B") {
		t.Errorf("over the budget: %v", cs[1].Err)
	}
	if errors.Is(cs[2].Err, ErrOverBudget) || !strings.Contains(cs[2].Err.Error(), "needs 50 B of memory, gpu has 40 B") {
		t.Errorf("over the GPU's memory (the budget is the CPU's): %v", cs[2].Err)
	}
	// The prepared problem's bytes count against the budget.
	base.Prepared = 55
	if _, _, err = Choose(base); !errors.Is(err, ErrOverBudget) || !strings.Contains(err.Error(), "small on cpu: needs 65 B with the prepared data, over the budget of 60 B") {
		t.Errorf("with 55 bytes prepared: %v", err)
	}
}

// Equal estimates keep the engines' order, CPU first; a bound no better
// than an estimate made is not estimated and ranks after an equal
// estimate.
func TestChooseRanksTies(t *testing.T) {
	g := &fake{name: "g", kind: GPU, sec: 1}
	x := &fake{name: "x", kind: CPU, sec: 1}
	y := &fake{name: "y", kind: CPU, sec: 1}
	slow := &fake{name: "slow", kind: CPU, sec: 5, bounded: true, bound: 1}
	late := &fake{name: "late", kind: CPU, sec: 0.5, bounded: true, bound: 0.2}
	cs, chosen, err := choose(Choice{Device: "auto", Technique: "auto"}, g, slow, x, late, y)
	if err != nil || chosen.Engine != late {
		t.Fatalf("chose %v, %v", chosen.Engine, err)
	}
	if got := names(cs); got != "late/cpu x/cpu y/cpu g/gpu slow/cpu" {
		t.Errorf("ranked %s", got)
	}
	if slow.estimates.Load() != 0 || !cs[4].Bounded || cs[4].Estimate.Seconds != 1 {
		t.Errorf("the bounded engine was estimated %d times: %+v", slow.estimates.Load(), cs[4])
	}
	if late.estimates.Load() != 1 {
		t.Errorf("an engine whose bound is under every estimate was estimated %d times", late.estimates.Load())
	}
}

func TestChooseErrors(t *testing.T) {
	g := &fake{name: "g", kind: GPU, devErr: errors.New("no driver")}
	h := &fake{name: "h", kind: GPU, devErr: Unavailable(errors.New("no device"))}
	cs, chosen, err := choose(Choice{Device: "gpu", Technique: "auto"}, g, h)
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, ErrCannotRun) || !errors.Is(cs[0].Err, ErrUnavailable) || chosen.Err == nil {
		t.Errorf("no GPU: %v (first candidate %v)", err, cs[0].Err)
	}
	if g.estimates.Load()+h.estimates.Load() != 0 {
		t.Error("an engine without its device was estimated")
	}
	c := &fake{name: "c", kind: CPU, sec: 1, mem: 100}
	bad := &fake{name: "bad", kind: CPU, estErr: Cannot("does not apply")}
	_, _, err = Choose(Planning[int, *fake]{Workload: "w", Choice: Choice{Device: "auto", Technique: "auto"}, Engines: []*fake{c, bad, g}, Budget: 10})
	if !errors.Is(err, ErrOverBudget) || errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "bad on cpu: does not apply") {
		t.Errorf("over the budget: %v", err)
	}
}

// The explanation ends alike for every workload: the chosen engine on its
// device as the plan runs it, or why none can run.
func TestChooseExplains(t *testing.T) {
	cs, chosen, err := choose(Choice{Device: "auto", Technique: "auto"}, &fake{name: "c", kind: CPU, sec: 1}, &fake{name: "g", kind: GPU, devErr: errors.New("no driver")})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteChoice(&b, cs, chosen); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); !strings.Contains(s, "* c ") || !strings.Contains(s, "cannot run: no driver") || !strings.HasSuffix(s, " 3 threads)\n") || !strings.Contains(s, "\nchoice       c on cpu (") {
		t.Errorf("with a choice:\n%s", s)
	}
	cs, chosen, _ = choose(Choice{Device: "gpu", Technique: "auto"}, &fake{name: "c", kind: CPU, sec: 1}, &fake{name: "g", kind: GPU, devErr: errors.New("no driver")})
	b.Reset()
	if err := WriteChoice(&b, cs, chosen); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); strings.Contains(s, "* ") || !strings.HasSuffix(s, "\nchoice       none: no driver\n") {
		t.Errorf("with none:\n%s", s)
	}
}

// Again re-estimates the engines it selects, and only those; estimates
// run at most Threads at once.
func TestChooseAgain(t *testing.T) {
	var running, most atomic.Int32
	var es []*fake
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		es = append(es, &fake{name: n, kind: CPU, sec: 1, sleep: 2 * time.Millisecond, running: &running, most: &most})
	}
	seen := 0
	_, _, err := Choose(Planning[int, *fake]{Workload: "w", Choice: Choice{Device: "auto", Technique: "auto"}, Engines: es, Threads: 2,
		Again: func(cs []Candidate[*fake]) func(*fake) bool {
			seen = len(cs)
			return func(f *fake) bool { return f.name == "b" }
		}})
	if err != nil || seen != 5 {
		t.Fatalf("%v; Again saw %d candidates", err, seen)
	}
	for _, f := range es {
		want := int32(1)
		if f.name == "b" {
			want = 2
		}
		if f.estimates.Load() != want {
			t.Errorf("%s estimated %d times, want %d", f.name, f.estimates.Load(), want)
		}
	}
	if m := most.Load(); m > 2 || m < 1 {
		t.Errorf("%d estimates at once on 2 threads", m)
	}
}
