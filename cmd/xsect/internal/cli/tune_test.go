package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xsect/xsect/intersect"
	"github.com/xsect/xsect/intersect/tune"
)

// TestTune measures a small profile, saves it, and checks that the next
// command loads it; then the ways a profile is not loaded.
func TestTune(t *testing.T) {
	t.Cleanup(func() { intersect.UseProfile(tune.BuiltIn()) })
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache) // os.UserCacheDir on Linux
	t.Setenv("HOME", cache)           // and elsewhere
	t.Setenv(tune.Env, "")
	def, err := tune.DefaultPath()
	if err != nil {
		t.Skipf("no cache folder here: %v", err)
	}

	code, out, errOut := run(t, "tune", "--show")
	if code != 0 || !strings.Contains(out, "built-in (no profile at "+def) || errOut != "" {
		t.Fatalf("tune --show without a profile: %d\n%s%s", code, out, errOut)
	}

	raw := filepath.Join(t.TempDir(), "raw.txt")
	code, out, errOut = run(t, "tune", "--sizes", "4096,16384", "--rounds", "1", "--min-time", "1ms", "--force", "--raw", raw)
	if code != 0 || !strings.Contains(out, "saved to "+def) || !strings.Contains(out, "larger set 16384:") {
		t.Fatalf("tune: %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"measured ", "built-in "} {
		if !strings.Contains(out, "\n"+want) {
			t.Errorf("tune's check has no line for %q:\n%s", want, out)
		}
	}
	if data, err := os.ReadFile(raw); err != nil || !strings.Contains(string(data), "\nfit\t4096\t") || !strings.Contains(string(data), "\ncheck\t") {
		t.Errorf("--raw wrote %q, %v", data, err)
	}
	saved, err := tune.Load(def)
	if err != nil {
		t.Fatalf("the saved profile: %v", err)
	}

	// The next command follows it.
	intersect.UseProfile(tune.BuiltIn())
	code, out, _ = run(t, "tune", "--show")
	if code != 0 || !strings.Contains(out, "measured on this CPU ("+def+")") {
		t.Fatalf("tune --show with the saved profile: %d\n%s", code, out)
	}
	if got := intersect.ActiveProfile(); got.Source != "measured" || len(got.Tiers) != len(saved.Tiers) || got.Tiers[0].Values != 4096 {
		t.Errorf("the dispatch in use: %+v, want the saved %+v", got, saved)
	}

	// off: the built-in dispatch.
	t.Setenv(tune.Env, "off")
	if code, out, _ = run(t, "tune", "--show"); code != 0 || !strings.Contains(out, "built-in ("+tune.Env+"=off)") {
		t.Errorf("tune --show with %s=off: %d\n%s", tune.Env, code, out)
	}
	if got := intersect.ActiveProfile(); got.Source != "built-in" {
		t.Errorf("%s=off: the dispatch in use is %q", tune.Env, got.Source)
	}

	// A named file that is not there is an error.
	t.Setenv(tune.Env, filepath.Join(cache, "none.json"))
	if code, _, errOut = run(t, "tune", "--show"); code != ExitUsage || !strings.Contains(errOut, tune.Env) {
		t.Errorf("a missing %s file: %d, %q", tune.Env, code, errOut)
	}

	// Another CPU's profile at the default path: the built-in dispatch,
	// quietly; a broken one: the built-in dispatch, with a warning.
	t.Setenv(tune.Env, "")
	other := saved
	other.CPU = "another CPU"
	if err := tune.Save(def, other); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run(t, "tune", "--show")
	if code != 0 || !strings.Contains(out, "was measured on another CPU") || errOut != "" {
		t.Errorf("another CPU's profile: %d\n%s%s", code, out, errOut)
	}
	if err := os.WriteFile(def, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run(t, "tune", "--show")
	if code != 0 || !strings.Contains(out, "is broken") || !strings.Contains(errOut, "ignoring the pairwise profile") {
		t.Errorf("a broken profile: %d\n%s%s", code, out, errOut)
	}
	if got := intersect.ActiveProfile(); got.Source != "built-in" {
		t.Errorf("a broken profile: the dispatch in use is %q", got.Source)
	}

	if code, _, _ = run(t, "tune", "--sizes", "100"); code != ExitUsage {
		t.Errorf("tune --sizes 100: exit %d, want %d", code, ExitUsage)
	}
	if code, _, _ = run(t, "tune", "extra"); code != ExitUsage {
		t.Errorf("tune extra: exit %d, want %d", code, ExitUsage)
	}
}
