package cuda

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestErrors(t *testing.T) {
	if err := check("cuX", Success); err != nil {
		t.Fatalf("check(Success) = %v", err)
	}
	err := check("cuMemAlloc_v2", ErrorOutOfMemory)
	if got := err.Error(); got != "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)" {
		t.Errorf("error text %q", got)
	}
	wrapped := fmt.Errorf("context: %w", err)
	if !IsOutOfMemory(wrapped) || !errors.Is(wrapped, &Error{Code: ErrorOutOfMemory}) || errors.Is(wrapped, &Error{Code: ErrorNoDevice}) {
		t.Error("errors.Is / IsOutOfMemory do not see through wrapping")
	}
	if n := ErrorName(12345); !strings.Contains(n, "12345") {
		t.Errorf("ErrorName(12345) = %q", n)
	}
}

func TestStrings(t *testing.T) {
	b := cString("abc")
	if len(b) != 4 || b[3] != 0 {
		t.Fatalf("cString = %v", b)
	}
	if s := goString(&b[0]); s != "abc" {
		t.Errorf("goString = %q", s)
	}
	if s := goString(nil); s != "" {
		t.Errorf("goString(nil) = %q", s)
	}
	if s := cStringBytes([]byte("H100\x00junk")); s != "H100" {
		t.Errorf("cStringBytes = %q", s)
	}
	if s := cStringBytes([]byte("full")); s != "full" {
		t.Errorf("cStringBytes without NUL = %q", s)
	}
}

func TestLoadWithoutDriver(t *testing.T) {
	err := Load()
	if err == nil {
		t.Skip("a CUDA driver is present")
	}
	if !strings.Contains(err.Error(), "libcuda") && !strings.Contains(err.Error(), "CUDA") {
		t.Errorf("Load() = %v, which does not say what is missing", err)
	}
	if Load() != err {
		t.Error("Load is not cached")
	}
}
