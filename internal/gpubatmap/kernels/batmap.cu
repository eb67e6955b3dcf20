// BATMAP all-pairs counts on the GPU (Amossen & Pagh, section III-B), as a
// GEMM with a custom operator: a block of 256 threads owns a tile of
// 128 × 128 pairs (rows: batmaps of one row group, columns: of one column
// group, every row at most as wide as every column), stages 16-word
// slices of its 128 + 128 batmaps in shared memory with cp.async (two
// stages: the next slice is in flight while the current one is compared),
// and each thread accumulates an 8 × 8 micro-tile of pairs in registers:
// rows ty + 16i, columns tx + 16j, so that the 16 threads of a half-warp
// read 16 different columns from 16 different banks.
//
// The comparison of two 32-bit words x, y of entries of EB bits, H the
// indicator bits, L = ~H:
//
//	t = ((x ^ y) & L) + L    entry's top bit set iff its code bits differ
//	z = ~t & (x | y) & H     top bit set iff the codes are equal and an
//	                         indicator is set: the entry pair matches
//
// (three LOP3 and one IADD3), and the matches are counted: 8-bit entries
// by one DP4A of z with 0x01010101, which adds 128 per match (the count is
// shifted down at the end; the host picks the POPC variant when a set has
// 2^25 elements or more), 16-bit entries by POPC, 32-bit ones by a shift.
//
// Narrow batmaps wrap: a row of w words faces column word k at k mod w
// (widths divide one another). Words past the column width (the last
// slice of a batmap that is not a whole number of slices) are staged as
// zeros on both sides, which never match.
//
// Insertions that failed (section III-C) are corrected exactly in the
// epilogue, for the rare pairs with a failed element: the failed elements
// of each batmap (fel, by position through foff, with their hashes π_1
// and π_2 in fh) are looked up in the other batmap at two of their three
// positions, and those failed in both are counted by a merge, as
// batmap.Batmaps.Correction does.
//
// Output, by mode:
//   0 (dense): out[(p - rowBase) * ldo + (q - rowBase)] = count for every
//     pair of positions p < q of the tile.
//   1 (pairs): pairs whose count reaches min(need[p], need[q]) are
//     compacted: the block reserves room with one atomicAdd on counters[0]
//     and records its run in runs[blockIdx.x] = (start, length). An entry
//     is r << 25 | c << 18 | count (r, c: row and column in the tile), or,
//     with wide, two words r << 16 | c and count.
//   2 (count): qualifying pairs are only counted, in counters[1].
// counters[2] is set if the output would pass cap entries (the host
// planned it not to).
//
// Compiled by NVRTC: self-contained, no standard headers.

typedef unsigned int u32;
typedef unsigned long long u64;

#define TS 128             // tile side
#define KC 16              // words per staged slice
#define LD (KC + 2)        // shared row stride in words: 8-byte aligned rows, no bank conflicts
#define NT 256             // threads per block
#define TM 8               // micro-tile side
#define STAGE (2 * TS * LD) // words of one stage: rows, then columns

__device__ __forceinline__ u32 sharedAddr(const void* p) {
	u32 a;
	asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
	return a;
}

// copy8 copies 8 bytes from global src to shared dst, or zeroes dst when
// bytes is 0 (src is then not read).
__device__ __forceinline__ void copy8(u32 dst, const void* src, u32 bytes) {
	asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}

__device__ __forceinline__ void commitCopies() { asm volatile("cp.async.commit_group;" ::: "memory"); }

// waitCopies waits for all committed groups of copies but the newest.
__device__ __forceinline__ void waitCopies() { asm volatile("cp.async.wait_group 1;" ::: "memory"); }

__device__ __forceinline__ u32 dp4a(u32 a, u32 b, u32 c) {
	u32 d;
	asm("dp4a.u32.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
	return d;
}

// CNT: how matches are counted. 0: DP4A, 128 per match (8-bit entries);
// 1: POPC; 2: shift (32-bit entries).
template <int EB, int CNT>
__device__ __forceinline__ u32 step(u32 acc, u32 x, u32 y) {
	const u32 H = EB == 8 ? 0x80808080u : EB == 16 ? 0x80008000u : 0x80000000u;
	const u32 L = ~H;
	const u32 t = ((x ^ y) & L) + L;
	const u32 z = ~t & (x | y) & H;
	if (CNT == 0) return dp4a(z, 0x01010101u, acc);
	if (CNT == 1) return acc + __popc(z);
	return acc + (z >> 31);
}

template <int CNT>
__device__ __forceinline__ u32 finish(u32 acc) {
	return CNT == 0 ? acc >> 7 : acc;
}

// stage queues the copies of slice k0 .. k0+KC-1 of the tile's rows and
// columns into sm. Rows wrap at their width wr; words at or past the
// column width wc are zero on both sides.
__device__ __forceinline__ void stage(u32* sm, const u32* words, u64 rBase, u32 rLen, u32 wr, u64 cBase, u32 cLen,
	u32 wc, u32 k0) {
#pragma unroll
	for (int it = 0; it < TS * KC / 2 / NT; it++) {
		const u32 e = threadIdx.x + it * NT;
		const u32 r = e / (KC / 2);
		const u32 kk = (e % (KC / 2)) * 2;
		const u32 k = k0 + kk;
		const u32* src = words;
		u32 bytes = 0;
		if (r < rLen && k < wc) {
			src = words + rBase + (u64)r * wr + (k < wr ? k : k % wr);
			bytes = 8;
		}
		copy8(sharedAddr(sm + r * LD + kk), src, bytes);
		src = words;
		bytes = 0;
		if (r < cLen && k < wc) {
			src = words + cBase + (u64)r * wc + k;
			bytes = 8;
		}
		copy8(sharedAddr(sm + TS * LD + r * LD + kk), src, bytes);
	}
}

// holds reports whether the batmap of w words at word offset base stores
// the element of hashes h (π_1, π_2): its code at its position in table 1
// or 2 (it is stored in two of three tables, so one of these holds it).
template <int EB>
__device__ bool holds(const u32* words, u64 base, u32 w, uint2 h, u32 shift, u32 r0) {
	const u64 per = 32 / EB;
	const u64 r = (u64)w * per / 3;
	const u32 codeMask = EB == 32 ? 0x7fffffffu : (1u << (EB - 1)) - 1;
#pragma unroll
	for (int t = 0; t < 2; t++) {
		const u32 hv = t == 0 ? h.x : h.y;
		const u64 v = hv % r;
		const u64 idx = 3 * (u64)r0 * (v >> shift) + (u64)t * r0 + (v & (r0 - 1));
		const u32 e = words[base + idx / per] >> ((u32)(idx % per) * EB);
		if ((e & codeMask) == (hv >> shift) + 1) return true;
	}
	return false;
}

// correction returns what the comparison of batmaps p and q misses (at
// word offsets bp, bq, of widths wp, wq words): the failed elements of
// each that the other holds, and those failed in both.
template <int EB>
__device__ __noinline__ u32 correction(const u32* words, const u32* foff, const u32* fel, const uint2* fh, u32 p,
	u64 bp, u32 wp, u32 q, u64 bq, u32 wq, u32 shift, u32 r0) {
	const u32 p0 = foff[p], p1 = foff[p + 1], q0 = foff[q], q1 = foff[q + 1];
	u32 n = 0;
	for (u32 k = p0; k < p1; k++) n += holds<EB>(words, bq, wq, fh[k], shift, r0);
	for (u32 k = q0; k < q1; k++) n += holds<EB>(words, bp, wp, fh[k], shift, r0);
	for (u32 a = p0, b = q0; a < p1 && b < q1;) {
		const u32 x = fel[a], y = fel[b];
		n += x == y;
		a += x <= y;
		b += y <= x;
	}
	return n;
}

template <int EB, int CNT>
__device__ __forceinline__ void tileCounts(const u32* __restrict__ words, const uint4* __restrict__ ginfo,
	const u64* __restrict__ gbase, const uint2* __restrict__ tiles, const u32* __restrict__ need,
	const u32* __restrict__ foff, const u32* __restrict__ fel, const uint2* __restrict__ fh, u32 shift, u32 r0,
	u32 mode, u32 wide, u32 rowBase, u64 ldo, u32* __restrict__ out, u64 cap, uint2* __restrict__ runs,
	u64* counters) {
	__shared__ __align__(16) u32 sm[2 * STAGE];
	__shared__ u32 scan[NT / 32];
	__shared__ u32 blockStart;

	const uint2 tl = tiles[blockIdx.x];
	const uint4 gr = ginfo[tl.x], gc = ginfo[tl.y]; // start, len, width, -
	const u64 rBase = gbase[tl.x], cBase = gbase[tl.y];
	const u32 wr = gr.z, wc = gc.z;
	const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;

	u32 acc[TM][TM];
#pragma unroll
	for (int i = 0; i < TM; i++)
#pragma unroll
		for (int j = 0; j < TM; j++) acc[i][j] = 0;

	const u32 slices = (wc + KC - 1) / KC;
	stage(sm, words, rBase, gr.y, wr, cBase, gc.y, wc, 0);
	commitCopies();
	for (u32 s = 0; s < slices; s++) {
		if (s + 1 < slices) stage(sm + ((s + 1) & 1) * STAGE, words, rBase, gr.y, wr, cBase, gc.y, wc, (s + 1) * KC);
		commitCopies(); // possibly empty: the wait below is always for all but the newest
		waitCopies();
		__syncthreads();
		const u32* A = sm + (s & 1) * STAGE + ty * LD;
		const u32* B = sm + (s & 1) * STAGE + TS * LD + tx * LD;
#pragma unroll
		for (int k = 0; k < KC; k += 2) {
			uint2 a[TM], b[TM];
#pragma unroll
			for (int i = 0; i < TM; i++) a[i] = *(const uint2*)(A + 16 * i * LD + k);
#pragma unroll
			for (int j = 0; j < TM; j++) b[j] = *(const uint2*)(B + 16 * j * LD + k);
#pragma unroll
			for (int i = 0; i < TM; i++)
#pragma unroll
				for (int j = 0; j < TM; j++) {
					acc[i][j] = step<EB, CNT>(acc[i][j], a[i].x, b[j].x);
					acc[i][j] = step<EB, CNT>(acc[i][j], a[i].y, b[j].y);
				}
		}
		__syncthreads();
	}

	// Epilogue: the counts, exact; the rows and columns with failed
	// elements (bits of rowFail, colFail) get their corrections.
	u32 rowFail = 0, colFail = 0;
#pragma unroll
	for (int i = 0; i < TM; i++) {
		const u32 r = ty + 16 * i, c = tx + 16 * i;
		if (r < gr.y && foff[gr.x + r] != foff[gr.x + r + 1]) rowFail |= 1u << i;
		if (c < gc.y && foff[gc.x + c] != foff[gc.x + c + 1]) colFail |= 1u << i;
	}
	if (rowFail | colFail) {
#pragma unroll
		for (int i = 0; i < TM; i++) {
			const u32 r = ty + 16 * i;
#pragma unroll
			for (int j = 0; j < TM; j++) {
				const u32 c = tx + 16 * j;
				if (((rowFail >> i) | (colFail >> j)) & 1 && r < gr.y && c < gc.y && gr.x + r < gc.x + c) {
					const u32 add = correction<EB>(words, foff, fel, fh, gr.x + r, rBase + (u64)r * wr, wr, gc.x + c,
						cBase + (u64)c * wc, wc, shift, r0);
					acc[i][j] += CNT == 0 ? add << 7 : add;
				}
			}
		}
	}
	if (mode == 0) {
#pragma unroll
		for (int i = 0; i < TM; i++) {
			const u32 r = ty + 16 * i;
			if (r >= gr.y) continue;
			const u32 p = gr.x + r;
			u32* row = out + (u64)(p - rowBase) * ldo;
#pragma unroll
			for (int j = 0; j < TM; j++) {
				const u32 c = tx + 16 * j;
				const u32 q = gc.x + c;
				if (c < gc.y && p < q) row[q - rowBase] = finish<CNT>(acc[i][j]);
			}
		}
		return;
	}
	u32 nr[TM], nc[TM];
#pragma unroll
	for (int i = 0; i < TM; i++) {
		const u32 r = ty + 16 * i, c = tx + 16 * i;
		nr[i] = r < gr.y ? need[gr.x + r] : 0;
		nc[i] = c < gc.y ? need[gc.x + c] : 0;
	}
	// Which pairs to write (bit i*8+j of emit), or how many to count.
	u64 emit = 0;
	u32 clean = 0;
#pragma unroll
	for (int i = 0; i < TM; i++) {
		const u32 r = ty + 16 * i;
#pragma unroll
		for (int j = 0; j < TM; j++) {
			const u32 c = tx + 16 * j;
			if (r >= gr.y || c >= gc.y || gr.x + r >= gc.x + c) continue;
			if (finish<CNT>(acc[i][j]) < (nr[i] < nc[j] ? nr[i] : nc[j])) continue;
			if (mode == 1) {
				emit |= 1ull << (i * TM + j);
			} else {
				clean++;
			}
		}
	}
	// Block-wide exclusive scan of the entries to write.
	const u32 mine = __popcll(emit);
	const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	u32 incl = mine;
#pragma unroll
	for (int o = 1; o < 32; o <<= 1) {
		const u32 v = __shfl_up_sync(0xffffffffu, incl, o);
		if (lane >= o) incl += v;
	}
	u32 cleanSum = clean;
#pragma unroll
	for (int o = 16; o > 0; o >>= 1) cleanSum += __shfl_xor_sync(0xffffffffu, cleanSum, o);
	if (lane == 31) scan[warp] = incl;
	if (lane == 0 && cleanSum != 0) atomicAdd(&counters[1], (u64)cleanSum);
	__syncthreads();
	u32 before = 0, total = 0;
#pragma unroll
	for (int w = 0; w < NT / 32; w++) {
		const u32 v = scan[w];
		before += w < warp ? v : 0;
		total += v;
	}
	if (threadIdx.x == 0) {
		u64 start = 0;
		if (total != 0) {
			start = atomicAdd(&counters[0], (u64)total);
			if (start + total > cap) {
				counters[2] = 1;
				total = 0;
			}
		}
		uint2 run;
		run.x = (u32)start;
		run.y = total;
		runs[blockIdx.x] = run;
		blockStart = total != 0 ? (u32)start : 0xffffffffu;
	}
	__syncthreads();
	if (blockStart == 0xffffffffu || emit == 0) return;
	u64 at = (u64)blockStart + before + incl - mine;
#pragma unroll
	for (int i = 0; i < TM; i++) {
#pragma unroll
		for (int j = 0; j < TM; j++) {
			if (!((emit >> (i * TM + j)) & 1)) continue;
			const u32 r = ty + 16 * i, c = tx + 16 * j, n = finish<CNT>(acc[i][j]);
			if (wide) {
				out[2 * at] = r << 16 | c;
				out[2 * at + 1] = n;
			} else {
				out[at] = r << 25 | c << 18 | n;
			}
			at++;
		}
	}
}

#define KERNEL(name, EB, CNT)                                                                                    \
	extern "C" __global__ void __launch_bounds__(NT, 2) name(const u32* words, const uint4* ginfo, const u64* gbase, \
		const uint2* tiles, const u32* need, const u32* foff, const u32* fel, const uint2* fh, u32 shift, u32 r0,   \
		u32 mode, u32 wide, u32 rowBase, u64 ldo, u32* out, u64 cap, uint2* runs, u64* counters) {                \
		tileCounts<EB, CNT>(words, ginfo, gbase, tiles, need, foff, fel, fh, shift, r0, mode, wide, rowBase, ldo,  \
			out, cap, runs, counters);                                                                           \
	}

// Each kernel alone when ONE_KERNEL is defined with the kernel's own
// macro (-DONE_KERNEL -DKERNEL_batmap16): NVRTC then compiles only the one
// a run needs, a quarter of the time.
#if !defined(ONE_KERNEL) || defined(KERNEL_batmap8)
KERNEL(batmap8, 8, 0)
#endif
#if !defined(ONE_KERNEL) || defined(KERNEL_batmap8popc)
KERNEL(batmap8popc, 8, 1)
#endif
#if !defined(ONE_KERNEL) || defined(KERNEL_batmap16)
KERNEL(batmap16, 16, 1)
#endif
#if !defined(ONE_KERNEL) || defined(KERNEL_batmap32)
KERNEL(batmap32, 32, 2)
#endif
