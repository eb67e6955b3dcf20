package engine

import (
	"errors"
	"strings"
	"testing"
)

func TestChoiceNormalize(t *testing.T) {
	names := []string{"mm", "scan"}
	for _, tc := range []struct {
		in   Choice
		want Choice
		err  string
	}{
		{Choice{}, Choice{"auto", "auto"}, ""},
		{Choice{" GPU ", "mm"}, Choice{"gpu", "mm"}, ""},
		{Choice{"tpu", ""}, Choice{}, `unknown device "tpu"`},
		{Choice{"cpu", "magic"}, Choice{}, `unknown technique "magic" (auto, mm, scan)`},
	} {
		got, err := tc.in.Normalize("w", names)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%+v: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%+v: %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	c := Choice{"cpu", "auto"}
	if !c.Allows("mm", CPU) || c.Allows("mm", GPU) {
		t.Error("Allows ignores the device")
	}
	c = Choice{"auto", "mm"}
	if !c.Allows("mm", GPU) || c.Allows("scan", CPU) {
		t.Error("Allows ignores the technique")
	}
}

func TestRankPick(t *testing.T) {
	cs := []Candidate[engine]{
		{Engine: engine{"slow", CPU}, Estimate: Estimate{Seconds: 3}},
		{Engine: engine{"broken", GPU}, Err: Cannot("no GPU")},
		{Engine: engine{"bound", CPU}, Estimate: Estimate{Seconds: 1}, Bounded: true},
		{Engine: engine{"fast", CPU}, Estimate: Estimate{Seconds: 1}},
	}
	Rank(cs)
	var order []string
	for _, c := range cs {
		order = append(order, c.Engine.name)
	}
	if got := strings.Join(order, " "); got != "fast bound slow broken" {
		t.Fatalf("Rank: %s", got)
	}
	if c, err := Pick("w", Choice{}, cs); err != nil || c.Engine.name != "fast" {
		t.Fatalf("Pick: %v, %v", c.Engine.name, err)
	}
	// None can run: the error says why, for each.
	none := []Candidate[engine]{
		{Engine: engine{"a", CPU}, Err: Cannot("needs 9 GiB of memory, over the budget of 1 GiB")},
		{Engine: engine{"b", GPU}, Err: Cannot("no GPU: driver not found")},
		{Engine: engine{"c", GPU}, Err: Cannot("no GPU: driver not found")},
	}
	_, err := Pick("w", Choice{}, none)
	if !errors.Is(err, ErrCannotRun) || !strings.Contains(err.Error(), "a on cpu: needs 9 GiB") || !strings.Contains(err.Error(), "b on gpu, c on gpu: no GPU: driver not found") {
		t.Fatalf("Pick with none runnable: %v", err)
	}
	if _, err := Pick[engine]("w", Choice{Device: "gpu", Technique: "mm"}, nil); err == nil || !strings.Contains(err.Error(), "no engine mm on device gpu") {
		t.Fatalf("Pick with no candidates: %v", err)
	}
}

func TestCheckMemory(t *testing.T) {
	c := Candidate[engine]{Device: Device{Kind: CPU, Memory: 100}, Estimate: Estimate{Memory: 50}}
	c.CheckMemory(40)
	if c.Err == nil || !strings.Contains(c.Err.Error(), "over the budget") {
		t.Errorf("budget: %v", c.Err)
	}
	c = Candidate[engine]{Device: Device{Kind: GPU, Memory: 100}, Estimate: Estimate{Memory: 150}}
	c.CheckMemory(0)
	if c.Err == nil || !strings.Contains(c.Err.Error(), "gpu has 100 B") {
		t.Errorf("device: %v", c.Err)
	}
	c = Candidate[engine]{Device: Device{Kind: GPU, Memory: 100}, Estimate: Estimate{Memory: 50}}
	c.CheckMemory(10) // the budget is the CPU's
	if c.Err != nil {
		t.Errorf("GPU engine held to the CPU budget: %v", c.Err)
	}
}

// The error of a problem that no engine can run says whether more memory
// would let one (ErrOverBudget) and whether only a missing device stops
// them (ErrUnavailable), so that callers can say what to do.
func TestPickMarkers(t *testing.T) {
	over := OverBudget("needs 9 GiB of memory, over the budget of 1 GiB")
	noGPU := Unavailable(errors.New("no GPU: driver not found"))
	other := Cannot("does not apply")
	for _, tc := range []struct {
		errs              []error
		over, unavailable bool
	}{
		{[]error{over}, true, false},
		{[]error{noGPU}, false, true},
		{[]error{other}, false, false},
		{[]error{over, noGPU}, true, false},
		{[]error{noGPU, noGPU}, false, true},
		{[]error{other, noGPU}, false, false},
		{[]error{other, over}, true, false},
	} {
		var cs []Candidate[engine]
		for i, err := range tc.errs {
			cs = append(cs, Candidate[engine]{Engine: engine{string(rune('a' + i)), CPU}, Err: err})
		}
		_, err := Pick("w", Choice{}, cs)
		if !errors.Is(err, ErrCannotRun) || errors.Is(err, ErrOverBudget) != tc.over || errors.Is(err, ErrUnavailable) != tc.unavailable {
			t.Errorf("%v: %v; want over budget %v, unavailable %v", tc.errs, err, tc.over, tc.unavailable)
		}
	}
	if !strings.HasPrefix(noGPU.Error(), "cannot run: no GPU") || Unavailable(nil) != nil || Unavailable(noGPU) != noGPU {
		t.Errorf("Unavailable: %v", noGPU)
	}
	c := Candidate[engine]{Device: Device{Kind: CPU}, Estimate: Estimate{Memory: 50}}
	if c.CheckMemory(40); !errors.Is(c.Err, ErrOverBudget) {
		t.Errorf("CheckMemory over the budget: %v does not wrap ErrOverBudget", c.Err)
	}
}

// WriteChoice ends every workload's explanation: the table, then the
// engine that runs, or why none can.
func TestWriteChoice(t *testing.T) {
	var pl Plan[int, engine]
	pl.Candidates = []Candidate[engine]{
		{Engine: engine{"fast", CPU}, Device: Device{Kind: CPU, Name: "the CPU"}, Estimate: Estimate{Seconds: 1, Detail: "d"}},
		{Engine: engine{"broken", GPU}, Err: Cannot("no GPU")},
	}
	pl.Chosen = pl.Candidates[0]
	var b strings.Builder
	if err := pl.WriteChoice(&b); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); !strings.Contains(s, "* fast") || !strings.Contains(s, "cannot run: no GPU") || !strings.HasSuffix(s, "\nchoice       fast on cpu (the CPU)\n") {
		t.Errorf("with a choice:\n%s", s)
	}
	pl.Chosen = pl.Candidates[1]
	b.Reset()
	if err := pl.WriteChoice(&b); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); strings.Contains(s, "* ") || !strings.HasSuffix(s, "\nchoice       none: no GPU\n") {
		t.Errorf("with none:\n%s", s)
	}
	// A GPU engine that chose among the GPUs its device describes names
	// what it takes.
	pl.Candidates = append(pl.Candidates, Candidate[engine]{Engine: engine{"spread", GPU},
		Device: Device{Kind: GPU, Name: "GPU 0, and 1 more where they pay"}, Estimate: Estimate{Seconds: 2, DeviceName: "GPUs 0, 1"}})
	pl.Chosen = pl.Candidates[2]
	b.Reset()
	if err := pl.WriteChoice(&b); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); !strings.HasSuffix(s, "\nchoice       spread on gpu (GPUs 0, 1)\n") {
		t.Errorf("with a device name of the estimate's:\n%s", s)
	}
	pl.RunNotes.Add("ran %d", 1)
	if pl.Notes() != "ran 1\n" {
		t.Errorf("Notes = %q", pl.Notes())
	}
	if d := CPUDevice(); d.Kind != CPU || d.Parallelism < 1 || d.Memory <= 0 || !strings.Contains(d.Name, "threads") {
		t.Errorf("CPUDevice = %+v", d)
	}
}

// TestOnThreads: a plan's CPU says the threads the plan runs on; other
// devices stay as they are.
func TestOnThreads(t *testing.T) {
	d := CPUDevice().OnThreads(3)
	if d.Parallelism != 3 || !strings.HasSuffix(d.Name, ", 3 threads") || d.Kind != CPU {
		t.Fatalf("CPUDevice().OnThreads(3) = %+v", d)
	}
	g := Device{Kind: GPU, Name: "H100", Parallelism: 132}
	if got := g.OnThreads(3); got != g {
		t.Fatalf("a GPU on 3 threads became %+v", got)
	}
}
