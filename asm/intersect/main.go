// Command intersect generates the amd64 assembly of package
// github.com/xsect/xsect/intersect: the SIMD block kernels (AVX2,
// AVX-512, VP2INTERSECT), the SIMD galloping kernel and a CPUID helper.
//
// Run it through go generate in the intersect package:
//
//	cd ../asm && go run ./intersect -out ../intersect/intersect_amd64.s -stubs ../intersect/stubs_amd64.go -pkg intersect
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("amd64,!purego")
	genCPUID()
	genBlockKernels()
	genSearchKernels()
	Generate()
}

// genCPUID emits cpuid: x/sys/cpu has no flag for AVX512_VP2INTERSECT.
func genCPUID() {
	TEXT("cpuid", NOSPLIT, "func(leaf, subleaf uint32) (eax, ebx, ecx, edx uint32)")
	Doc("cpuid executes CPUID with EAX = leaf and ECX = subleaf.")
	Load(Param("leaf"), EAX)
	Load(Param("subleaf"), ECX)
	CPUID()
	Store(EAX, Return("eax"))
	Store(EBX, Return("ebx"))
	Store(ECX, Return("ecx"))
	Store(EDX, Return("edx"))
	RET()
}
