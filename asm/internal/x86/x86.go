// Package x86 holds what xsect's assembly generators share:
// VP2INTERSECTD, which neither avo nor the Go assembler knows, emitted as
// bytes, and the loading of arguments (LoadGP, Arg).
package x86

import (
	"fmt"
	"strings"

	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// The instruction (Intel SDM, "VP2INTERSECTD/VP2INTERSECTQ") is
//
//	EVEX.512.F2.0F38.W0 68 /r   VP2INTERSECTD k1+1, zmm2, zmm3/m512/m32bcst
//
// It writes a pair of mask registers: k1 (even) gets the lanes of zmm2 that
// equal some lane of zmm3, k1+1 the lanes of zmm3 that equal some lane of
// zmm2. The four-byte EVEX prefix 62 P0 P1 P2 is
//
//	P0 = R̄ X̄ B̄ R̄' 0 0 m m   R̄, R̄' = 1 (k1 is in ModRM.reg, < 8); X̄ B̄ = inverted
//	                          bits 4 and 3 of the zmm3 number (X̄ = 1 for a
//	                          memory operand without index, B̄ = inverted bit 3
//	                          of the base register); mm = 10 (0F38)
//	P1 = W v̄ v̄ v̄ v̄ 1 p p    W = 0; vvvv = inverted low 4 bits of zmm2; pp = 11 (F2)
//	P2 = z L' L b V̄' a a a   z = 0, L'L = 10 (512 bits), b = 0, V̄' = inverted
//	                          bit 4 of zmm2, aaa = 000 (no write mask)
//
// then the opcode 68 and ModRM = mod:2 reg:3 rm:3 with reg = k1 and rm the
// low three bits of zmm3 (mod = 11) or of the base register (mod = 00, or
// 01 with an 8-bit displacement scaled by 64, EVEX's disp8*N compression).
// For example VP2INTERSECTD K2, Z0, Z1 (Go operand order: zmm3, zmm2, k1)
// is 62 F2 7F 48 68 D1; x86_test.go checks the encoder against GNU as.

// gprNumber is the hardware number of a general purpose register.
var gprNumber = map[string]int{
	"AX": 0, "CX": 1, "DX": 2, "BX": 3, "SP": 4, "BP": 5, "SI": 6, "DI": 7,
	"R8": 8, "R9": 9, "R10": 10, "R11": 11, "R12": 12, "R13": 13, "R14": 14, "R15": 15,
}

// regNumber returns the hardware number of a physical vector or mask
// register from its Go name (Z17 -> 17, K2 -> 2).
func regNumber(r reg.Register, prefix string) int {
	name := r.Asm()
	var n int
	if !strings.HasPrefix(name, prefix) {
		panic("vp2intersectd: want a " + prefix + " register, got " + name)
	}
	if _, err := fmt.Sscanf(name[len(prefix):], "%d", &n); err != nil {
		panic(err)
	}
	return n
}

// EncodeVP2IntersectD returns the bytes of VP2INTERSECTD k, zmm(v), rm
// where rm is the register zmm(rm) or, when mem is set, the memory operand
// disp(base) with base a general purpose register and disp a multiple of
// 64 in [-8192, 8128].
func EncodeVP2IntersectD(k, v, rm int, mem bool, disp int) []byte {
	if k%2 != 0 || k < 0 || k > 6 {
		panic("vp2intersectd: the mask pair must start at K0, K2, K4 or K6")
	}
	if v < 0 || v > 31 {
		panic("vp2intersectd: bad zmm2")
	}
	p0 := byte(0b1001_0010) // R̄ = 1, R̄' = 1, mm = 10
	var modrm byte
	var tail []byte
	if mem {
		if rm < 0 || rm > 15 {
			panic("vp2intersectd: bad base register")
		}
		switch rm & 7 {
		case 4, 5: // SP/R12 need a SIB byte, BP/R13 with mod 00 mean RIP-relative.
			panic("vp2intersectd: base register needs SIB or RIP-relative encoding")
		}
		if disp%64 != 0 || disp < -128*64 || disp > 127*64 {
			panic("vp2intersectd: displacement must be a multiple of 64 within disp8*64")
		}
		p0 |= 1 << 6 // X̄ = 1: no index register
		if rm&8 == 0 {
			p0 |= 1 << 5
		}
		if disp == 0 {
			modrm = byte(k<<3 | rm&7)
		} else {
			modrm = byte(0b01<<6 | k<<3 | rm&7)
			tail = []byte{byte(int8(disp / 64))}
		}
	} else {
		if rm < 0 || rm > 31 {
			panic("vp2intersectd: bad zmm3")
		}
		if rm&16 == 0 {
			p0 |= 1 << 6
		}
		if rm&8 == 0 {
			p0 |= 1 << 5
		}
		modrm = byte(0b11<<6 | k<<3 | rm&7)
	}
	p1 := byte((^v&15)<<3 | 0b111)
	p2 := byte(0b0100_0000)
	if v&16 == 0 {
		p2 |= 1 << 3
	}
	return append([]byte{0x62, p0, p1, p2, 0x68, modrm}, tail...)
}

// emitBytes adds raw instruction bytes to the active function, telling
// avo's liveness analysis what the instruction reads and writes.
func emitBytes(bs []byte, inputs, outputs []operand.Op) {
	for n, b := range bs {
		in := &ir.Instruction{Opcode: "BYTE", Operands: []operand.Op{operand.U8(b)}}
		if n == 0 {
			in.Inputs, in.Outputs = inputs, outputs
		}
		build.Instruction(in)
	}
}

// VP2INTERSECTD emits VP2INTERSECTD in Go operand order: src (a physical
// zmm register, or disp(base) memory), v (a physical zmm register) and k
// (the even mask register of the pair it writes).
func VP2INTERSECTD(src operand.Op, v, k reg.Register) {
	kn, vn := regNumber(k, "K"), regNumber(v, "Z")
	k1 := []reg.Register{reg.K1, reg.K3, reg.K5, reg.K7}[kn/2]
	switch s := src.(type) {
	case reg.Register:
		build.Commentf("VP2INTERSECTD %s, %s, %s (writes %s, %s)", s.Asm(), v.Asm(), k.Asm(), k.Asm(), k1.Asm())
		emitBytes(EncodeVP2IntersectD(kn, vn, regNumber(s, "Z"), false, 0), []operand.Op{s, v}, []operand.Op{k, k1})
	case operand.Mem:
		if s.Index != nil || s.Symbol.Name != "" {
			panic("vp2intersectd: memory operand must be disp(base)")
		}
		base, ok := gprNumber[s.Base.Asm()]
		if !ok {
			panic("vp2intersectd: unknown base " + s.Base.Asm())
		}
		build.Commentf("VP2INTERSECTD %s, %s, %s (writes %s, %s)", s.Asm(), v.Asm(), k.Asm(), k.Asm(), k1.Asm())
		emitBytes(EncodeVP2IntersectD(kn, vn, base, true, s.Disp), []operand.Op{s.Base, v}, []operand.Op{k, k1})
	default:
		panic("vp2intersectd: bad source operand")
	}
}

// AlignLoop pads the function being built with NOPs up to a 64-byte
// boundary: a hot loop's label placed after it starts a cache line. The
// Go assembler aligns a function to 32 bytes only, so without it where a
// loop falls in the lines moves with the code linked before the function,
// and a kernel's speed with it (docs/PERFORMANCE.md). The padding runs
// once, when the code falls into the loop; put it where nothing jumps.
func AlignLoop() {
	build.Instruction(&ir.Instruction{Opcode: "PCALIGN", Operands: []operand.Op{operand.U8(64)}})
}
