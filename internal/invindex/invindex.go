// Package invindex is the inverted index of the conjunctive query
// workload: the posting list of every term (the strictly increasing ids
// of the documents that hold it) in one flat array with offsets, a bitmap
// beside each of the densest lists, and, for an index built from text,
// the vocabulary. It builds indexes from documents, writes them in
// xsect's index file format and opens such files, memory-mapped where
// the system allows, after verifying them (docs/QUERY.md specifies the
// format).
//
// Term ids are uint32; NoTerm (2^32-1) is never a term of an index, so a
// query can always name a term that matches nothing.
package invindex

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
)

// NoTerm is a term id that no index holds: an index has at most NoTerm
// terms (ids 0 to 2^32-2). Parsers map unknown words and ids too large
// for a uint32 to it.
const NoTerm = math.MaxUint32

// MaxDocs is the most documents an index holds: ids are uint32.
const MaxDocs = 1 << 32

// Index is an inverted index. Its slices may point into a read-only
// memory mapping: they must not be written, nor used after Close.
type Index struct {
	// NumDocs is the number of documents; their ids are 0 to NumDocs-1.
	NumDocs int
	// Offsets has one entry per term and one more: term t's posting list
	// is Postings[Offsets[t]:Offsets[t+1]].
	Offsets []uint64
	// Postings holds every posting list, each strictly increasing.
	Postings []uint32

	// DenseTerms lists, increasing, the terms that have a bitmap beside
	// their posting list; Bitmaps holds those bitmaps, BitmapWords()
	// uint64 words each, in that order: bit d%64 of word d/64 is set when
	// document d holds the term.
	DenseTerms []uint32
	Bitmaps    []uint64
	// dense maps a term to its bitmap's position in DenseTerms, or -1;
	// built on load (nil when there are no dense terms).
	dense []int32

	// WordOffsets and Words are the vocabulary of an index built from
	// text (nil otherwise): term t is the word
	// Words[WordOffsets[t]:WordOffsets[t+1]]. Words are strictly
	// increasing, so term ids are the words' alphabetical ranks.
	WordOffsets []uint64
	Words       []byte

	// Path is the file the index was opened from ("" if built here).
	Path string

	release func() error // unmaps the file; nil when nothing to release
	// changed says whether the mapped file has changed since it was
	// mapped (nil when nothing is mapped).
	changed func() error
}

// Terms returns the number of terms (posting lists).
func (ix *Index) Terms() int { return len(ix.Offsets) - 1 }

// List returns the posting list of term t, which must be below Terms.
func (ix *Index) List(t uint32) []uint32 {
	return ix.Postings[ix.Offsets[t]:ix.Offsets[t+1]:ix.Offsets[t+1]]
}

// Len returns the length of term t's posting list, 0 for a term the index
// does not hold (t >= Terms).
func (ix *Index) Len(t uint32) int {
	if int(t) >= ix.Terms() {
		return 0
	}
	return int(ix.Offsets[t+1] - ix.Offsets[t])
}

// BitmapWords returns the number of uint64 words in each bitmap.
func (ix *Index) BitmapWords() int { return (ix.NumDocs + 63) / 64 }

// DenseSlot returns the position of term t's bitmap among the dense
// terms, or -1 when it has none.
func (ix *Index) DenseSlot(t uint32) int {
	if ix.dense == nil || int(t) >= len(ix.dense) {
		return -1
	}
	return int(ix.dense[t])
}

// Bitmap returns term t's bitmap, or nil when it has none.
func (ix *Index) Bitmap(t uint32) []uint64 {
	s := ix.DenseSlot(t)
	if s < 0 {
		return nil
	}
	w := ix.BitmapWords()
	return ix.Bitmaps[s*w : (s+1)*w : (s+1)*w]
}

// HasVocabulary reports whether the index was built from text.
func (ix *Index) HasVocabulary() bool { return ix.WordOffsets != nil }

// Word returns term t's word (nil without a vocabulary).
func (ix *Index) Word(t uint32) []byte {
	if ix.WordOffsets == nil || int(t) >= ix.Terms() {
		return nil
	}
	return ix.Words[ix.WordOffsets[t]:ix.WordOffsets[t+1]]
}

// Lookup returns the term of word, by binary search of the vocabulary,
// or NoTerm when the index does not hold it (or has no vocabulary).
func (ix *Index) Lookup(word []byte) uint32 {
	if ix.WordOffsets == nil {
		return NoTerm
	}
	lo, hi := 0, ix.Terms()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bytes.Compare(ix.Words[ix.WordOffsets[m]:ix.WordOffsets[m+1]], word) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < ix.Terms() && bytes.Equal(ix.Words[ix.WordOffsets[lo]:ix.WordOffsets[lo+1]], word) {
		return uint32(lo)
	}
	return NoTerm
}

// Memory returns the bytes the index's arrays take (mapped or not).
func (ix *Index) Memory() int64 {
	return 8*int64(len(ix.Offsets)) + 4*int64(len(ix.Postings)) + 4*int64(len(ix.DenseTerms)) +
		8*int64(len(ix.Bitmaps)) + 4*int64(len(ix.dense)) + 8*int64(len(ix.WordOffsets)) + int64(len(ix.Words))
}

// ErrChanged is matched (errors.Is) by the error of Changed and Guard:
// the file of a mapped index changed while open.
var ErrChanged = errors.New("the index file changed while in use")

func changedError(path string) error {
	return fmt.Errorf("%s: %w (overwritten in place? write a new index elsewhere and rename it over the old one)", path, ErrChanged)
}

// Changed returns an error matching ErrChanged if the index is mapped
// from a file that has changed since it was opened (its size or its
// modification time), nil otherwise. The mapping shows the file's
// bytes as they are now: what Open verified may no longer hold, and a file
// cut shorter makes reading past its new end a fault (SIGBUS), which
// would crash the process. A file renamed over the index's path is no
// change: the mapping keeps the old file.
func (ix *Index) Changed() error {
	if ix.changed == nil {
		return nil
	}
	return ix.changed()
}

// Guard makes a goroutine that reads the index survive its file changing
// under it: deferred as "defer ix.Guard(&err)()" it turns the faults of
// reading a mapping past the file's new end into panics
// (debug.SetPanicOnFault) and then a panic, when the file has changed,
// into *errp, the error of Changed. A panic with the file unchanged is a
// bug, not a change: it goes on.
func (ix *Index) Guard(errp *error) func() {
	if ix.changed == nil {
		return func() {}
	}
	old := debug.SetPanicOnFault(true)
	return func() {
		r := recover()
		debug.SetPanicOnFault(old)
		if r == nil {
			return
		}
		if err := ix.Changed(); err != nil {
			*errp = err
			return
		}
		panic(r)
	}
}

// Close releases the file mapping, if any. The index must not be used
// after.
func (ix *Index) Close() error {
	if ix.release == nil {
		return nil
	}
	r := ix.release
	ix.release = nil
	return r()
}

// buildDense fills ix.dense from ix.DenseTerms.
func (ix *Index) buildDense() {
	if len(ix.DenseTerms) == 0 {
		ix.dense = nil
		return
	}
	ix.dense = make([]int32, ix.Terms())
	for i := range ix.dense {
		ix.dense[i] = -1
	}
	for s, t := range ix.DenseTerms {
		ix.dense[t] = int32(s)
	}
}

// String describes the index in one line.
func (ix *Index) String() string {
	v := ""
	if ix.HasVocabulary() {
		v = ", vocabulary"
	}
	return fmt.Sprintf("%d documents, %d terms, %d postings, %d bitmaps%s", ix.NumDocs, ix.Terms(), len(ix.Postings), len(ix.DenseTerms), v)
}
