//go:build amd64 && !purego

package cpufeat

import "golang.org/x/sys/cpu"

func init() {
	x := &cpu.X86
	AVX2, BMI2, POPCNT = x.HasAVX2, x.HasBMI2, x.HasPOPCNT
	AVX512F, AVX512BW, AVX512VL = x.HasAVX512F, x.HasAVX512BW, x.HasAVX512VL
	AVX512VBMI2, AVX512VPOPCNTDQ = x.HasAVX512VBMI2, x.HasAVX512VPOPCNTDQ
	maxLeaf, ebx, ecx, edx := cpuid(0, 0)
	AMD = ebx == 0x68747541 && edx == 0x69746e65 && ecx == 0x444d4163 // "Auth" "enti" "cAMD"
	var v [12]byte
	for i, r := range [3]uint32{ebx, edx, ecx} {
		v[4*i], v[4*i+1], v[4*i+2], v[4*i+3] = byte(r), byte(r>>8), byte(r>>16), byte(r>>24)
	}
	Vendor = string(v[:])
	if maxLeaf >= 1 {
		eax, _, _, _ := cpuid(1, 0)
		Family, Model = int(eax>>8&0xf), int(eax>>4&0xf)
		if Family == 0xf {
			Family += int(eax >> 20 & 0xff)
		}
		if Family == 6 || Family >= 0xf {
			Model += int(eax>>16&0xf) << 4
		}
	}
	// CPUID.(EAX=7, ECX=0):EDX bit 8; HasAVX512F says that the OS saves
	// the AVX-512 state.
	if maxLeaf >= 7 && AVX512F {
		_, _, _, edx := cpuid(7, 0)
		AVX512VP2INTERSECT = edx&(1<<8) != 0
	}
	// CPUID.80000006H:ECX[31:16], the L2 size in KiB, on Intel's and
	// AMD's CPUs alike.
	if maxExt, _, _, _ := cpuid(0x80000000, 0); maxExt >= 0x80000006 {
		_, _, ecx, _ := cpuid(0x80000006, 0)
		L2Size = int(ecx>>16) << 10
	}
}
