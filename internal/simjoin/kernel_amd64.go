//go:build amd64 && !purego

package simjoin

//go:generate go run -C ../../asm ./simjoin -out ../internal/simjoin/kernel_amd64.s -stubs ../internal/simjoin/kernel_stubs_amd64.go -pkg simjoin

import (
	"unsafe"

	"github.com/xsect/xsect/internal/cpufeat"
)

// walkPositional (see kernel.go) by the kernel, which keeps every value in a
// register where the compiled loop spills half of them to the stack. Its
// memory stays within cnt and cands (stop is lowered to their length),
// and within need and touched as walkPositional's callers provide them.
func walkPositional(ent []entry, stop uint32, cnt []uint32, cands []cand, need, touched []uint32, aq, q uint32) (int, int) {
	// The kernel itself returns at once for no entries or a stop of 0.
	// cands is as long as cnt (getProber).
	stop = min(stop, uint32(len(cnt)))
	return walkPositionalAMD64((*uint32)(unsafe.Pointer(unsafe.SliceData(ent))), len(ent), stop, unsafe.SliceData(cnt),
		(*uint64)(unsafe.Pointer(unsafe.SliceData(cands))), unsafe.SliceData(need), unsafe.SliceData(touched), aq, q)
}

// walkPairs (see kernel.go) by the kernel. Its memory stays within pcnt
// (stop is lowered to its end), and within need and touched as
// walkPairs' callers provide them; every record listed is base or later.
func walkPairs(ent []entry, stop uint32, pcnt []uint32, base uint32, need, touched []uint32, rest, first uint32) (int, int) {
	stop = min(stop, base+uint32(len(pcnt)))
	return walkPairsAMD64((*uint32)(unsafe.Pointer(unsafe.SliceData(ent))), len(ent), stop, unsafe.SliceData(pcnt), base,
		unsafe.SliceData(need), unsafe.SliceData(touched), rest, first)
}

// prefetchUnits asks the caches for the info and the bitmaps of the units
// ids (see probe). A prefetch never faults: any ids are safe.
func prefetchUnits(ids []uint32, info []unitInfo, bits []uint64, words int) {
	prefetchUnitsAMD64(unsafe.SliceData(ids), len(ids), (*uint32)(unsafe.Pointer(unsafe.SliceData(info))), unsafe.SliceData(bits), words)
}

// prefetchHeads asks the caches for the next entry of the lists of elems,
// a probe's sorted prefix (see probe): lists[e] is read for each, within
// bounds if the last, the largest, is.
func prefetchHeads(elems []uint32, lists []span, ent []entry) {
	if len(elems) == 0 {
		return
	}
	_ = lists[elems[len(elems)-1]]
	prefetchHeadsAMD64(unsafe.SliceData(elems), len(elems), (*uint64)(unsafe.Pointer(unsafe.SliceData(lists))),
		(*uint32)(unsafe.Pointer(unsafe.SliceData(ent))))
}

// filterCands (see kernel.go) by the kernel for the width of the bitmaps,
// where the CPU has POPCNT. Its memory stays within the arrays as probe
// passes them: ids are units, pfx[b] >= 1 for their sizes b, out has room
// for every id.
func filterCands(ids, cnt []uint32, cands []cand, info []unitInfo, bits []uint64, words int, need, pfx, idxPrefix, xr []uint32, a uint32, positional bool, xbits []uint64, out []survivor) int {
	kernel := filterKernels[words&15]
	if kernel == nil || len(ids) == 0 {
		return filterCandsGeneric(ids, cnt, cands, info, bits, words, need, pfx, idxPrefix, xr, a, positional, xbits, out)
	}
	_ = out[len(ids)-1]
	var xb [8]uint64
	copy(xb[:], xbits)
	return kernel(unsafe.SliceData(ids), len(ids), unsafe.SliceData(cnt), (*uint64)(unsafe.Pointer(unsafe.SliceData(cands))),
		(*uint32)(unsafe.Pointer(unsafe.SliceData(info))), unsafe.SliceData(bits), unsafe.SliceData(need), unsafe.SliceData(pfx),
		unsafe.SliceData(idxPrefix), unsafe.SliceData(xr), a, uint32(b2u(positional)), &xb, (*uint32)(unsafe.Pointer(unsafe.SliceData(out))))
}

// filterKernels are the kernels by bitmap width in words (nil: none).
var filterKernels = func() (k [16]func(ids *uint32, n int, cnt *uint32, cands *uint64, info *uint32, bits *uint64, need *uint32, pfx *uint32, idxPrefix *uint32, xr *uint32, a uint32, positional uint32, xbits *[8]uint64, out *uint32) int) {
	if cpufeat.POPCNT {
		k[1], k[2], k[4], k[8] = filterCands1AMD64, filterCands2AMD64, filterCands4AMD64, filterCands8AMD64
	}
	return k
}()

// filterPairs (see kernel.go) by the kernel for the width of the bitmaps,
// where the CPU has POPCNT. Its memory stays within the arrays as
// verifyPairs passes them: ids are units of [base, base+len(pcnt)), out
// has room for every id.
func filterPairs(ids, pcnt []uint32, base uint32, info []unitInfo, bits []uint64, words int, need []uint32, a uint32, exact bool, xbits []uint64, out []pairSurvivor) int {
	kernel := pairKernels[words&15]
	if kernel == nil || len(ids) == 0 {
		return filterPairsGeneric(ids, pcnt, base, info, bits, words, need, a, exact, xbits, out)
	}
	_ = out[len(ids)-1]
	var xb [8]uint64
	copy(xb[:], xbits)
	return kernel(unsafe.SliceData(ids), len(ids), unsafe.SliceData(pcnt), base, (*uint32)(unsafe.Pointer(unsafe.SliceData(info))),
		unsafe.SliceData(bits), unsafe.SliceData(need), a, b2u(exact), &xb, (*uint32)(unsafe.Pointer(unsafe.SliceData(out))))
}

// pairKernels are filterPairs' kernels by bitmap width in words (nil:
// none).
var pairKernels = func() (k [16]func(ids *uint32, n int, pcnt *uint32, base uint32, info *uint32, bits *uint64, need *uint32, a uint32, exact uint32, xbits *[8]uint64, out *uint32) int) {
	if cpufeat.POPCNT {
		k[1], k[2], k[4], k[8] = filterPairs1AMD64, filterPairs2AMD64, filterPairs4AMD64, filterPairs8AMD64
	}
	return k
}()
