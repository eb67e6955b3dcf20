// Pairwise intersection of two large sorted sets on the GPU (Bellas &
// Gounaris, section 3.1): Intersect Path (IP), Optimized Binary Search
// (OBS), hash-based (HI), bitmap-based (naive and dynamic), and the IP-OBS
// and IP-HI hybrids.
//
// Every set is a strictly increasing array of 32-bit unsigned integers.
// Every method is one "main" kernel in three modes, chosen by the suffix of
// its extern "C" wrappers:
//   _total  adds each block's match count to *total (atomically): Count.
//   _blocks writes each work unit's match count to counts[unit].
//   _write  writes the matches of each unit at out[offsets[unit]...], where
//           offsets is the exclusive scan of the counts (scan_counts).
// Units are visited in increasing order of value and every unit emits its
// matches in increasing order, so the output is increasing.
//
// Compiled by NVRTC: self-contained, no standard headers.

typedef unsigned int u32;
typedef unsigned long long u64;

#ifndef THREADS
#define THREADS 256 // threads per block, every kernel but scan_counts
#endif
// IP_ONLY builds the module the ip method runs from, with larger blocks
// (THREADS 512): fewer blocks mean fewer grid-level partition searches,
// which are random reads. IP-HI's table does not fit beside such a tile.
#ifndef IP_ITEMS
#define IP_ITEMS 15 // merge steps per thread in the IP-family kernels
#endif
#ifndef PROBE_ITEMS
#define PROBE_ITEMS 8 // lookups per thread per chunk in the probe kernels
#endif
#ifndef OBS_SPLITTERS
#define OBS_SPLITTERS 4096 // OBS: top of the search tree kept in shared memory
#endif
#ifndef BM_WORDS
#define BM_WORDS 8 // bitmap words per thread in the naive bitmap kernels
#endif

#define WARPS (THREADS / 32)
#define IP_TILE (THREADS * IP_ITEMS)
#define PROBE_CHUNK (THREADS * PROBE_ITEMS)
#define BM_CHUNK (THREADS * BM_WORDS)
#define EMPTY 0xffffffffu

enum Mode { TOTAL = 0, BLOCKS = 1, WRITE = 2 };

// ---------------------------------------------------------------- helpers

// blockScan returns the exclusive prefix sum of v over the block and the
// block's total in *total. All threads must call it.
__device__ __forceinline__ u32 blockScan(u32 v, u32* total) {
	__shared__ u32 warpSums[WARPS];
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	u32 x = v;
#pragma unroll
	for (int d = 1; d < 32; d <<= 1) {
		u32 y = __shfl_up_sync(0xffffffffu, x, d);
		if (lane >= d) x += y;
	}
	if (lane == 31) warpSums[warp] = x;
	__syncthreads();
	if (warp == 0) {
		u32 s = lane < WARPS ? warpSums[lane] : 0;
#pragma unroll
		for (int d = 1; d < 32; d <<= 1) {
			u32 y = __shfl_up_sync(0xffffffffu, s, d);
			if (lane >= d) s += y;
		}
		if (lane < WARPS) warpSums[lane] = s;
	}
	__syncthreads();
	u32 base = warp ? warpSums[warp - 1] : 0;
	*total = warpSums[WARPS - 1];
	__syncthreads(); // warpSums is reused by the next call
	return base + x - v;
}

// finish hands a unit's match count to the mode's sink (TOTAL, BLOCKS).
__device__ __forceinline__ void finish(int mode, u32 count, u64 unit, u32* counts, u64* total) {
	u32 sum;
	blockScan(count, &sum);
	if (threadIdx.x == 0) {
		if (mode == TOTAL) {
			if (sum) atomicAdd(total, (u64)sum);
		} else {
			counts[unit] = sum;
		}
	}
}

// orderedEmit writes the flagged values of a unit in order. Item r of
// thread t is the unit's item r*THREADS + t; bit r of mask flags it; v[r]
// is its value. dst is where the unit's first match goes.
template <int R>
__device__ __forceinline__ void orderedEmit(u32 mask, const u32 (&v)[R], u32* dst) {
	__shared__ u32 wc[R * WARPS]; // matches per (round, warp), then their prefix
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
	for (int r = 0; r < R; ++r) {
		u32 bal = __ballot_sync(0xffffffffu, (mask >> r) & 1);
		if (lane == 0) wc[r * WARPS + warp] = __popc(bal);
	}
	__syncthreads();
	if (warp == 0) {
		const int per = (R * WARPS + 31) / 32;
		u32 local = 0;
		for (int k = 0; k < per; ++k) {
			int i = lane * per + k;
			if (i < R * WARPS) local += wc[i];
		}
		u32 x = local;
#pragma unroll
		for (int d = 1; d < 32; d <<= 1) {
			u32 y = __shfl_up_sync(0xffffffffu, x, d);
			if (lane >= d) x += y;
		}
		u32 run = x - local;
		for (int k = 0; k < per; ++k) {
			int i = lane * per + k;
			if (i < R * WARPS) {
				u32 c = wc[i];
				wc[i] = run;
				run += c;
			}
		}
	}
	__syncthreads();
	const u32 below = (1u << lane) - 1;
#pragma unroll
	for (int r = 0; r < R; ++r) {
		bool f = (mask >> r) & 1;
		u32 bal = __ballot_sync(0xffffffffu, f);
		if (f) dst[wc[r * WARPS + warp] + __popc(bal & below)] = v[r];
	}
	__syncthreads(); // wc is reused by the next call
}

// lowerBound returns the first index i in [0, n) with s[i] >= x, or n.
__device__ __forceinline__ int lowerBound(const u32* s, int n, u32 x) {
	const u32* base = s;
	while (n > 1) {
		int half = n >> 1;
		base = base[half] < x ? base + half : base;
		n -= half;
	}
	return (int)(base - s) + (n == 1 && *base < x);
}

__device__ __forceinline__ bool containsShared(const u32* s, int n, u32 x) {
	int i = lowerBound(s, n, x);
	return i < n && s[i] == x;
}

// mergePath returns how many of a's elements are among the first diag
// elements of merge(a, b), where ties put a's element first.
template <typename I>
__device__ __forceinline__ I mergePath(const u32* a, I na, const u32* b, I nb, I diag) {
	I lo = diag > nb ? diag - nb : 0;
	I hi = diag < na ? diag : na;
	while (lo < hi) {
		I mid = (lo + hi) >> 1;
		if (a[mid] <= b[diag - 1 - mid]) lo = mid + 1;
		else hi = mid;
	}
	return lo;
}

// ------------------------------------------------ Intersect Path family

// ip_partition finds where diagonal k*IP_TILE crosses the merge path, for
// k in [0, nparts]: the grid-level partition. Block k of an IP-family kernel
// takes a[splits[k]:splits[k+1]] and the matching range of b.
extern "C" __global__ void ip_partition(const u32* __restrict__ a, u64 na, const u32* __restrict__ b, u64 nb, u64 nparts, u64* splits) {
	u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x;
	if (k > nparts) return;
	u64 diag = k * (u64)IP_TILE;
	if (diag > na + nb) diag = na + nb;
	splits[k] = mergePath<u64>(a, na, b, nb, diag);
}

// A block of the IP family loads its part of a and of b into shared memory:
// s[0:la] from a, s[la:la+lbx] from b. lbx is lb plus the first element of
// b after the block's range, if any: when a's x ends one block and b's x
// begins the next, the match belongs to the block holding a's x, which
// finds it by looking one element past its b range. A match is counted by
// the block holding its a element, so exactly once.
struct IPBlock {
	u64 a0, b0;
	int la, lb, lbx;
};

// GAP leaves that many free words between the two parts: b's part starts
// at s + la + GAP.
template <int GAP = 0>
__device__ __forceinline__ IPBlock ipLoad(const u32* __restrict__ a, u64 na, const u32* __restrict__ b, u64 nb, const u64* __restrict__ splits, u32* s) {
	IPBlock p;
	const u64 blk = blockIdx.x;
	const u64 d0 = blk * (u64)IP_TILE;
	u64 d1 = d0 + IP_TILE;
	if (d1 > na + nb) d1 = na + nb;
	const u64 a0 = splits[blk], a1 = splits[blk + 1];
	const u64 b0 = d0 - a0, b1 = d1 - a1;
	p.a0 = a0;
	p.b0 = b0;
	p.la = (int)(a1 - a0);
	p.lb = (int)(b1 - b0);
	p.lbx = p.lb + (b1 < nb ? 1 : 0);
	const int tot = p.la + p.lbx;
#if __CUDA_ARCH__ >= 800 && !defined(IP_SYNC_LOAD)
	// Copy global to shared memory asynchronously (cp.async, sm_80 and
	// later): no registers hold the tile on its way, which leaves room for
	// more resident blocks (the IP kernels are bound by issue, not by
	// memory).
	unsigned long long base;
	asm("cvta.to.shared.u64 %0, %1;" : "=l"(base) : "l"(s));
#pragma unroll
	for (int r = 0; r <= IP_ITEMS; ++r) {
		int k = threadIdx.x + r * THREADS;
		if (k < tot) {
			const u32* g = k < p.la ? a + a0 + k : b + b0 + (k - p.la);
			const int d = k < p.la ? k : k + GAP;
			asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"((unsigned)(base + 4u * d)), "l"(g) : "memory");
		}
	}
	asm volatile("cp.async.wait_all;" ::: "memory");
#else
	u32 v[IP_ITEMS + 1];
#pragma unroll
	for (int r = 0; r <= IP_ITEMS; ++r) {
		int k = threadIdx.x + r * THREADS;
		if (k < tot) v[r] = k < p.la ? a[a0 + k] : b[b0 + (k - p.la)];
	}
#pragma unroll
	for (int r = 0; r <= IP_ITEMS; ++r) {
		int k = threadIdx.x + r * THREADS;
		if (k < tot) s[k < p.la ? k : k + GAP] = v[r];
	}
#endif
	__syncthreads();
	return p;
}

// IP: each thread walks IP_ITEMS steps of the merge path from where its own
// diagonal crosses it (block-level partition), counting an a element when
// the next unconsumed b element equals it.
__device__ __forceinline__ void ipMain(int mode, const u32* __restrict__ a, u64 na, const u32* __restrict__ b, u64 nb,
	const u64* __restrict__ splits, u32* counts, const u64* __restrict__ offsets, u32* out, u64* total) {
	__shared__ u32 s[IP_TILE + 1];
	const IPBlock p = ipLoad(a, na, b, nb, splits, s);
	const u32* sA = s;
	const u32* sB = s + p.la;
	const int n = p.la + p.lb;
	const int diag = min((int)threadIdx.x * IP_ITEMS, n);
	const int end = min(diag + IP_ITEMS, n);
	const int i0 = mergePath<int>(sA, p.la, sB, p.lb, diag);
	const int j0 = diag - i0;
	// x and y are the next unconsumed elements of a and b; each step
	// consumes one and loads its successor: one shared load per step.
	// s[la + j] is b's j-th element, so both come from s.
	const int ea = p.la, ebx = p.la + p.lbx; // ends of a and of b (with its extra) in s
	u32 x0 = i0 < ea ? s[i0] : 0, y0 = ea + j0 < ebx ? s[ea + j0] : 0;
	u32 x = x0, y = y0;
	int i = i0, j = j0;
	u32 cnt = 0;
#pragma unroll
	for (int t = 0; t < IP_ITEMS; ++t) {
		if (diag + t < end) {
			const bool takeA = i < p.la && (j >= p.lb || x <= y);
			cnt += takeA && j < p.lbx && x == y;
			const int k = takeA ? i + 1 : ea + j + 1;
			const u32 nxt = (takeA ? k < ea : k < ebx) ? s[k] : 0;
			x = takeA ? nxt : x;
			y = takeA ? y : nxt;
			i += takeA;
			j += !takeA;
		}
	}
	if (mode != WRITE) {
		finish(mode, cnt, blockIdx.x, counts, total);
		return;
	}
	u32 sum;
	u32* dst = out + offsets[blockIdx.x] + blockScan(cnt, &sum);
	x = x0;
	y = y0;
	i = i0;
	j = j0;
#pragma unroll
	for (int t = 0; t < IP_ITEMS; ++t) {
		if (diag + t < end) {
			const bool takeA = i < p.la && (j >= p.lb || x <= y);
			if (takeA && j < p.lbx && x == y) *dst++ = x;
			const int k = takeA ? i + 1 : ea + j + 1;
			const u32 nxt = (takeA ? k < ea : k < ebx) ? s[k] : 0;
			x = takeA ? nxt : x;
			y = takeA ? y : nxt;
			i += takeA;
			j += !takeA;
		}
	}
}

// IP, fast loop: the same walk with sentinels instead of bounds checks.
// The parts sit at s[0:la] and s[la+1:], each followed by 0xffffffff,
// which stops the walk from leaving a part, since ties take a's element.
// A real 0xffffffff (only ever a part's last element) would look like a
// sentinel, so it is taken out of the walk and, with the match against the
// first b element after the block, settled by thread 0 ("fix").
__device__ __forceinline__ void ipfMain(int mode, const u32* __restrict__ a, u64 na, const u32* __restrict__ b, u64 nb,
	const u64* __restrict__ splits, u32* counts, const u64* __restrict__ offsets, u32* out, u64* total) {
	__shared__ u32 s[IP_TILE + 3];
	const IPBlock p = ipLoad<1>(a, na, b, nb, splits, s);
	const int bo = p.la + 1; // where b's part starts
	const bool aMax = p.la > 0 && s[p.la - 1] == EMPTY;
	const bool bMax = p.lb > 0 && s[bo + p.lb - 1] == EMPTY;
	const bool hasExtra = p.lbx > p.lb;
	const u32 extra = hasExtra ? s[bo + p.lb] : 0;
	const bool fix = p.la > 0 && (aMax ? (bMax || (hasExtra && extra == EMPTY)) : (hasExtra && s[p.la - 1] == extra));
	const u32 fixValue = aMax ? EMPTY : extra;
	const int la = p.la - aMax, lb = p.lb - bMax;
	__syncthreads(); // everyone has read what the sentinels overwrite
	if (threadIdx.x == 0) {
		s[la] = EMPTY;
		s[bo + lb] = EMPTY;
	}
	__syncthreads();
	const int n = la + lb;
	const int diag = min((int)threadIdx.x * IP_ITEMS, n);
	const int end = min(diag + IP_ITEMS, n);
	const int i0 = mergePath<int>(s, la, s + bo, lb, diag);
	const int j0 = bo + diag - i0; // an index into s
	int i = i0, j = j0;
	u32 x = s[i], y = s[j];
	u32 cnt = 0;
#pragma unroll
	for (int t = 0; t < IP_ITEMS; ++t) {
		if (diag + t < end) {
			const bool takeA = x <= y;
			cnt += takeA & (x == y);
			const int k = (takeA ? i : j) + 1;
			const u32 nxt = s[k];
			x = takeA ? nxt : x;
			y = takeA ? y : nxt;
			i = takeA ? k : i;
			j = takeA ? j : k;
		}
	}
	if (mode != WRITE) {
		finish(mode, cnt + (threadIdx.x == 0 && fix), blockIdx.x, counts, total);
		return;
	}
	u32 sum;
	u32* const blockOut = out + offsets[blockIdx.x];
	u32* dst = blockOut + blockScan(cnt, &sum);
	if (threadIdx.x == 0 && fix) blockOut[sum] = fixValue; // the block's largest match
	i = i0;
	j = j0;
	x = s[i];
	y = s[j];
#pragma unroll
	for (int t = 0; t < IP_ITEMS; ++t) {
		if (diag + t < end) {
			const bool takeA = x <= y;
			if (takeA && x == y) *dst++ = x;
			const int k = (takeA ? i : j) + 1;
			const u32 nxt = s[k];
			x = takeA ? nxt : x;
			y = takeA ? y : nxt;
			i = takeA ? k : i;
			j = takeA ? j : k;
		}
	}
}

#ifndef IP_ONLY
// IP-OBS: the grid-level partition of IP, then within the block the
// elements of the smaller side are looked up by binary search in the
// larger side, which is all in shared memory (the whole search tree of the
// block's range is cached). Lanes take consecutive elements, so a warp runs
// 32 searches down neighbouring paths at once.
__device__ __forceinline__ void ipobsMain(int mode, const u32* __restrict__ a, u64 na, const u32* __restrict__ b, u64 nb,
	const u64* __restrict__ splits, u32* counts, const u64* __restrict__ offsets, u32* out, u64* total) {
	__shared__ u32 s[IP_TILE + 1];
	const IPBlock p = ipLoad(a, na, b, nb, splits, s);
	const bool searchA = p.la <= p.lbx;
	const u32* keys = searchA ? s : s + p.la;
	const int nk = searchA ? p.la : p.lbx;
	const u32* tree = searchA ? s + p.la : s;
	const int nt = searchA ? p.lbx : p.la;
	u32 v[IP_ITEMS + 1];
	u32 mask = 0;
#pragma unroll
	for (int r = 0; r <= IP_ITEMS; ++r) {
		int k = threadIdx.x + r * THREADS;
		v[r] = 0;
		if (k < nk) {
			v[r] = keys[k];
			if (containsShared(tree, nt, v[r])) mask |= 1u << r;
		}
	}
	if (mode != WRITE) {
		finish(mode, __popc(mask), blockIdx.x, counts, total);
		return;
	}
	orderedEmit<IP_ITEMS + 1>(mask, v, out + offsets[blockIdx.x]);
}

#endif // IP_ONLY

// Hash tables: open addressing with linear probing over a power-of-two
// table; EMPTY marks free slots, so the value EMPTY itself is kept aside in
// a flag.
// The slot is the top bits of a multiplicative (Fibonacci) hash, which
// spreads runs of consecutive keys over the whole table.
__device__ __forceinline__ u32 hashSlot(u32 x, int bits) { return (x * 0x9E3779B1u) >> (32 - bits); }

#ifndef IP_ONLY
// IP-HI: the grid-level partition of IP, then within the block a hash table
// in shared memory is built from the smaller side and probed with the
// larger side.
#ifndef IPHI_BITS
#define IPHI_BITS 12
#endif
#define IPHI_TABLE (1 << IPHI_BITS)
static_assert(IPHI_TABLE >= IP_TILE + 2, "IP-HI's table must hold twice the smaller side of a block");
__device__ __forceinline__ void iphiMain(int mode, const u32* __restrict__ a, u64 na, const u32* __restrict__ b, u64 nb,
	const u64* __restrict__ splits, u32* counts, const u64* __restrict__ offsets, u32* out, u64* total) {
	__shared__ u32 s[IP_TILE + 1];
	__shared__ u32 table[IPHI_TABLE];
	__shared__ u32 hasEmpty;
	for (int k = threadIdx.x; k < IPHI_TABLE; k += THREADS) table[k] = EMPTY;
	if (threadIdx.x == 0) hasEmpty = 0;
	const IPBlock p = ipLoad(a, na, b, nb, splits, s); // synchronises
	const bool buildA = p.la <= p.lbx;
	const u32* build = buildA ? s : s + p.la;
	const int nbuild = buildA ? p.la : p.lbx;
	const u32* probe = buildA ? s + p.la : s;
	const int nprobe = buildA ? p.lbx : p.la;
	const u32 tmask = IPHI_TABLE - 1;
	for (int k = threadIdx.x; k < nbuild; k += THREADS) {
		u32 x = build[k];
		if (x == EMPTY) {
			hasEmpty = 1;
			continue;
		}
		for (u32 h = hashSlot(x, IPHI_BITS);; h = (h + 1) & tmask) {
			u32 prev = atomicCAS(&table[h], EMPTY, x);
			if (prev == EMPTY || prev == x) break;
		}
	}
	__syncthreads();
	u32 v[IP_ITEMS + 1];
	u32 mask = 0;
#pragma unroll
	for (int r = 0; r <= IP_ITEMS; ++r) {
		int k = threadIdx.x + r * THREADS;
		v[r] = 0;
		if (k < nprobe) {
			u32 x = probe[k];
			v[r] = x;
			bool found;
			if (x == EMPTY) {
				found = hasEmpty;
			} else {
				u32 h = hashSlot(x, IPHI_BITS), e;
				while ((e = table[h]) != x && e != EMPTY) h = (h + 1) & tmask;
				found = e == x;
			}
			if (found) mask |= 1u << r;
		}
	}
	if (mode != WRITE) {
		finish(mode, __popc(mask), blockIdx.x, counts, total);
		return;
	}
	orderedEmit<IP_ITEMS + 1>(mask, v, out + offsets[blockIdx.x]);
}

#endif // IP_ONLY

// ------------------------------------------------------- probe family

// probeChunks looks up every element of keys with p.contains, one chunk of
// PROBE_CHUNK consecutive keys per block at a time (a grid-stride loop over
// chunks, so that per-block setup such as OBS's cached tree is paid once).
template <class P>
__device__ __forceinline__ void probeChunks(int mode, const u32* __restrict__ keys, u64 n, const P& p,
	u32* counts, const u64* __restrict__ offsets, u32* out, u64* total) {
	const u64 nchunks = (n + PROBE_CHUNK - 1) / PROBE_CHUNK;
	u32 acc = 0;
	for (u64 c = blockIdx.x; c < nchunks; c += gridDim.x) {
		const u64 base = c * PROBE_CHUNK + threadIdx.x;
		u32 v[PROBE_ITEMS];
		u32 mask = 0;
#pragma unroll
		for (int r = 0; r < PROBE_ITEMS; ++r) {
			u64 k = base + (u64)r * THREADS;
			v[r] = k < n ? __ldg(keys + k) : 0;
		}
#pragma unroll
		for (int r = 0; r < PROBE_ITEMS; ++r) {
			u64 k = base + (u64)r * THREADS;
			if (k < n && p.contains(v[r])) mask |= 1u << r;
		}
		if (mode == TOTAL) {
			acc += __popc(mask);
		} else if (mode == BLOCKS) {
			finish(BLOCKS, __popc(mask), c, counts, total);
		} else {
			orderedEmit<PROBE_ITEMS>(mask, v, out + offsets[c]);
		}
	}
	if (mode == TOTAL) finish(TOTAL, acc, 0, counts, total);
}

// OBS: the splitters are every (n/OBS_SPLITTERS)-th element of the larger
// set, the top levels of its binary search tree; each block caches them in
// shared memory, so a lookup does its first log2(OBS_SPLITTERS) steps there
// and the rest in global memory.
extern "C" __global__ void obs_splitters(const u32* __restrict__ big, u64 n, u32* spl) {
	int k = blockIdx.x * blockDim.x + threadIdx.x;
	if (k < OBS_SPLITTERS) spl[k] = big[(u64)k * n / OBS_SPLITTERS];
}

struct OBSProbe {
	const u32* spl; // in shared memory
	const u32* big;
	u64 n;
	__device__ __forceinline__ bool contains(u32 x) const {
		// Largest k with spl[k] <= x: bucket k holds big[k*n/S : (k+1)*n/S].
		int k = lowerBound(spl, OBS_SPLITTERS, x);
		if (k < OBS_SPLITTERS && spl[k] == x) return true;
		if (k == 0) return false; // x < big[0]
		--k;
		u64 lo = (u64)k * n / OBS_SPLITTERS, hi = (u64)(k + 1) * n / OBS_SPLITTERS;
		while (lo < hi) {
			u64 mid = (lo + hi) >> 1;
			if (__ldg(big + mid) < x) lo = mid + 1;
			else hi = mid;
		}
		return lo < n && __ldg(big + lo) == x;
	}
};

__device__ __forceinline__ void obsMain(int mode, const u32* __restrict__ keys, u64 nkeys, const u32* __restrict__ big, u64 nbig,
	const u32* __restrict__ spl, u32* counts, const u64* __restrict__ offsets, u32* out, u64* total) {
	__shared__ u32 sspl[OBS_SPLITTERS];
	for (int k = threadIdx.x; k < OBS_SPLITTERS; k += THREADS) sspl[k] = spl[k];
	__syncthreads();
	OBSProbe p{sspl, big, nbig};
	probeChunks(mode, keys, nkeys, p, counts, offsets, out, total);
}

// HI: a global hash table built from the smaller set.
extern "C" __global__ void hi_build(const u32* __restrict__ keys, u64 n, u32* table, int tbits, u32* hasEmpty) {
	const u32 tmask = (u32)((1ull << tbits) - 1);
	for (u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += (u64)gridDim.x * blockDim.x) {
		u32 x = keys[k];
		if (x == EMPTY) {
			*hasEmpty = 1;
			continue;
		}
		for (u32 h = hashSlot(x, tbits);; h = (h + 1) & tmask) {
			u32 prev = atomicCAS(&table[h], EMPTY, x);
			if (prev == EMPTY || prev == x) break;
		}
	}
}

struct HashProbe {
	const u32* table;
	int tbits;
	u32 tmask;
	u32 hasEmpty;
	__device__ __forceinline__ bool contains(u32 x) const {
		if (x == EMPTY) return hasEmpty;
		u32 h = hashSlot(x, tbits), e;
		while ((e = __ldg(table + h)) != x && e != EMPTY) h = (h + 1) & tmask;
		return e == x;
	}
};

__device__ __forceinline__ void hiMain(int mode, const u32* __restrict__ keys, u64 nkeys, const u32* __restrict__ table, int tbits,
	const u32* __restrict__ hasEmpty, u32* counts, const u64* __restrict__ offsets, u32* out, u64* total) {
	HashProbe p{table, tbits, (u32)((1ull << tbits) - 1), *hasEmpty};
	probeChunks(mode, keys, nkeys, p, counts, offsets, out, total);
}

// ------------------------------------------------------------ bitmaps

// bm_build sets bit x-lo of bm for every x of keys in [lo, hi]. Each thread
// takes a run of consecutive keys and ORs a word into memory only when the
// run moves to the next word: sorted keys share words.
#define BM_RUN 8
extern "C" __global__ void bm_build(const u32* __restrict__ keys, u64 n, u32 lo, u32 hi, u32* bm) {
	const u64 stride = (u64)gridDim.x * blockDim.x * BM_RUN;
	for (u64 s = ((u64)blockIdx.x * blockDim.x + threadIdx.x) * BM_RUN; s < n; s += stride) {
		u64 e = s + BM_RUN < n ? s + BM_RUN : n;
		u32 word = EMPTY, bits = 0;
		for (u64 k = s; k < e; ++k) {
			u32 x = keys[k];
			if (x < lo || x > hi) continue;
			u32 off = x - lo, w = off >> 5;
			if (w != word) {
				if (bits) atomicOr(bm + word, bits);
				word = w;
				bits = 0;
			}
			bits |= 1u << (off & 31);
		}
		if (bits) atomicOr(bm + word, bits);
	}
}

// Bitmap, naive: both sets as bitmaps over [lo, hi]; each thread ANDs
// BM_WORDS consecutive word pairs and counts their bits. A chunk of
// BM_CHUNK words is one unit.
__device__ __forceinline__ void bmMain(int mode, const u32* __restrict__ x, const u32* __restrict__ y, u64 words, u32 lo,
	u32* counts, const u64* __restrict__ offsets, u32* out, u64* total) {
	const u64 nchunks = (words + BM_CHUNK - 1) / BM_CHUNK;
	u32 acc = 0;
	for (u64 c = blockIdx.x; c < nchunks; c += gridDim.x) {
		const u64 w0 = c * BM_CHUNK + (u64)threadIdx.x * BM_WORDS;
		u32 m[BM_WORDS];
		u32 cnt = 0;
		if (w0 + BM_WORDS <= words) {
			// words is padded to a multiple of 4 by the caller's allocation
			// only when whole; this branch reads 16-byte vectors.
			const uint4* xv = reinterpret_cast<const uint4*>(x + w0);
			const uint4* yv = reinterpret_cast<const uint4*>(y + w0);
#pragma unroll
			for (int q = 0; q < BM_WORDS / 4; ++q) {
				uint4 p = __ldg(xv + q), r = __ldg(yv + q);
				m[4 * q + 0] = p.x & r.x;
				m[4 * q + 1] = p.y & r.y;
				m[4 * q + 2] = p.z & r.z;
				m[4 * q + 3] = p.w & r.w;
			}
		} else {
#pragma unroll
			for (int q = 0; q < BM_WORDS; ++q) m[q] = w0 + q < words ? x[w0 + q] & y[w0 + q] : 0;
		}
#pragma unroll
		for (int q = 0; q < BM_WORDS; ++q) cnt += __popc(m[q]);
		if (mode == TOTAL) {
			acc += cnt;
		} else if (mode == BLOCKS) {
			finish(BLOCKS, cnt, c, counts, total);
		} else {
			u32 sum;
			u32* dst = out + offsets[c] + blockScan(cnt, &sum);
#pragma unroll
			for (int q = 0; q < BM_WORDS; ++q) {
				u32 bits = m[q];
				const u32 base = lo + (u32)((w0 + q) << 5);
				while (bits) {
					*dst++ = base + (__ffs(bits) - 1);
					bits &= bits - 1;
				}
			}
		}
	}
	if (mode == TOTAL) finish(TOTAL, acc, 0, counts, total);
}

// Bitmap, dynamic: only the smaller set becomes a bitmap; the larger set is
// split evenly over the blocks, each testing its elements' bits.
struct BitmapProbe {
	const u32* bm;
	u32 lo, hi;
	__device__ __forceinline__ bool contains(u32 x) const {
		if (x < lo || x > hi) return false;
		u32 off = x - lo;
		return (__ldg(bm + (off >> 5)) >> (off & 31)) & 1;
	}
};

__device__ __forceinline__ void bmdMain(int mode, const u32* __restrict__ keys, u64 nkeys, const u32* __restrict__ bm, u32 lo, u32 hi,
	u32* counts, const u64* __restrict__ offsets, u32* out, u64* total) {
	BitmapProbe p{bm, lo, hi};
	probeChunks(mode, keys, nkeys, p, counts, offsets, out, total);
}

// ------------------------------------------------------------ scan

// scan_counts turns counts[0:n] into exclusive offsets and writes the sum
// to *total. One block of 1024 threads; each thread scans a contiguous run.
extern "C" __global__ void __launch_bounds__(1024) scan_counts(const u32* __restrict__ counts, u64 n, u64* offsets, u64* total) {
	__shared__ u64 sums[32];
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const u64 per = (n + 1023) / 1024;
	const u64 s = threadIdx.x * per;
	const u64 e = s + per < n ? s + per : n;
	u64 sum = 0;
	for (u64 k = s; k < e; ++k) sum += counts[k];
	u64 x = sum;
#pragma unroll
	for (int d = 1; d < 32; d <<= 1) {
		u64 y = __shfl_up_sync(0xffffffffu, x, d);
		if (lane >= d) x += y;
	}
	if (lane == 31) sums[warp] = x;
	__syncthreads();
	if (warp == 0) {
		u64 w = sums[lane];
#pragma unroll
		for (int d = 1; d < 32; d <<= 1) {
			u64 y = __shfl_up_sync(0xffffffffu, w, d);
			if (lane >= d) w += y;
		}
		sums[lane] = w;
	}
	__syncthreads();
	u64 run = (warp ? sums[warp - 1] : 0) + x - sum;
	for (u64 k = s; k < e; ++k) {
		offsets[k] = run;
		run += counts[k];
	}
	if (threadIdx.x == 1023) *total = run;
}

// ------------------------------------------------------------ wrappers

#define IP_PARAMS const u32 *__restrict__ a, u64 na, const u32 *__restrict__ b, u64 nb, const u64 *__restrict__ splits, \
	u32 *counts, const u64 *__restrict__ offsets, u32 *out, u64 *total
#define IP_ARGS a, na, b, nb, splits, counts, offsets, out, total

#define MODES(name, main, params, args) \
	extern "C" __global__ void __launch_bounds__(THREADS) name##_total(params) { main(TOTAL, args); } \
	extern "C" __global__ void __launch_bounds__(THREADS) name##_blocks(params) { main(BLOCKS, args); } \
	extern "C" __global__ void __launch_bounds__(THREADS) name##_write(params) { main(WRITE, args); }

// ONE_FAMILY builds the helper kernels and only the methods named by
// FAMILY_ macros (-DONE_FAMILY -DFAMILY_obs): NVRTC compiles what a run
// uses, not every method at once. FAMILY_ip is ip and ipf.
#if !defined(ONE_FAMILY) || defined(FAMILY_ip)
MODES(ip, ipMain, IP_PARAMS, IP_ARGS)
MODES(ipf, ipfMain, IP_PARAMS, IP_ARGS)
#endif
#if !defined(IP_ONLY) && (!defined(ONE_FAMILY) || defined(FAMILY_ipobs))
MODES(ipobs, ipobsMain, IP_PARAMS, IP_ARGS)
#endif
#if !defined(IP_ONLY) && (!defined(ONE_FAMILY) || defined(FAMILY_iphi))
MODES(iphi, iphiMain, IP_PARAMS, IP_ARGS)
#endif

#define OBS_PARAMS const u32 *__restrict__ keys, u64 nkeys, const u32 *__restrict__ big, u64 nbig, const u32 *__restrict__ spl, \
	u32 *counts, const u64 *__restrict__ offsets, u32 *out, u64 *total
#define OBS_ARGS keys, nkeys, big, nbig, spl, counts, offsets, out, total
#if !defined(ONE_FAMILY) || defined(FAMILY_obs)
MODES(obs, obsMain, OBS_PARAMS, OBS_ARGS)
#endif

#define HI_PARAMS const u32 *__restrict__ keys, u64 nkeys, const u32 *__restrict__ table, int tbits, const u32 *__restrict__ hasEmpty, \
	u32 *counts, const u64 *__restrict__ offsets, u32 *out, u64 *total
#define HI_ARGS keys, nkeys, table, tbits, hasEmpty, counts, offsets, out, total
#if !defined(ONE_FAMILY) || defined(FAMILY_hi)
MODES(hi, hiMain, HI_PARAMS, HI_ARGS)
#endif

#define BM_PARAMS const u32 *__restrict__ x, const u32 *__restrict__ y, u64 words, u32 lo, \
	u32 *counts, const u64 *__restrict__ offsets, u32 *out, u64 *total
#define BM_ARGS x, y, words, lo, counts, offsets, out, total
#if !defined(ONE_FAMILY) || defined(FAMILY_bm)
MODES(bm, bmMain, BM_PARAMS, BM_ARGS)
#endif

#define BMD_PARAMS const u32 *__restrict__ keys, u64 nkeys, const u32 *__restrict__ bm, u32 lo, u32 hi, \
	u32 *counts, const u64 *__restrict__ offsets, u32 *out, u64 *total
#define BMD_ARGS keys, nkeys, bm, lo, hi, counts, offsets, out, total
#if !defined(ONE_FAMILY) || defined(FAMILY_bmd)
MODES(bmd, bmdMain, BMD_PARAMS, BMD_ARGS)
#endif
