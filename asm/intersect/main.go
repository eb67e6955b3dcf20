// Command intersect generates the amd64 assembly of package
// github.com/xsect/xsect/intersect: the SIMD block kernels (AVX2,
// AVX-512, VP2INTERSECT), the SIMD search kernels and the skip kernels.
//
// Run it through go generate in the intersect package:
//
//	cd ../asm && go run ./intersect -out ../intersect/intersect_amd64.s -stubs ../intersect/stubs_amd64.go -pkg intersect
package main

import . "github.com/mmcloughlin/avo/build"

func main() {
	ConstraintExpr("amd64,!purego")
	genBlockKernels()
	genSearchKernels()
	genSkipKernels()
	genLaneKernels()
	genLadderKernels()
	Generate()
}
