// Batched conjunctive queries (Wu et al., "A Batched GPU Algorithm for Set
// Intersection"), the whole batch prepared on the device.
//
//   prepare   one thread per query: its terms' lists looked up in the
//             resident term table, sorted by length (an insertion sort, as
//             in the paper), duplicates dropped; the shortest list cut into
//             slices of at most SPLIT elements, each a job, put in the
//             bucket of its length (the semi-sort: an atomic counter per
//             bucket); room reserved for the ids the query keeps.
//   bucket_G  one kernel per bucket, a group of G threads per job (a warp
//             for short slices, up to a block of 512 for long ones), the
//             groups striding over the bucket's jobs: each thread takes an
//             element of the slice and looks it up in every other list of
//             the query, shortest first, stopping at the first that lacks
//             it (a binary search, or one bit of the bitmap of a dense
//             list); a ballot and a prefix sum over the group's warps (the
//             scan) place the matches, the first cap of them written to the
//             query's scratch (the compaction); the counts are added to the
//             query's.
//   compact   one warp per query reserves a place in out for the ids it
//             keeps, and gives each slice its share; then a block per job
//             copies the slice's share there: the host copies back only
//             the ids kept.
//
// Compiled by NVRTC: self-contained, no standard headers.

typedef unsigned int u32;
typedef unsigned long long u64;

#ifndef SPLIT
#define SPLIT 8192 // longest slice of a shortest list one job takes
#endif
#define MAXT 32    // most terms of a query (the host answers longer ones)
#define BUCKETS 5

struct Term {
	u64 off;  // postings[off : off+len]
	u32 len;
	int slot; // its bitmap, or -1
};

struct Job {
	u64 off0;   // the slice: postings[off0 : off0+len0]
	u32 len0;
	u32 term1;  // the query's other terms: sorted[term1 : term1+nother]
	u32 nother;
	u32 cap;    // matches kept
	u32 capOff; // where, in the scratch
	u32 piece;  // its slot in pieceCounts
	u32 query;
	u32 pad;
};

// Control words at the start of the header.
enum { C_BUCKETS = 0, C_CAPS = BUCKETS, C_PIECES, C_OUT, C_WORDS = 8 };

// Per-query arrays after the control words, each nq long.
enum { Q_COUNT = 0, Q_FLAG, Q_OFF, Q_N, Q_BASE, Q_PBASE, Q_NP, Q_ARRAYS };

struct Batch {
	const u32* qstart;  // nq+1
	const u32* qterms;
	const Term* table;  // the index's terms
	u32 nterms;
	const u32* post;
	const u64* bitmaps;
	u32 words;          // per bitmap
	u32 nq;
	int limit;          // < 0: all
	int countOnly;
	Term* sorted;       // as qterms
	Job* jobs;          // BUCKETS regions of jobCap
	u32 jobCap;
	u32* head;          // C_WORDS control words, then Q_ARRAYS arrays of nq
	u32* pieceCounts; // 3 arrays of pieceCap: each slice's count, ids kept, place in out
	u32 pieceCap;
	u32* scratch;
	u32 scratchCap;
	u32* out;
};

// The kernels' parameters: a Batch, field by field (the launcher passes
// scalars and pointers only).
#define BATCH_PARAMS                                                                                           \
	const u32 *qstart, const u32 *qterms, const Term *table, u32 nterms, const u32 *post, const u64 *bitmaps, \
	    u32 words, u32 nq, int limit, int countOnly, Term *sorted, Job *jobs, u32 jobCap, u32 *head,          \
	    u32 *pieceCounts, u32 pieceCap, u32 *scratch, u32 scratchCap, u32 *out
#define BATCH_INIT                                                                                             \
	const Batch b = {qstart, qterms, table, nterms, post, bitmaps, words, nq, limit, countOnly, sorted, jobs, \
	                 jobCap, head, pieceCounts, pieceCap, scratch, scratchCap, out}

__device__ __forceinline__ u32 bucketOf(u32 n) {
	return n <= 64 ? 0 : n <= 256 ? 1 : n <= 1024 ? 2 : n <= 4096 ? 3 : 4;
}

__device__ __forceinline__ u32 capOf(const Batch& b, u32 n) {
	if (b.countOnly) return 0;
	return b.limit < 0 ? n : min(n, (u32)b.limit);
}

extern "C" __global__ void prepare(BATCH_PARAMS) {
	BATCH_INIT;
	u32 q = blockIdx.x * blockDim.x + threadIdx.x;
	if (q >= b.nq) return;
	u32* qa = b.head + C_WORDS;
	qa[Q_COUNT * b.nq + q] = 0;
	qa[Q_FLAG * b.nq + q] = 0;
	qa[Q_NP * b.nq + q] = 0;
	qa[Q_N * b.nq + q] = 0;
	qa[Q_OFF * b.nq + q] = 0;
	u32 s = b.qstart[q], k = b.qstart[q + 1] - s;
	if (k == 0 || k > MAXT) return; // matches nothing; the host answers longer ones
	u32 id[MAXT];
	Term t[MAXT];
	u32 u = 0;
	for (u32 i = 0; i < k; i++) {
		u32 x = b.qterms[s + i];
		if (x >= b.nterms) return; // a term the index lacks
		Term ti = b.table[x];
		if (ti.len == 0) return;
		// Insertion by (length, id); an id seen already is dropped.
		u32 j = u;
		bool dup = false;
		for (u32 m = 0; m < u; m++) dup |= id[m] == x;
		if (dup) continue;
		while (j > 0 && (t[j - 1].len > ti.len || (t[j - 1].len == ti.len && id[j - 1] > x))) {
			t[j] = t[j - 1];
			id[j] = id[j - 1];
			j--;
		}
		t[j] = ti;
		id[j] = x;
		u++;
	}
	for (u32 i = 0; i < u; i++) b.sorted[s + i] = t[i];
	u32 len0 = t[0].len;
	u32 np = (len0 + SPLIT - 1) / SPLIT;
	u32 capFull = capOf(b, SPLIT), capLast = capOf(b, len0 - (np - 1) * SPLIT);
	u32 caps = (np - 1) * capFull + capLast;
	u32 base = 0;
	if (caps > 0) {
		base = atomicAdd(b.head + C_CAPS, caps);
		if (base > b.scratchCap || caps > b.scratchCap - base) {
			qa[Q_FLAG * b.nq + q] = 1; // no room: the host answers it
			return;
		}
	}
	u32 pbase = atomicAdd(b.head + C_PIECES, np);
	if (pbase > b.pieceCap || np > b.pieceCap - pbase) {
		qa[Q_FLAG * b.nq + q] = 1;
		return;
	}
	qa[Q_BASE * b.nq + q] = base;
	qa[Q_PBASE * b.nq + q] = pbase;
	qa[Q_NP * b.nq + q] = np;
	for (u32 p = 0; p < np; p++) {
		u32 n = p + 1 < np ? SPLIT : len0 - p * SPLIT;
		u32 bk = bucketOf(n);
		u32 slot = atomicAdd(b.head + C_BUCKETS + bk, 1);
		if (slot >= b.jobCap) {
			qa[Q_FLAG * b.nq + q] = 1; // its other slices run, unread
			continue;
		}
		Job j;
		j.off0 = t[0].off + (u64)p * SPLIT;
		j.len0 = n;
		j.term1 = s + 1;
		j.nother = u - 1;
		j.cap = p + 1 < np ? capFull : capLast;
		j.capOff = base + p * capFull;
		j.piece = pbase + p;
		j.query = q;
		j.pad = 0;
		b.jobs[(u64)bk * b.jobCap + slot] = j;
	}
}

// member reports whether x is in list t.
__device__ __forceinline__ bool member(const Batch& b, const Term& t, u32 x) {
	if (t.slot >= 0) {
		return (__ldg(b.bitmaps + (u64)t.slot * b.words + (x >> 6)) >> (x & 63)) & 1;
	}
	// Branch-free: the same steps for every thread of a warp searching
	// the same list.
	const u32* base = b.post + t.off;
	u32 n = t.len;
	while (n > 1) {
		u32 half = n >> 1;
		base = (__ldg(base + half) <= x) ? base + half : base;
		n -= half;
	}
	return __ldg(base) == x;
}

// runJob answers one job with a group of G threads; tid is the thread's
// place in the group, warpCounts the group's shared words (G > 32 groups
// are whole blocks).
template <int G>
__device__ __forceinline__ void runJob(const Batch& b, const Job& job, u32 tid, u32* warpCounts) {
	const u32 lane = tid & 31, warp = tid >> 5;
	const u32 lt = (1u << lane) - 1;
	u32 total = 0;
	for (u32 base = 0; base < job.len0; base += G) {
		u32 i = base + tid;
		bool hit = i < job.len0;
		u32 x = hit ? __ldg(b.post + job.off0 + i) : 0;
		for (u32 k = 0; hit && k < job.nother; k++) {
			const Term t = b.sorted[job.term1 + k];
			hit = member(b, t, x);
		}
		u32 m = __ballot_sync(0xffffffffu, hit);
		u32 before = 0, all = __popc(m);
		if (G > 32) {
			if (lane == 0) warpCounts[warp] = all;
			__syncthreads();
			all = 0;
#pragma unroll
			for (u32 w = 0; w < G / 32; w++) {
				u32 c = warpCounts[w];
				before += w < warp ? c : 0;
				all += c;
			}
			__syncthreads(); // warpCounts is written again next round
		}
		if (hit) {
			u32 pos = total + before + __popc(m & lt);
			if (pos < job.cap) b.scratch[job.capOff + pos] = x;
		}
		total += all;
	}
	if (tid == 0) {
		atomicAdd(b.head + C_WORDS + Q_COUNT * b.nq + job.query, total);
		b.pieceCounts[job.piece] = total;
	}
}

// bucket_32: four warps a block, each a group striding over the jobs.
extern "C" __global__ void __launch_bounds__(128) bucket_32(BATCH_PARAMS) {
	BATCH_INIT;
	const u32 n = min(b.head[C_BUCKETS + 0], b.jobCap);
	for (u32 j = blockIdx.x * 4 + (threadIdx.x >> 5); j < n; j += gridDim.x * 4) {
		const Job job = b.jobs[j];
		runJob<32>(b, job, threadIdx.x & 31, 0);
	}
}

#define BUCKET_KERNEL(G, B)                                                         \
	extern "C" __global__ void __launch_bounds__(G) bucket_##G(BATCH_PARAMS) {      \
		BATCH_INIT;                                                                 \
		__shared__ u32 warpCounts[G / 32];                                          \
		const u32 n = min(b.head[C_BUCKETS + B], b.jobCap);                         \
		const Job* js = b.jobs + (u64)B * b.jobCap;                                 \
		for (u32 j = blockIdx.x; j < n; j += gridDim.x) {                           \
			const Job job = js[j];                                                  \
			runJob<G>(b, job, threadIdx.x, warpCounts);                             \
		}                                                                           \
	}

BUCKET_KERNEL(64, 1)
BUCKET_KERNEL(128, 2)
BUCKET_KERNEL(256, 3)
BUCKET_KERNEL(512, 4)

// compact_queries: one warp per query, striding: the ids it keeps (the
// first limit of its matches), a place for them in out reserved with an
// atomic add, and each slice's share and place (pieceKept, pieceOut).
extern "C" __global__ void __launch_bounds__(256) compact_queries(BATCH_PARAMS) {
	BATCH_INIT;
	const u32 lane = threadIdx.x & 31;
	const u32 warps = gridDim.x * (blockDim.x >> 5);
	u32* qa = b.head + C_WORDS;
	u32* kept = b.pieceCounts + b.pieceCap;
	u32* outAt = b.pieceCounts + 2 * (u64)b.pieceCap;
	const u32 capFull = capOf(b, SPLIT);
	for (u32 q = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); q < b.nq; q += warps) {
		u32 np = qa[Q_NP * b.nq + q];
		if (np == 0 || qa[Q_FLAG * b.nq + q]) continue;
		u32 total = qa[Q_COUNT * b.nq + q];
		u32 n = b.limit < 0 ? total : min(total, (u32)b.limit);
		u32 at = 0;
		if (lane == 0 && n > 0) at = atomicAdd(b.head + C_OUT, n);
		at = __shfl_sync(0xffffffffu, at, 0);
		u32 pbase = qa[Q_PBASE * b.nq + q];
		if (lane == 0) {
			qa[Q_OFF * b.nq + q] = at;
			qa[Q_N * b.nq + q] = n;
			u32 done = 0;
			for (u32 p = 0; p < np; p++) {
				u32 k = min(min(b.pieceCounts[pbase + p], capFull), n - done);
				kept[pbase + p] = k;
				outAt[pbase + p] = at + done;
				done += k;
			}
		}
	}
}

// compact_jobs: a block per job, striding over every bucket's jobs: the
// job's share of its query's ids copied from the scratch to out.
extern "C" __global__ void __launch_bounds__(256) compact_jobs(BATCH_PARAMS) {
	BATCH_INIT;
	const u32* qa = b.head + C_WORDS;
	const u32* kept = b.pieceCounts + b.pieceCap;
	const u32* outAt = b.pieceCounts + 2 * (u64)b.pieceCap;
	u32 counts[BUCKETS], total = 0;
	for (u32 k = 0; k < BUCKETS; k++) {
		counts[k] = min(b.head[C_BUCKETS + k], b.jobCap);
		total += counts[k];
	}
	for (u32 v = blockIdx.x; v < total; v += gridDim.x) {
		u32 bk = 0, j = v;
		while (j >= counts[bk]) {
			j -= counts[bk];
			bk++;
		}
		const Job job = b.jobs[(u64)bk * b.jobCap + j];
		if (qa[Q_FLAG * b.nq + job.query]) continue;
		const u32 n = kept[job.piece], at = outAt[job.piece];
		for (u32 i = threadIdx.x; i < n; i += blockDim.x) b.out[at + i] = b.scratch[job.capOff + i];
	}
}
