package gpurt

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestWeigh checks the choice between the first GPU alone and every GPU:
// a named choice and a host of one are estimated as they are; on a host of
// several, both are estimated and the lower estimate wins.
func TestWeigh(t *testing.T) {
	for _, tc := range []struct {
		name     string
		choice   []int
		n        int
		run      float64 // seconds on one GPU, which divide
		fixed    float64 // seconds that do not divide
		wantGPUs []int
		wantEst  [][]int // the lists est is called with
		wantNote string
	}{
		{"named", []int{0, 1}, 2, 1, 0, []int{0, 1}, [][]int{{0, 1}}, ""},
		{"one GPU", nil, 1, 1, 0, nil, [][]int{nil}, ""},
		// The others' start, 0.13 s each, is more than they save.
		{"short", nil, 2, 0.2, 0, []int{0}, [][]int{{0}, nil}, "on GPU 0 alone: 200.0 ms against 230.0 ms on all 2 GPUs"},
		{"long", nil, 2, 1, 0, nil, [][]int{{0}, nil}, "on all 2 GPUs: 630.0 ms against 1.00 s on GPU 0 alone"},
		{"long on 4", nil, 4, 1, 0, nil, [][]int{{0}, nil}, "on all 4 GPUs: 640.0 ms against 1.00 s"},
		// What does not divide (a CPU part) keeps the first GPU alone.
		{"bounded", nil, 2, 0.2, 0.9, []int{0}, [][]int{{0}, nil}, "on GPU 0 alone: 1.10 s against 1.13 s on all 2 GPUs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls [][]int
			sp, err := weigh(tc.choice, tc.n, func(list []int) (string, float64, error) {
				calls = append(calls, list)
				n, wait := len(list), 0.0
				if list == nil {
					n, wait = tc.n, 0.13*float64(tc.n-1)
				}
				return fmt.Sprint(list), wait + tc.run/float64(n) + tc.fixed, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(calls, tc.wantEst, func(a, b []int) bool { return slices.Equal(a, b) && (a == nil) == (b == nil) }) {
				t.Errorf("estimated %v, want %v", calls, tc.wantEst)
			}
			if !slices.Equal(sp.GPUs, tc.wantGPUs) || (sp.GPUs == nil) != (tc.wantGPUs == nil) {
				t.Errorf("GPUs %v, want %v", sp.GPUs, tc.wantGPUs)
			}
			if sp.Plan != fmt.Sprint(sp.GPUs) {
				t.Errorf("plan %q is not the chosen GPUs' (%v)", sp.Plan, sp.GPUs)
			}
			if !strings.Contains(sp.Note, tc.wantNote) || (tc.wantNote == "") != (sp.Note == "") {
				t.Errorf("note %q, want %q", sp.Note, tc.wantNote)
			}
		})
	}
}

// TestWeighErrors: the first GPU's error is the run's; every GPU's error
// leaves the first GPU's estimate, saying why.
func TestWeighErrors(t *testing.T) {
	boom := errors.New("boom")
	_, err := weigh(nil, 2, func(list []int) (int, float64, error) { return 0, 5, boom })
	if !errors.Is(err, boom) {
		t.Errorf("first GPU failing: %v, want %v", err, boom)
	}
	sp, err := weigh(nil, 2, func(list []int) (int, float64, error) {
		if list == nil {
			return 0, 0, boom
		}
		return 1, 5, nil
	})
	if err != nil || !slices.Equal(sp.GPUs, []int{0}) || sp.Plan != 1 || !strings.Contains(sp.Note, "boom") {
		t.Errorf("every GPU failing: %+v, %v; want GPU 0's plan and the error in its note", sp, err)
	}
}

// TestPlanningGPUs: a named choice plans on itself, every GPU on the
// first.
func TestPlanningGPUs(t *testing.T) {
	if got := PlanningGPUs(nil); !slices.Equal(got, []int{0}) {
		t.Errorf("PlanningGPUs(nil) = %v, want [0]", got)
	}
	if got := PlanningGPUs([]int{1, 1}); !slices.Equal(got, []int{1, 1}) {
		t.Errorf("PlanningGPUs([1 1]) = %v", got)
	}
}

// TestContextsLeft: the GPUs after a list's first cost ContextCost each,
// less what their opening has run; open ones and further owners nothing.
func TestContextsLeft(t *testing.T) {
	const a, b, c = 1000, 1001, 1002 // ordinals no test opens for real
	now := time.Now()
	openMu.Lock()
	opened[b] = &Device{}
	opening[c] = &starting{since: now.Add(-100 * time.Millisecond)}
	openMu.Unlock()
	t.Cleanup(func() {
		openMu.Lock()
		delete(opened, b)
		delete(opening, c)
		openMu.Unlock()
	})
	for _, tc := range []struct {
		list []int
		want time.Duration
	}{
		{[]int{a}, 0},
		{[]int{b, a}, ContextCost},
		{[]int{a, a, b}, 0},
		{[]int{a, c}, ContextCost - 100*time.Millisecond},
		{[]int{c, a, 1003, 1003}, 2 * ContextCost},
	} {
		if got := contextsLeft(tc.list, now); got != tc.want {
			t.Errorf("contextsLeft(%v) = %v, want %v", tc.list, got, tc.want)
		}
	}
}

// TestPlanningDescriptions: a named choice is described by its set;
// every GPU, planned on the first, adds the host's others where the
// driver has counted more than the set holds (none on a machine without a
// GPU, where GuessDevices says 1).
func TestPlanningDescriptions(t *testing.T) {
	set := NewSet(&Device{info: Info{Ordinal: 0, Name: "G"}}, &Device{info: Info{Ordinal: 1, Name: "G"}})
	if got := PlanningName([]int{0, 1}, set); got != "GPUs 0, 1, G" {
		t.Errorf("PlanningName of a named choice = %q, want the set's", got)
	}
	if d, o, name := Spreading([]int{0, 1}, set); d != 2 || o != 2 || name != "GPUs 0, 1, G" {
		t.Errorf("Spreading of a named choice = %d GPUs, %d owners, %q", d, o, name)
	}
	first := NewSet(&Device{info: Info{Ordinal: 0, Name: "G"}})
	n := GuessDevices(nil)
	got := PlanningName(nil, first)
	if want := "GPU 0, G"; n <= 1 && got != want || n > 1 && got != fmt.Sprintf("%s, and %d more where they pay", want, n-1) {
		t.Errorf("PlanningName of every GPU, %d on the host: %q", n, got)
	}
	if d, o, _ := Spreading(nil, first); len(KnownDevices()) <= 1 && (d != 1 || o != 1) {
		t.Errorf("Spreading of every GPU with no driver's count = %d GPUs, %d owners, want the set's 1", d, o)
	}
}

// memos is a Memoizer for the tests.
type memos map[string]any

func (m memos) Memo(key string, build func() any) any {
	if v, ok := m[key]; ok {
		return v
	}
	m[key] = build()
	return m[key]
}

// TestWeighOnce: the weighing is made once per problem and key, RunGPUs
// finds its choice, a choice that names its GPUs is the run's, and a run
// never estimated takes every GPU.
func TestWeighOnce(t *testing.T) {
	p := memos{}
	calls := 0
	est := func(list []int) (int, float64, error) { calls++; return 7, 1, nil }
	for range 2 {
		sp, err := WeighOnce(p, "e", nil, est)
		if err != nil || sp.Plan != 7 {
			t.Fatalf("WeighOnce = %+v, %v", sp, err)
		}
	}
	want := 1
	if GuessDevices(nil) > 1 {
		want = 2 // the first GPU, then every GPU
	}
	if calls != want {
		t.Errorf("est called %d times, want %d", calls, want)
	}
	if _, err := WeighOnce(p, "f", nil, func([]int) (int, float64, error) { return 0, 0, errors.New("boom") }); err == nil {
		t.Error("an estimate's error is lost")
	}
	if got := RunGPUs(p, "f", nil); got != nil {
		t.Errorf("RunGPUs after a failed estimate = %v, want nil (every GPU)", got)
	}
	if got := RunGPUs(p, "e", []int{1, 1}); !slices.Equal(got, []int{1, 1}) {
		t.Errorf("RunGPUs of a named choice = %v", got)
	}
	if got := RunGPUs(p, "never", nil); got != nil {
		t.Errorf("RunGPUs never estimated = %v, want nil (every GPU)", got)
	}
	if _, err := WeighOnce(p, "never", nil, est); err == nil {
		t.Error("WeighOnce after RunGPUs took the key: no error")
	}
}

// TestNoted: a spread's note follows an estimate's detail, and nothing
// does where it has none.
func TestNoted(t *testing.T) {
	sp := Spread[int]{Note: "on GPU 0 alone: 1.0 ms against 2.0 ms on all 2 GPUs"}
	if got, want := sp.Noted("tiles"), "tiles; on GPU 0 alone: 1.0 ms against 2.0 ms on all 2 GPUs"; got != want {
		t.Errorf("Noted = %q, want %q", got, want)
	}
	if got := (Spread[int]{}).Noted("tiles"); got != "tiles" {
		t.Errorf("Noted without a note = %q, want %q", got, "tiles")
	}
}

// TestWeighedName: the first GPU alone, and every GPU of a host of two.
func TestWeighedName(t *testing.T) {
	first := Info{Name: "NVIDIA H200"}
	for devices, want := range map[int]string{1: "GPU 0, NVIDIA H200", 2: "2 GPUs, NVIDIA H200"} {
		if got := WeighedName(devices, first); got != want {
			t.Errorf("WeighedName(%d) = %q, want %q", devices, got, want)
		}
	}
}
