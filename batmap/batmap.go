// Package batmap implements BATMAP, the set layout of Amossen and Pagh ("A
// New Data Layout For Set Intersection on GPUs", IPDPS 2011), in which the
// size of the intersection of two sets is computed by a data-independent,
// element-by-element comparison of their batmaps: no branches, sequential
// memory access, the same steps for every pair.
//
// Each set S_i is stored in three hash tables of size r_i, a power of two
// at least Load·|S_i|; every element is stored in two of its three possible
// positions, by a generalisation of cuckoo hashing (two insertions, the
// tables visited in the circular order 1, 2, 3, 1, ... and at most MaxLoop
// rounds). All sets share the three hash functions — three permutations
// π_t of the universe — with ranges scaled by powers of two, so a batmap
// of range r_i lines up with one of range r_j > r_i when it is repeated
// r_j/r_i times. Two sets that both hold x store it in at least one common
// position; an indicator bit, set on the copy that comes second in the
// circular order, makes each common element count exactly once.
//
// Entries are compressed as in section III-A of the paper: the position of
// an entry already gives the low bits of π_t(x), so an 8-bit entry keeps 7
// high bits and the indicator bit, 4 entries a 32-bit word, and the count
// of 4 (here 8) entry pairs is a handful of branch-free word operations.
// When the universe is large next to the sets, that compression forces a
// large minimum width; the layout then uses 16- or 32-bit (uncompressed)
// entries instead, chosen to minimise the all-pairs work (Layout).
//
// Insertions that fail after MaxLoop rounds are recorded per set (section
// III-C) and corrected for when counting, so every count is exact.
//
// Batmaps are stored flat, sorted by width, in one []uint32 with offsets:
// the form the paper's GPU kernel takes. AllPairs computes all pair counts
// on the CPU in tiles of the upper triangle, as the GPU kernel does.
package batmap
