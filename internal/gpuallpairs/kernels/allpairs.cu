// All-pairs intersection counts on the GPU (Bellas & Gounaris, sections
// 3.2 to 4): every technique fills a "super-tile" of counts, rows r0.. of
// the first collection against columns c0.. of the second, into a row-major
// array d of 32-bit counts with rows ldd apart; repack then cuts it into the
// caller's tiles (each contiguous), zeroing the entries on and below the
// diagonal of a self-join, for one copy to the host.
//
// Collections are CSR: elems holds the sets' strictly increasing elements
// back to back, set i is elems[offs[i] .. offs[i+1]). colOf maps an element
// to its column of the compacted universe (elements no pair can share are
// left out) or to -1.
//
// Collections too large for the device come in pieces of consecutive sets:
// set indices in the kernels are the piece's (from 0), and rbase and sbase
// are the positions of the pieces' first sets in the whole collections, for
// the self-join's test j > i, which is on whole positions.
//
// Compiled by NVRTC: self-contained, no standard headers.

typedef unsigned int u32;
typedef unsigned long long u64;

__device__ __forceinline__ u32 umin(u32 a, u32 b) { return a < b ? a : b; }

__device__ __forceinline__ u32 warpSum(u32 v) {
#pragma unroll
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

// ------------------------------------------------------------ matrices

// build_matrix sets entry (r, c - k0) of the 0/1 matrix m (rows ld
// elements apart, zeroed by the caller) for every element of sets set0 + r,
// r < nsets, whose column c is in [k0, k1): 1 as int8, or 1.0 as float16
// (0x3C00) if half. One block per set.
extern "C" __global__ void build_matrix(const u32* elems, const u64* offs, u32 set0, u32 nsets,
	const int* colOf, int k0, int k1, u64 ld, unsigned char* m, u32 half) {
	for (u32 r = blockIdx.x; r < nsets; r += gridDim.x) {
		const u32 s = set0 + r;
		const u64 lo = offs[s], hi = offs[s + 1];
		for (u64 q = lo + threadIdx.x; q < hi; q += blockDim.x) {
			const int c = colOf[elems[q]];
			if (c >= k0 && c < k1) {
				const u64 at = (u64)r * ld + (u64)(c - k0);
				if (half) {
					((unsigned short*)m)[at] = 0x3C00;
				} else {
					m[at] = 1;
				}
			}
		}
	}
}

// set_ones sets entry (r, cols[q]) of the 0/1 matrix m (rows ld elements
// apart, zeroed by the caller) for every q in [offs[r], offs[r+1]), r <
// nrows: MMJoin's heavy sets over its heavy elements, as column lists made
// on the host. 1 as int8, or 1.0 as float16 (0x3C00) if half.
extern "C" __global__ void set_ones(const u64* offs, const u32* cols, u32 nrows, u64 ld, unsigned char* m, u32 half) {
	for (u32 r = blockIdx.x; r < nrows; r += gridDim.x) {
		for (u64 q = offs[r] + threadIdx.x; q < offs[r + 1]; q += blockDim.x) {
			const u64 at = (u64)r * ld + cols[q];
			if (half) {
				((unsigned short*)m)[at] = 0x3C00;
			} else {
				m[at] = 1;
			}
		}
	}
}

// build_bitmaps sets bit c of row r of bm (rows words apart, zeroed by the
// caller) for every element of set r with column c >= 0.
extern "C" __global__ void build_bitmaps(const u32* elems, const u64* offs, u32 nsets, const int* colOf,
	u64 words, u32* bm) {
	for (u32 r = blockIdx.x; r < nsets; r += gridDim.x) {
		const u64 lo = offs[r], hi = offs[r + 1];
		for (u64 q = lo + threadIdx.x; q < hi; q += blockDim.x) {
			const int c = colOf[elems[q]];
			if (c >= 0) atomicOr(&bm[(u64)r * words + (c >> 5)], 1u << (c & 31));
		}
	}
}

// index_fill places every set r of a collection in the inverted lists of
// its elements: post[start[e] ...] (start is the exclusive prefix sum of the
// document frequencies; fill is zeroed by the caller). Lists come out in no
// particular order; the counting kernel does not need them sorted. An
// element given no list (a frequency of 0: mmscan's heavy elements, which
// its product counts) is left out.
extern "C" __global__ void index_fill(const u32* elems, const u64* offs, u32 nsets, const u64* start,
	u32* fill, u32* post) {
	for (u32 r = blockIdx.x; r < nsets; r += gridDim.x) {
		const u64 lo = offs[r], hi = offs[r + 1];
		for (u64 q = lo + threadIdx.x; q < hi; q += blockDim.x) {
			const u32 e = elems[q];
			if (start[e + 1] == start[e]) continue;
			const u32 pos = atomicAdd(&fill[e], 1u);
			post[start[e] + pos] = r;
		}
	}
}

// count_df adds one to df[e] for each of the n elements e of elems: the
// document frequencies of a piece of a collection (df zeroed by the
// caller).
extern "C" __global__ void count_df(const u32* elems, u64 n, u32* df) {
	for (u64 q = (u64)blockIdx.x * blockDim.x + threadIdx.x; q < n; q += (u64)gridDim.x * blockDim.x) {
		atomicAdd(&df[elems[q]], 1u);
	}
}

// blockScan returns the exclusive prefix sum of v over the block's threads
// (blockDim.x a multiple of 32, at most 1024) and sets *total to the sum.
__device__ u64 blockScan(u64 v, u64* total) {
	__shared__ u64 warpSums[32];
	const u32 lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
	u64 x = v;
#pragma unroll
	for (int o = 1; o < 32; o <<= 1) {
		const u64 y = __shfl_up_sync(0xffffffffu, x, o);
		if (lane >= o) x += y;
	}
	if (lane == 31) warpSums[w] = x;
	__syncthreads();
	if (w == 0) {
		u64 t = lane < nw ? warpSums[lane] : 0;
#pragma unroll
		for (int o = 1; o < 32; o <<= 1) {
			const u64 y = __shfl_up_sync(0xffffffffu, t, o);
			if (lane >= o) t += y;
		}
		warpSums[lane] = t;
	}
	__syncthreads();
	const u64 before = w > 0 ? warpSums[w - 1] : 0;
	*total = warpSums[nw - 1];
	__syncthreads(); // warpSums is reused by the next call
	return before + x - v;
}

// df_sums writes into sums[b] the sum of df over block b's run of chunk
// entries: the first pass of the lists' starts.
extern "C" __global__ void df_sums(const u32* df, u64 n, u64 chunk, u64* sums) {
	const u64 lo = (u64)blockIdx.x * chunk, hi = lo + chunk < n ? lo + chunk : n;
	u64 s = 0;
	for (u64 e = lo + threadIdx.x; e < hi; e += blockDim.x) s += df[e];
	u64 total;
	blockScan(s, &total);
	if (threadIdx.x == 0) sums[blockIdx.x] = total;
}

// df_scan writes start[e] = df[0] + ... + df[e-1] for e <= n, the inverted
// lists' starts, each block over its run of chunk entries after the sums
// of the runs before it; it zeroes df, which index_fill then uses to fill
// the lists.
extern "C" __global__ void df_scan(u32* df, u64 n, u64 chunk, const u64* sums, u64* start) {
	u64 off = 0, total;
	for (u32 b = threadIdx.x; b < blockIdx.x; b += blockDim.x) off += sums[b];
	blockScan(off, &total);
	off = total;
	const u64 lo = (u64)blockIdx.x * chunk, hi = lo + chunk < n ? lo + chunk : n;
	for (u64 base = lo; base < hi; base += blockDim.x) {
		const u64 e = base + threadIdx.x;
		const u64 v = e < hi ? df[e] : 0;
		const u64 ex = blockScan(v, &total);
		if (e < hi) {
			start[e] = off + ex;
			df[e] = 0;
		}
		off += total;
	}
	if (threadIdx.x == 0 && hi == n) start[n] = off;
}

// ------------------------------------------------------------ counting

// scancount is sf-gssjoin's per-probe accumulation: one block per probe set
// i = r0 + x, whose warps take its elements one at a time and walk their
// inverted lists, 32 entries at a time, counting the candidates j in [c0,
// c0 + ncols) (j > i in a self-join) in shared memory. Then the row of
// counts goes to d[x*ldd + dcol0 ...].
extern "C" __global__ void scancount(const u32* relems, const u64* roffs, u32 r0, u32 nrows,
	const u64* start, const u32* post, u32 c0, u32 ncols, u32 self, u32* d, u64 ldd, u32 dcol0,
	u32 rbase, u32 sbase) {
	extern __shared__ u32 cnt[];
	const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
	for (u32 x = blockIdx.x; x < nrows; x += gridDim.x) {
		for (u32 y = threadIdx.x; y < ncols; y += blockDim.x) cnt[y] = 0;
		__syncthreads();
		const u32 i = r0 + x;
		const u64 lo = roffs[i], hi = roffs[i + 1];
		for (u64 q = lo + warp; q < hi; q += nw) {
			const u32 e = relems[q];
			const u64 s = start[e], t = start[e + 1];
			for (u64 z = s + lane; z < t; z += 32) {
				const u32 j = post[z];
				const u32 y = j - c0; // wraps for j < c0
				if (y < ncols && (!self || (u64)sbase + j > (u64)rbase + i)) atomicAdd(&cnt[y], 1u);
			}
		}
		__syncthreads();
		for (u32 y = threadIdx.x; y < ncols; y += blockDim.x) d[(u64)x * ldd + dcol0 + y] = cnt[y];
		__syncthreads();
	}
}

#define BT 32 // bitmap_tile: output tile edge
#define BK 32 // bitmap_tile: words staged per step

// bitmap_tile is BI-naive over resident bitmaps: a block computes 32x32
// counts, AND and popcount over all words, staging 32 words of 32 rows of
// each side in shared memory; 256 threads, each 4 counts of one column.
extern "C" __global__ void bitmap_tile(const u32* a, const u32* b, u64 words, u32 r0, u32 nrows,
	u32 c0, u32 ncols, u32 self, u32* d, u64 ldd, u32 rbase, u32 sbase) {
	__shared__ u32 As[BT][BK + 1], Bs[BT][BK + 1];
	const u32 tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
	const u32 bx = blockIdx.x * BT, by = blockIdx.y * BT;
	if (self && (u64)rbase + r0 + by >= (u64)sbase + c0 + bx + BT - 1) return; // nothing above the diagonal
	u32 acc[4] = {0, 0, 0, 0};
	for (u64 w0 = 0; w0 < words; w0 += BK) {
		const u64 w = w0 + tx;
#pragma unroll
		for (int k = 0; k < 4; k++) {
			const u32 row = ty + 8 * k;
			const u32 ra = by + row, rb = bx + row;
			As[row][tx] = (ra < nrows && w < words) ? a[(u64)(r0 + ra) * words + w] : 0;
			Bs[row][tx] = (rb < ncols && w < words) ? b[(u64)(c0 + rb) * words + w] : 0;
		}
		__syncthreads();
#pragma unroll 8
		for (int kk = 0; kk < BK; kk++) {
			const u32 bv = Bs[tx][kk];
#pragma unroll
			for (int k = 0; k < 4; k++) acc[k] += __popc(As[ty + 8 * k][kk] & bv);
		}
		__syncthreads();
	}
#pragma unroll
	for (int k = 0; k < 4; k++) {
		const u32 row = by + ty + 8 * k, col = bx + tx;
		if (row < nrows && col < ncols) d[(u64)row * ldd + col] = acc[k];
	}
}

// bitmap_dynamic is BI-dynamic: one block per probe set i = r0 + x builds
// its bitmap (words words) in shared memory; then each warp takes a
// candidate j and tests its elements' bits, 32 at a time.
extern "C" __global__ void bitmap_dynamic(const u32* relems, const u64* roffs, u32 r0, u32 nrows,
	const u32* selems, const u64* soffs, u32 c0, u32 ncols, const int* colOf, u32 words, u32 self,
	u32* d, u64 ldd, u32 rbase, u32 sbase) {
	extern __shared__ u32 bm[];
	const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
	for (u32 x = blockIdx.x; x < nrows; x += gridDim.x) {
		const u32 i = r0 + x;
		for (u32 w = threadIdx.x; w < words; w += blockDim.x) bm[w] = 0;
		__syncthreads();
		for (u64 q = roffs[i] + threadIdx.x; q < roffs[i + 1]; q += blockDim.x) {
			const int c = colOf[relems[q]];
			if (c >= 0) atomicOr(&bm[c >> 5], 1u << (c & 31));
		}
		__syncthreads();
		for (u32 y = warp; y < ncols; y += nw) {
			const u32 j = c0 + y;
			u32 n = 0;
			if (!self || (u64)sbase + j > (u64)rbase + i) {
				const u64 hi = soffs[j + 1];
				for (u64 z = soffs[j] + lane; z < hi; z += 32) {
					const int c = colOf[selems[z]];
					if (c >= 0) n += (bm[c >> 5] >> (c & 31)) & 1u;
				}
			}
			n = warpSum(n);
			if (lane == 0) d[(u64)x * ldd + y] = n;
		}
		__syncthreads();
	}
}

// merge_obs intersects pair by pair, one warp per pair: the lanes take the
// smaller set's elements, 32 neighbouring ones at a time, and binary-search
// them in the larger set (OBS; neighbouring searches share their paths in
// the cache).
extern "C" __global__ void merge_obs(const u32* relems, const u64* roffs, u32 r0, u32 nrows,
	const u32* selems, const u64* soffs, u32 c0, u32 ncols, u32 self, u32* d, u64 ldd,
	u32 rbase, u32 sbase) {
	const u32 lane = threadIdx.x & 31;
	const u64 nwg = ((u64)gridDim.x * blockDim.x) >> 5;
	const u64 pairs = (u64)nrows * ncols;
	for (u64 pi = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; pi < pairs; pi += nwg) {
		const u32 x = (u32)(pi / ncols), y = (u32)(pi % ncols);
		const u32 i = r0 + x, j = c0 + y;
		u32 n = 0;
		if (!self || (u64)sbase + j > (u64)rbase + i) {
			const u32* A = relems + roffs[i];
			u64 na = roffs[i + 1] - roffs[i];
			const u32* B = selems + soffs[j];
			u64 nb = soffs[j + 1] - soffs[j];
			if (na > nb) {
				const u32* t = A;
				A = B;
				B = t;
				const u64 tn = na;
				na = nb;
				nb = tn;
			}
			if (na > 0 && A[0] <= B[nb - 1] && B[0] <= A[na - 1]) {
				for (u64 q = lane; q < na; q += 32) {
					const u32 v = A[q];
					u64 lo = 0, hi = nb;
					while (lo < hi) {
						const u64 mid = (lo + hi) >> 1;
						if (B[mid] < v) {
							lo = mid + 1;
						} else {
							hi = mid;
						}
					}
					n += (lo < nb && B[lo] == v) ? 1u : 0u;
				}
			}
		}
		n = warpSum(n);
		if (lane == 0) d[(u64)x * ldd + y] = n;
	}
}

// ------------------------------------------------------------ output

// countAt reads entry (x, y) of d, rows ldd apart: 32-bit counts, or
// float32 ones from a float16 product where isFloat.
__device__ __forceinline__ u32 countAt(const u32* d, u32 isFloat, u64 ldd, u32 x, u32 y) {
	const u64 at = (u64)x * ldd + y;
	return isFloat ? __float2uint_rn(((const float*)d)[at]) : d[at];
}

// dropped says whether entry (x, y) of a super-tile at (r0, c0) is not a
// pair of a self-join's upper triangle.
__device__ __forceinline__ bool dropped(u32 self, u64 r0, u64 c0, u32 x, u32 y) { return self && r0 + x >= c0 + y; }

// reaches says whether count v of entry (x, y) of a super-tile at (r0, c0)
// is reported: it reaches need, or where needR is not null needR[r0 + x]
// or needS[c0 + y], and the entry is not dropped.
__device__ __forceinline__ bool reaches(u32 v, u32 x, u32 y, u64 r0, u64 c0, u32 self, u32 need, const u32* needR,
	const u32* needS) {
	const bool ok = needR ? (v >= needR[r0 + x] || v >= needS[c0 + y]) : v >= need;
	return ok && !dropped(self, r0, c0, x, y);
}

// repack copies the sr x sc counts of d (rows ldd apart; float32 if isFloat,
// from a float16 product) into p as the caller's tiles of rows x cols, one
// after another in row-major order of tiles, each row-major and contiguous.
// In a self-join, entries with r0 + x >= c0 + y become 0.
extern "C" __global__ void repack(const u32* d, u32 isFloat, u64 ldd, u32 sr, u32 sc, u32 rows, u32 cols,
	u64 r0, u64 c0, u32 self, u32* p) {
	const u64 n = (u64)sr * sc;
	for (u64 idx = (u64)blockIdx.x * blockDim.x + threadIdx.x; idx < n; idx += (u64)gridDim.x * blockDim.x) {
		const u32 x = (u32)(idx / sc), y = (u32)(idx % sc);
		const u32 v = dropped(self, r0, c0, x, y) ? 0 : countAt(d, isFloat, ldd, x, y);
		const u32 a = x / rows, xr = x - a * rows, b = y / cols, yr = y - b * cols;
		const u32 h = umin(rows, sr - a * rows), w = umin(cols, sc - b * cols);
		p[(u64)a * rows * sc + (u64)b * cols * h + (u64)xr * w + yr] = v;
	}
}

// count_ge adds to *total the number of the sr x sc counts of d (rows ldd
// apart; float32 if isFloat) that reach their threshold: need, or where
// needR is not null, needR[r0 + x] or needS[c0 + y]. In a self-join only
// entries with r0 + x < c0 + y count. For plans that want only the number
// of pairs, which then never leave the device.
extern "C" __global__ void count_ge(const u32* d, u32 isFloat, u64 ldd, u32 sr, u32 sc, u64 r0, u64 c0, u32 self,
	u32 need, const u32* needR, const u32* needS, u64* total) {
	const u64 n = (u64)sr * sc;
	u32 k = 0;
	for (u64 idx = (u64)blockIdx.x * blockDim.x + threadIdx.x; idx < n; idx += (u64)gridDim.x * blockDim.x) {
		const u32 x = (u32)(idx / sc), y = (u32)(idx % sc);
		k += reaches(countAt(d, isFloat, ldd, x, y), x, y, r0, c0, self, need, needR, needS);
	}
	k = warpSum(k);
	if ((threadIdx.x & 31) == 0 && k) atomicAdd(total, (u64)k);
}

// compact_ge writes the entries of d that count_ge counts as triples (x,
// y, count) into out, up to cap of them, in no particular order, and their
// number, which may exceed cap, into *n (zeroed by the caller). For plans
// that want the pairs: only those cross the bus, not every count.
extern "C" __global__ void compact_ge(const u32* d, u32 isFloat, u64 ldd, u32 sr, u32 sc, u64 r0, u64 c0, u32 self,
	u32 need, const u32* needR, const u32* needS, u32* out, u32 cap, u32* n) {
	const u64 total = (u64)sr * sc;
	const u32 lane = threadIdx.x & 31;
	// Whole warps go round the loop together, for the ballot.
	const u64 stride = (u64)gridDim.x * blockDim.x;
	for (u64 base = (u64)blockIdx.x * blockDim.x + (threadIdx.x & ~31u); base < total; base += stride) {
		const u64 idx = base + lane;
		u32 x = 0, y = 0, v = 0;
		bool ok = false;
		if (idx < total) {
			x = (u32)(idx / sc), y = (u32)(idx % sc);
			v = countAt(d, isFloat, ldd, x, y);
			ok = reaches(v, x, y, r0, c0, self, need, needR, needS);
		}
		const u32 mask = __ballot_sync(0xffffffffu, ok);
		if (!mask) continue;
		u32 at = 0;
		if (lane == 0) at = atomicAdd(n, (u32)__popc(mask));
		at = __shfl_sync(0xffffffffu, at, 0) + __popc(mask & ((1u << lane) - 1));
		if (ok && at < cap) {
			out[3 * (u64)at] = x;
			out[3 * (u64)at + 1] = y;
			out[3 * (u64)at + 2] = v;
		}
	}
}
