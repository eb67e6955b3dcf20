package x86

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The expected bytes come from GNU as 2.40 (binutils), assembling the AT&T
// form in the comment; TestEncodeVP2IntersectDAs checks many more register
// forms against the as found on the machine.
func TestEncodeVP2IntersectD(t *testing.T) {
	for _, c := range []struct {
		att     string
		k, v    int
		rm      int
		mem     bool
		disp    int
		encoded []byte
	}{
		{"vp2intersectd %zmm1, %zmm0, %k2", 2, 0, 1, false, 0, []byte{0x62, 0xf2, 0x7f, 0x48, 0x68, 0xd1}},
		{"vp2intersectd %zmm9, %zmm8, %k4", 4, 8, 9, false, 0, []byte{0x62, 0xd2, 0x3f, 0x48, 0x68, 0xe1}},
		{"vp2intersectd %zmm17, %zmm16, %k6", 6, 16, 17, false, 0, []byte{0x62, 0xb2, 0x7f, 0x40, 0x68, 0xf1}},
		{"vp2intersectd %zmm31, %zmm30, %k0", 0, 30, 31, false, 0, []byte{0x62, 0x92, 0x0f, 0x40, 0x68, 0xc7}},
		{"vp2intersectd %zmm3, %zmm20, %k2", 2, 20, 3, false, 0, []byte{0x62, 0xf2, 0x5f, 0x40, 0x68, 0xd3}},
		{"vp2intersectd (%rdi), %zmm0, %k2", 2, 0, 7, true, 0, []byte{0x62, 0xf2, 0x7f, 0x48, 0x68, 0x17}},
		{"vp2intersectd 64(%rdi), %zmm0, %k2", 2, 0, 7, true, 64, []byte{0x62, 0xf2, 0x7f, 0x48, 0x68, 0x57, 0x01}},
		{"vp2intersectd -128(%r9), %zmm5, %k4", 4, 5, 9, true, -128, []byte{0x62, 0xd2, 0x57, 0x48, 0x68, 0x61, 0xfe}},
		{"vp2intersectd 8128(%rsi), %zmm19, %k6", 6, 19, 6, true, 8128, []byte{0x62, 0xf2, 0x67, 0x40, 0x68, 0x76, 0x7f}},
		{"vp2intersectd (%r11), %zmm7, %k2", 2, 7, 11, true, 0, []byte{0x62, 0xd2, 0x47, 0x48, 0x68, 0x13}},
	} {
		got := EncodeVP2IntersectD(c.k, c.v, c.rm, c.mem, c.disp)
		if !bytes.Equal(got, c.encoded) {
			t.Errorf("%s: encoded % x, want % x", c.att, got, c.encoded)
		}
	}
}

func TestEncodeVP2IntersectDRejects(t *testing.T) {
	for _, c := range []struct {
		name     string
		k, v, rm int
		mem      bool
		disp     int
	}{
		{"odd mask", 1, 0, 1, false, 0},
		{"mask 8", 8, 0, 1, false, 0},
		{"zmm32", 2, 32, 1, false, 0},
		{"base SP", 2, 0, 4, true, 0},
		{"base BP", 2, 0, 5, true, 0},
		{"base R12", 2, 0, 12, true, 0},
		{"base R13", 2, 0, 13, true, 0},
		{"unscaled displacement", 2, 0, 7, true, 4},
		{"displacement too large", 2, 0, 7, true, 128 * 64},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", c.name)
				}
			}()
			EncodeVP2IntersectD(c.k, c.v, c.rm, c.mem, c.disp)
		}()
	}
}

// TestEncodeVP2IntersectDAs checks the register form against GNU as, on
// register numbers that exercise every extension bit.
func TestEncodeVP2IntersectDAs(t *testing.T) {
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
		want = append(want, EncodeVP2IntersectD(c.k, c.v, c.rm, false, 0)...)
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
