// Command cpufeat generates the amd64 assembly of package
// github.com/xsect/xsect/internal/cpufeat: a CPUID function, since
// x/sys/cpu has no flag for AVX512_VP2INTERSECT and does not say who made
// the CPU.
//
// Run it through go generate in the cpufeat package:
//
//	go run -C ../../asm ./cpufeat -out ../internal/cpufeat/cpuid_amd64.s -stubs ../internal/cpufeat/stubs_amd64.go -pkg cpufeat
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("amd64,!purego")
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
	Generate()
}
