package twolevel

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/xsect/xsect/intersect"
)

// Benchmarks: two random sets of 1M elements each over universes from 2^20
// (groups of about 64K, nearly full) to 2^32 (groups of about 16), the
// two-level methods against package intersect on the same sets as plain
// slices. Gelem/s counts input elements (both sets) a second; B/elem is
// the two-level layout's memory per element (plain slices take 4).
//
//	go test -run '^$' -bench . -count 6 ./intersect/twolevel/

const benchN = 1 << 20

var benchUniverses = []int{20, 22, 24, 28, 32}

type benchInput struct {
	a, b   []uint32
	ta, tb *Set
}

var benchInputs = sync.OnceValue(func() map[int]benchInput {
	r := rand.New(rand.NewPCG(11, 12))
	m := map[int]benchInput{}
	for _, u := range benchUniverses {
		a := randomSet(r, benchN, 0, 1<<u)
		b := randomSet(r, benchN, 0, 1<<u)
		m[u] = benchInput{a, b, FromSorted(a), FromSorted(b)}
	}
	return m
})

func report(b *testing.B, in benchInput) {
	b.ReportMetric(float64(len(in.a)+len(in.b))*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
}

func BenchmarkCount(b *testing.B) {
	for _, u := range benchUniverses {
		in := benchInputs()[u]
		for _, m := range plainMethods() {
			b.Run(fmt.Sprintf("u=2^%d/plain-%s", u, m.Name), func(b *testing.B) {
				for b.Loop() {
					m.Count(in.a, in.b)
				}
				report(b, in)
				b.ReportMetric(4, "B/elem")
			})
		}
		for _, m := range allMethods() {
			b.Run(fmt.Sprintf("u=2^%d/%s", u, m.Name), func(b *testing.B) {
				for b.Loop() {
					m.Count(in.ta, in.tb)
				}
				report(b, in)
				b.ReportMetric(float64(in.ta.SizeBytes()+in.tb.SizeBytes())/float64(in.ta.Len()+in.tb.Len()), "B/elem")
			})
		}
	}
}

func BenchmarkIntersect(b *testing.B) {
	for _, u := range benchUniverses {
		in := benchInputs()[u]
		dst := make([]uint32, 0, benchN+64)
		for _, m := range plainMethods() {
			b.Run(fmt.Sprintf("u=2^%d/plain-%s", u, m.Name), func(b *testing.B) {
				for b.Loop() {
					m.Intersect(dst[:0], in.a, in.b)
				}
				report(b, in)
			})
		}
		for _, m := range allMethods() {
			b.Run(fmt.Sprintf("u=2^%d/%s", u, m.Name), func(b *testing.B) {
				for b.Loop() {
					m.Intersect(dst[:0], in.ta, in.tb)
				}
				report(b, in)
			})
			b.Run(fmt.Sprintf("u=2^%d/%s-set", u, m.Name), func(b *testing.B) {
				for b.Loop() {
					m.IntersectSet(in.ta, in.tb)
				}
				report(b, in)
			})
		}
	}
}

// BenchmarkFromSorted measures building the layout from a plain slice.
func BenchmarkFromSorted(b *testing.B) {
	for _, u := range benchUniverses {
		in := benchInputs()[u]
		b.Run(fmt.Sprintf("u=2^%d", u), func(b *testing.B) {
			for b.Loop() {
				FromSorted(in.a)
			}
			b.ReportMetric(float64(len(in.a))*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
	}
}

// plainMethods returns package intersect's adaptive method and its
// methods for sets of similar size (galloping is for skewed sizes).
func plainMethods() []intersect.Method {
	auto, _ := intersect.Lookup("auto")
	ms := []intersect.Method{auto}
	for _, m := range intersect.Methods() {
		if m.Name != "gallop" && m.Name != "merge" {
			ms = append(ms, m)
		}
	}
	return ms
}
