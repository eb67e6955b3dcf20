// Package cpufeat says which x86 features xsect's SIMD kernels may use, in
// one place for every package that has them. It reads golang.org/x/sys/cpu
// (which checks that the operating system saves the AVX and AVX-512
// registers) and CPUID itself for what x/sys/cpu lacks: AVX512_VP2INTERSECT,
// the vendor and the size of the level 2 cache.
//
// The values are set once, before any package that imports this one is
// initialised, and never change. Off amd64, and with the purego build tag
// (the portable Go methods only), every one is false.
package cpufeat

//go:generate go run -C ../../asm ./cpufeat -out ../internal/cpufeat/cpuid_amd64.s -stubs ../internal/cpufeat/stubs_amd64.go -pkg cpufeat

// The features, named as Intel's manual names them.
var (
	AVX2   bool
	BMI2   bool
	POPCNT bool

	AVX512F         bool // the foundation; the others need it too
	AVX512BW        bool // byte and word lanes
	AVX512VL        bool // the AVX-512 instructions on 128 and 256 bits
	AVX512VBMI2     bool // VPCOMPRESSW among others
	AVX512VPOPCNTDQ bool // VPOPCNTQ

	// AVX512VP2INTERSECT is VP2INTERSECTD: Tiger Lake (microcoded there)
	// and Zen 5, not Sapphire Rapids.
	AVX512VP2INTERSECT bool

	// AMD reports an AMD CPU ("AuthenticAMD"): the kernels that are fastest
	// differ between AMD's and Intel's cores.
	AMD bool

	// Vendor is the vendor's CPUID string ("GenuineIntel", "AuthenticAMD"),
	// and Family and Model the processor's display family and model, as
	// /proc/cpuinfo gives them: with the L2 size they name the kind of core
	// a dispatch was measured on.
	Vendor        string
	Family, Model int

	// L2Size is the size in bytes of one core's level 2 cache, 0 where
	// CPUID does not say: whether a set is read from it or from further
	// away changes which kernel is fastest.
	L2Size int
)
