package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestWritePhases(t *testing.T) {
	t0 := time.Now()
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	phases := []phase{
		{name: "read", end: at(120)},
		{name: "preparation", end: at(346)},
		{name: "run", end: at(532.5), estimate: 236 * time.Millisecond},
		{name: "output", end: at(534.5)},
	}
	var b bytes.Buffer
	writePhases(&b, t0, nil, gpuSpan{first: at(0.4), last: at(408.5), opened: true})
	if b.Len() != 0 {
		t.Errorf("no phases marked: %q", b.String())
	}
	writePhases(&b, t0, phases, gpuSpan{first: at(0.4), last: at(408.5), opened: true, estimate: 350 * time.Millisecond})
	want := []string{
		"phase          estimate  measured  in the process",
		"  gpu start    350.0 ms  408.1 ms  0.4 ms to 408.5 ms, beside the phases below",
		"  read         -         120.0 ms  0.0 ms to 120.0 ms",
		"  preparation  -         226.0 ms  120.0 ms to 346.0 ms",
		"  run          236.0 ms  186.5 ms  346.0 ms to 532.5 ms (its estimate includes the wait for the GPUs and their exit)",
		"  output       -         2.0 ms    532.5 ms to 534.5 ms",
		"  exit         200.0 ms  -         after this account: the GPUs' teardown",
	}
	if got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Without a GPU: no start-up, no exit, and a run's estimate is its own.
	b.Reset()
	writePhases(&b, t0, phases, gpuSpan{})
	if s := b.String(); strings.Contains(s, "gpu start") || strings.Contains(s, "exit") || strings.Contains(s, "includes") ||
		!strings.Contains(s, "  run          236.0 ms  186.5 ms  346.0 ms to 532.5 ms\n") {
		t.Errorf("without a GPU:\n%s", s)
	}
	if got := shortDuration(12345 * time.Millisecond); got != "12.3 s" {
		t.Errorf("shortDuration(12.345 s) = %q", got)
	}
}
