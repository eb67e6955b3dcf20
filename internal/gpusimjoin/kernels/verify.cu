// Verification of a set similarity join's candidate pairs on the GPU: the
// three alternatives of Bellas & Gounaris, "Speeding-up the Verification
// Phase of Set Similarity Joins in the GPGPU paradigm" (section 3.3.2).
//
// The records of both sides are resident: side R's record y is the
// strictly increasing run relR + recR[2y] of length recR[2y+1] (S likewise;
// the same arrays in a self-join). A chunk of candidates lists probing
// records of S, probes[i] for i < nprobes, each with its run of candidates
// of R, cands[k] for k in [starts[i], starts[i+1]); the pair (probes[i],
// cands[k]) is similar when the records share at least need[k] elements
// (computed on the host in exact integer arithmetic: no kernel compares
// with the threshold itself). Every similar pair is appended to out as
// three words, probe, candidate and overlap, at a position taken from
// *count; out holds a word triple for every candidate of the chunk, so it
// never overflows.
//
// exact's bit 0 is set when every similar pair's overlap is wanted; with
// it clear (the caller only counts) a merge stops as soon as need is
// reached and the overlap written is only a lower bound; it always stops
// once need is out of reach. Bit 1 set (only counting, pairs of records
// that are pairs of sets) writes no triples: *count is the number of
// similar pairs, and out is not touched.
//
// Compiled by NVRTC: self-contained, no standard headers.

typedef unsigned int u32;
typedef unsigned long long u64;

__device__ __forceinline__ u32 umin(u32 a, u32 b) { return a < b ? a : b; }

// emit appends (x, y, c) to out. The threads of a warp that emit together
// take their positions with one atomic (warp-aggregated), since every
// thread of the grid appends to the same counter.
__device__ __forceinline__ void emit(u32* count, u32* out, u32 x, u32 y, u32 c, u32 exact) {
	const unsigned mask = __activemask();
	const u32 lane = threadIdx.x & 31;
	const u32 leader = __ffs(mask) - 1;
	u32 base = 0;
	if (lane == leader) base = atomicAdd(count, (u32)__popc(mask));
	if (exact & 2) return; // counted only
	base = __shfl_sync(mask, base, leader);
	const u64 at = (u64)(base + __popc(mask & ((1u << lane) - 1))) * 3;
	out[at] = x;
	out[at + 1] = y;
	out[at + 2] = c;
}

// mergeCount returns |x ∩ y| by a branch-free merge. It stops early once
// what is left of the shorter side cannot make up need (the result is then
// below need) and, unless exact's bit 0 is set, once need is reached.
__device__ __forceinline__ u32 mergeCount(const u32* x, u32 nx, const u32* y, u32 ny, u32 need, u32 exact) {
	u32 i = 0, j = 0, c = 0;
	if (umin(nx, ny) < need) return 0;
	while (i < nx && j < ny) {
		const u32 a = x[i], b = y[j];
		c += a == b;
		i += a <= b;
		j += a >= b;
		if (c + umin(nx - i, ny - j) < need) return c;
		if (!(exact & 1) && c >= need) return c;
	}
	return c;
}

// Alternative A: a thread per probing record verifies all its candidates,
// one after another, reading both records from global memory.
extern "C" __global__ void verify_thread(const u32* __restrict__ relR, const uint2* __restrict__ recR,
	const u32* __restrict__ relS, const uint2* __restrict__ recS,
	const u32* __restrict__ probes, const u32* __restrict__ starts, const u32* __restrict__ cands,
	const u32* __restrict__ need, u32 nprobes, u32 exact, u32* count, u32* out) {
	for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < nprobes; i += gridDim.x * blockDim.x) {
		const u32 x = probes[i];
		const uint2 rx = recS[x];
		const u32* xs = relS + rx.x;
		const u32 k1 = starts[i + 1];
		for (u32 k = starts[i]; k < k1; k++) {
			const u32 y = cands[k];
			const uint2 ry = recR[y];
			const u32 nd = need[k];
			const u32 c = mergeCount(xs, rx.y, relR + ry.x, ry.y, nd, exact);
			if (c >= nd) emit(count, out, x, y, c, exact);
		}
	}
}

// Alternative B: a block per probing record. Its threads load the probe
// into shared memory (when it has at most shCap elements; longer ones are
// read from global memory) and verify a share of its candidates each.
extern "C" __global__ void verify_block(const u32* __restrict__ relR, const uint2* __restrict__ recR,
	const u32* __restrict__ relS, const uint2* __restrict__ recS,
	const u32* __restrict__ probes, const u32* __restrict__ starts, const u32* __restrict__ cands,
	const u32* __restrict__ need, u32 nprobes, u32 exact, u32* count, u32* out, u32 shCap) {
	extern __shared__ u32 sh[];
	for (u32 i = blockIdx.x; i < nprobes; i += gridDim.x) {
		const u32 x = probes[i];
		const uint2 rx = recS[x];
		const u32* xs = relS + rx.x;
		if (rx.y <= shCap) {
			for (u32 t = threadIdx.x; t < rx.y; t += blockDim.x) sh[t] = xs[t];
			__syncthreads();
			xs = sh;
		}
		const u32 k1 = starts[i + 1];
		for (u32 k = starts[i] + threadIdx.x; k < k1; k += blockDim.x) {
			const u32 y = cands[k];
			const uint2 ry = recR[y];
			const u32 nd = need[k];
			const u32 c = mergeCount(xs, rx.y, relR + ry.x, ry.y, nd, exact);
			if (c >= nd) emit(count, out, x, y, c, exact);
		}
		__syncthreads(); // before the next probe overwrites sh
	}
}

// split returns how many elements of x are among the first d of the merge
// of x and y, x's element going first on ties (Merge Path's diagonal
// search).
__device__ __forceinline__ u32 split(const u32* x, u32 nx, const u32* y, u32 ny, u64 d) {
	u32 lo = d > ny ? (u32)(d - ny) : 0;
	u32 hi = d < nx ? (u32)d : nx;
	while (lo < hi) {
		const u32 m = (lo + hi) >> 1;
		if (x[m] <= y[d - m - 1]) {
			lo = m + 1;
		} else {
			hi = m;
		}
	}
	return lo;
}

// Alternative C: a tile of threads per candidate pair, with Intersect
// Path (Green et al.'s Merge Path for intersections): the merge of the two
// records is cut into tile equal parts along cross diagonals; each thread
// finds its part's start by a binary search and counts the elements of x
// in its part that y holds, then the tile adds the counts up. An element
// x[i] of a part whose y-range is [j0, j1) can only equal y[j] for j in
// [j0, j1] (ties go to x first, so its equal follows it on the path): each
// thread looks one element past its range, and every common element is
// counted once, by the part that holds its x.
//
// tile is a power of two. Up to 32, a block holds blockDim/tile pairs and
// a tile adds up by shuffles; above 32 the tile is the block (blockDim ==
// tile), which adds up through shared memory (blockDim/32 words). The
// pair's probe is found by a binary search of starts.
extern "C" __global__ void verify_pair(const u32* __restrict__ relR, const uint2* __restrict__ recR,
	const u32* __restrict__ relS, const uint2* __restrict__ recS,
	const u32* __restrict__ probes, const u32* __restrict__ starts, const u32* __restrict__ cands,
	const u32* __restrict__ need, u32 nprobes, u32 exact, u32* count, u32* out, u32 ncands, u32 tile) {
	extern __shared__ u32 red[];
	const u32 t = threadIdx.x & (tile - 1);
	const u64 k = (u64)blockIdx.x * (blockDim.x / tile) + threadIdx.x / tile;
	const bool valid = k < ncands;
	u32 c = 0, x = 0, y = 0, nd = 0;
	if (valid) {
		y = cands[k];
		nd = need[k];
		// The last probe whose run starts at or before k.
		u32 lo = 0, hi = nprobes - 1;
		while (lo < hi) {
			const u32 m = (lo + hi + 1) >> 1;
			if (starts[m] <= k) {
				lo = m;
			} else {
				hi = m - 1;
			}
		}
		x = probes[lo];
		const uint2 rx = recS[x], ry = recR[y];
		const u32 *xs = relS + rx.x, *ys = relR + ry.x;
		const u32 nx = rx.y, ny = ry.y;
		const u64 len = (u64)nx + ny;
		const u64 d0 = len * t / tile, d1 = len * (t + 1) / tile;
		const u32 i0 = split(xs, nx, ys, ny, d0), i1 = split(xs, nx, ys, ny, d1);
		u32 j = (u32)(d0 - i0);
		const u32 jEnd = (u32)umin((u32)(d1 - i1) + 1, ny);
		for (u32 i = i0; i < i1 && j < jEnd; i++) {
			const u32 a = xs[i];
			while (j < jEnd && ys[j] < a) j++;
			c += j < jEnd && ys[j] == a;
		}
	}
	// Add the tile's counts up: every thread of the block gets here.
	const u32 width = tile < 32 ? tile : 32;
	for (u32 o = width >> 1; o > 0; o >>= 1) c += __shfl_xor_sync(0xffffffffu, c, o);
	if (tile > 32) {
		if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = c;
		__syncthreads();
		if (threadIdx.x == 0) {
			c = 0;
			for (u32 w = 0; w < blockDim.x >> 5; w++) c += red[w];
		}
	}
	if (t == 0 && valid && c >= nd && nd > 0) emit(count, out, x, y, c, exact);
}
