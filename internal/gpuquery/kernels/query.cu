// Batched conjunctive queries (Wu et al., "A Batched GPU Algorithm for Set
// Intersection"): a group of G threads answers one job, a query or a slice
// of its shortest list. Each thread takes an element of the shortest list
// and looks it up in every other list of the query, in order of length,
// stopping at the first that lacks it: a binary search in a posting list,
// or one bit of the list's bitmap for the densest terms. A ballot and a
// prefix sum over the group's warps (the scan) give each match its place,
// and the matches are written there (the compaction), the first cap of
// them; the group then counts them all.
//
// Jobs come sorted into buckets by the length of their shortest list
// (the host's semi-sort), one launch per bucket with a group size to
// match: 32 threads (a warp, four jobs per block) for short lists, up to
// 512 (a block) for long ones.
//
// Output, in one buffer res:
//   res[0]                  cursor: ids written to out so far (compact mode)
//   res[1 + j]              job j's count of matches
//   res[1 + jobs + j]       job j's first id in out (compact mode)
//   res[1 + 2*jobs + ...]   scratch: job j's first min(count, cap) matches
//                           at its capOff
// In count mode nothing but the counts is written. In direct mode the host
// reads the scratch itself; in compact mode each job copies its matches
// from the scratch to out, at a place it reserves with an atomic add, so
// that the host copies back only the matches.
//
// Compiled by NVRTC: self-contained, no standard headers.

typedef unsigned int u32;
typedef unsigned long long u64;

struct Job {
	u64 off0;   // the shortest list's slice: postings[off0 : off0+len0]
	u32 len0;
	u32 term1;  // its other terms: terms[term1 : term1+nother]
	u32 nother;
	u32 cap;    // matches to keep
	u32 capOff; // where they go in the scratch
	u32 pad;
};

struct Term {
	u64 off;  // postings[off : off+len]
	u32 len;  // >= 1
	int slot; // its bitmap, or -1
};

enum Mode { COUNT = 0, DIRECT = 1, COMPACT = 2 };

// member reports whether x is in term t's list.
__device__ __forceinline__ bool member(const u32* __restrict__ post, const u64* __restrict__ bitmaps, u32 words, const Term& t, u32 x) {
	if (t.slot >= 0) {
		return (__ldg(bitmaps + (u64)t.slot * words + (x >> 6)) >> (x & 63)) & 1;
	}
	// Branch-free lower search: the same number of steps for every
	// thread of a warp searching the same list.
	const u32* base = post + t.off;
	u32 n = t.len;
	while (n > 1) {
		u32 half = n >> 1;
		base = (__ldg(base + half) <= x) ? base + half : base;
		n -= half;
	}
	return __ldg(base) == x;
}

// answer runs job j with a group of G threads; tid is the thread's place
// in the group. warpCounts is the group's shared scratch (G/32 words);
// G > 32 groups are whole blocks.
template <int G>
__device__ __forceinline__ void answer(u32 j, u32 tid, const Job* __restrict__ jobs, const Term* __restrict__ terms,
                                       const u32* __restrict__ post, const u64* __restrict__ bitmaps, u32 words,
                                       u32 njobs, u32* __restrict__ res, u32* __restrict__ out, int mode, u32* warpCounts) {
	const u32 lane = tid & 31, warp = tid >> 5;
	const u32 lt = (1u << lane) - 1;
	const Job job = jobs[j];
	u32* scratch = res + 1 + 2 * (u64)njobs;
	u32 total = 0;
	for (u32 base = 0; base < job.len0; base += G) {
		u32 i = base + tid;
		bool hit = i < job.len0;
		u32 x = hit ? __ldg(post + job.off0 + i) : 0;
		for (u32 k = 0; hit && k < job.nother; k++) {
			const Term t = terms[job.term1 + k];
			hit = member(post, bitmaps, words, t, x);
		}
		u32 m = __ballot_sync(0xffffffffu, hit);
		if (G == 32) {
			if (mode != COUNT && hit) {
				u32 pos = total + __popc(m & lt);
				if (pos < job.cap) scratch[job.capOff + pos] = x;
			}
			total += __popc(m);
		} else {
			if (lane == 0) warpCounts[warp] = __popc(m);
			__syncthreads();
			u32 before = 0, all = 0;
#pragma unroll
			for (u32 w = 0; w < G / 32; w++) {
				u32 c = warpCounts[w];
				before += w < warp ? c : 0;
				all += c;
			}
			if (mode != COUNT && hit) {
				u32 pos = total + before + __popc(m & lt);
				if (pos < job.cap) scratch[job.capOff + pos] = x;
			}
			total += all;
			__syncthreads(); // warpCounts is written again next round
		}
	}
	if (tid == 0) res[1 + j] = total;
	if (mode != COMPACT) return;
	// Compact: reserve room in out and copy the matches there.
	u32 n = min(total, job.cap);
	u32 at = 0;
	if (tid == 0) {
		at = n > 0 ? atomicAdd(res, n) : 0;
		res[1 + njobs + j] = at;
	}
	if (G == 32) {
		at = __shfl_sync(0xffffffffu, at, 0);
	} else {
		if (tid == 0) warpCounts[0] = at;
		__syncthreads();
		at = warpCounts[0];
	}
	for (u32 k = tid; k < n; k += G) out[at + k] = scratch[job.capOff + k];
}

// Four warps a block, a job each.
extern "C" __global__ void __launch_bounds__(128) query_g32(const Job* jobs, const Term* terms, const u32* post,
                                                              const u64* bitmaps, u32 words, u32 first, u32 count,
                                                              u32 njobs, u32* res, u32* out, int mode) {
	u32 g = blockIdx.x * 4 + (threadIdx.x >> 5);
	if (g >= count) return; // a whole warp leaves together
	answer<32>(first + g, threadIdx.x & 31, jobs, terms, post, bitmaps, words, njobs, res, out, mode, 0);
}

#define GROUP_KERNEL(G)                                                                                                  \
	extern "C" __global__ void __launch_bounds__(G) query_g##G(const Job* jobs, const Term* terms, const u32* post,       \
	                                                          const u64* bitmaps, u32 words, u32 first, u32 count,       \
	                                                          u32 njobs, u32* res, u32* out, int mode) {                 \
		__shared__ u32 warpCounts[G / 32];                                                                               \
		answer<G>(first + blockIdx.x, threadIdx.x, jobs, terms, post, bitmaps, words, njobs, res, out, mode, warpCounts); \
	}

GROUP_KERNEL(64)
GROUP_KERNEL(128)
GROUP_KERNEL(256)
GROUP_KERNEL(512)
