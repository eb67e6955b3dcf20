package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestEncodeVP2IntersectD checks the hand encoder against GNU as, on
// register numbers that exercise every extension bit.
func TestEncodeVP2IntersectD(t *testing.T) {
	as, err := exec.LookPath("as")
	if err != nil {
		t.Skip("GNU as not found")
	}
	objcopy, err := exec.LookPath("objcopy")
	if err != nil {
		t.Skip("objcopy not found")
	}
	type operands struct{ k, v, rm int }
	var cases []operands
	for _, k := range []int{0, 2, 4, 6} {
		for _, v := range []int{0, 1, 7, 8, 15, 16, 23, 31} {
			for _, rm := range []int{0, 5, 8, 13, 16, 24, 31} {
				cases = append(cases, operands{k, v, rm})
			}
		}
	}
	var src bytes.Buffer
	src.WriteString(".intel_syntax noprefix\n.text\n")
	var want []byte
	for _, c := range cases {
		fmt.Fprintf(&src, "vp2intersectd k%d, zmm%d, zmm%d\n", c.k, c.v, c.rm)
		want = append(want, encodeVP2IntersectD(c.k, c.v, c.rm)...)
	}
	dir := t.TempDir()
	s, o, bin := filepath.Join(dir, "x.s"), filepath.Join(dir, "x.o"), filepath.Join(dir, "x.bin")
	if err := os.WriteFile(s, src.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(as, "--64", "-o", o, s).CombinedOutput(); err != nil {
		t.Skipf("as cannot assemble VP2INTERSECTD: %v\n%s", err, out)
	}
	if out, err := exec.Command(objcopy, "-O", "binary", "--only-section=.text", o, bin).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, out)
	}
	got, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("as produced %d bytes, the encoder %d", len(got), len(want))
	}
	for i, c := range cases {
		g, w := got[6*i:6*i+6], want[6*i:6*i+6]
		if !bytes.Equal(g, w) {
			t.Errorf("vp2intersectd k%d, zmm%d, zmm%d: encoder % x, as % x", c.k, c.v, c.rm, w, g)
		}
	}
}
