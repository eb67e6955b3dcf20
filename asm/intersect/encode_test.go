package main

import (
	"bytes"
	"testing"
)

// The expected bytes come from GNU as 2.40 (binutils), assembling the AT&T
// form in the comment.
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
		got := encodeVP2IntersectD(c.k, c.v, c.rm, c.mem, c.disp)
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
			encodeVP2IntersectD(c.k, c.v, c.rm, c.mem, c.disp)
		}()
	}
}
