package x86

import (
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// LoadGP loads the argument name of the function being built into a new
// general-purpose register.
func LoadGP(name string) reg.GPVirtual {
	r := build.GP64()
	build.Load(build.Param(name), r)
	return r
}

// Arg returns the stack slot of the argument name, as a memory operand:
// a loop can read its rarely used arguments from there and keep its
// registers for the rest.
func Arg(name string) operand.Mem {
	b, err := build.Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}
