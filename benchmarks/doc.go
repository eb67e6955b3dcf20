// Package benchmarks compares xsect's pairwise intersection with Roaring
// bitmaps (github.com/RoaringBitmap/roaring/v2) on generated pairs of sets
// and on Roaring's real data sets. It holds only benchmarks and the tests
// that check the contenders agree; it lives in a module of its own so that
// Roaring stays out of xsect's dependencies. See README.md.
package benchmarks
