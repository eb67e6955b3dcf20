//go:build amd64 && !purego

package batmap

//go:generate sh -c "cd ../asm && go run ./batmap -out ../batmap/count_amd64.s -stubs ../batmap/stubs_amd64.go -pkg batmap"

import "github.com/xsect/xsect/internal/cpufeat"

// hasAVX512 reports what the assembly kernels need: AVX-512F and BW
// (Skylake-SP, Zen 4 and later), BMI2 and POPCNT.
var hasAVX512 = cpufeat.AVX512F && cpufeat.AVX512BW && cpufeat.BMI2 && cpufeat.POPCNT

func init() {
	if hasAVX512 {
		kernels = [3]kernel{{count1x8, count4x8}, {count1x16, count4x16}, {count1x32, count4x32}}
		kernelName = "avx512"
	}
}
