package serve

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// sameRequest reports whether a and b hold the same values, nil-ness
// included (a nil Terms means none given; an empty one, "terms":[]).
func sameRequest(a, b searchRequest) bool {
	if (a.Terms == nil) != (b.Terms == nil) || !slices.Equal(a.Terms, b.Terms) {
		return false
	}
	if (a.Q == nil) != (b.Q == nil) || a.Q != nil && *a.Q != *b.Q {
		return false
	}
	return (a.Limit == nil) == (b.Limit == nil) && (a.Limit == nil || *a.Limit == *b.Limit)
}

func showRequest(r searchRequest) string {
	s := fmt.Sprintf("terms %v (nil %v)", []uint32(r.Terms), r.Terms == nil)
	if r.Q != nil {
		s += fmt.Sprintf(" q %q", *r.Q)
	}
	if r.Limit != nil {
		s += fmt.Sprintf(" limit %d", *r.Limit)
	}
	return s
}

// checkFast checks that the fast parsers accept b only where encoding/json
// (decodeStrict, the path every body took before) accepts it, with the same
// values. It returns whether each fast parser accepted it.
func checkFast(t *testing.T, b []byte) (search, batch bool) {
	t.Helper()
	var fast searchRequest
	if search = parseSearch(b, &fast); search {
		var slow searchRequest
		if err := decodeStrict(b, &slow); err != nil {
			t.Fatalf("%q: the fast parser accepts a search that encoding/json rejects: %v", b, err)
		}
		if !sameRequest(fast, slow) {
			t.Fatalf("%q: fast %s, encoding/json %s", b, showRequest(fast), showRequest(slow))
		}
	}
	reqs, batch := parseBatch(b, nil)
	if batch {
		var slow struct {
			Queries []searchRequest `json:"queries"`
		}
		if err := decodeStrict(b, &slow); err != nil {
			t.Fatalf("%q: the fast parser accepts a batch that encoding/json rejects: %v", b, err)
		}
		if (reqs == nil) != (slow.Queries == nil) || len(reqs) != len(slow.Queries) {
			t.Fatalf("%q: fast %d queries (nil %v), encoding/json %d (nil %v)", b, len(reqs), reqs == nil, len(slow.Queries), slow.Queries == nil)
		}
		for i := range reqs {
			if !sameRequest(reqs[i], slow.Queries[i]) {
				t.Fatalf("%q: queries[%d]: fast %s, encoding/json %s", b, i, showRequest(reqs[i]), showRequest(slow.Queries[i]))
			}
		}
	}
	return search, batch
}

// fastSeeds are bodies the fast parsers must take (true) or leave to
// encoding/json (false): every kind of odd input it gives up on.
var fastSeeds = []struct {
	body          string
	search, batch bool
}{
	{`{"terms":[1,2]}`, true, false},
	{`{"terms":[]}`, true, false},
	{`{}`, true, false},
	{" \t\r\n{ \"terms\" : [ 0 , 4294967295 ] , \"limit\" : 0 }\n", true, false},
	{`{"limit":10,"terms":[3]}`, true, false},
	{`{"q":"white pages","limit":3}`, true, false},
	{`{"q":"caf\u00e9"}`, false, false},
	{"{\"q\":\"caf\xc3\xa9\"}", true, false},
	{"{\"q\":\"caf\xc3\"}", false, false},
	{"{\"q\":\"a\tb\"}", false, false},
	{`{"q":""}`, true, false},
	{`{"q":"a","terms":[1]}`, true, false},
	{`{"queries":[]}`, false, true},
	{`{"queries":[{"terms":[1]},{"q":"x","limit":5},{}]}`, false, true},
	{` {"queries" : [ {"terms":[1,2,3],"limit":0} , {"terms":[]} ] } `, false, true},
	// Given up: left to encoding/json, which decides (valid or not).
	{`{"Terms":[1]}`, false, false},
	{`{"terms":[1],"terms":[2]}`, false, false},
	{`{"terms":null}`, false, false},
	{`{"terms":[1],"limit":null}`, false, false},
	{`{"terms":[01]}`, false, false},
	{`{"terms":[-0]}`, false, false},
	{`{"terms":[1.0]}`, false, false},
	{`{"terms":[1e3]}`, false, false},
	{`{"terms":[4294967296]}`, false, false},
	{`{"terms":[99999999999999999999]}`, false, false},
	{`{"terms":[1,]}`, false, false},
	{`{"terms":[,1]}`, false, false},
	{`{"terms":[1 2]}`, false, false},
	{`{"terms":[1],}`, false, false},
	{`{"terms":[1]} {}`, false, false},
	{`{"terms":[1]}x`, false, false},
	{`{"terms":[1]`, false, false},
	{`{"limit":-1,"terms":[1]}`, false, false},
	{`{"limit":1.5,"terms":[1]}`, false, false},
	{`{"limit":9999999999999999999,"terms":[1]}`, false, false},
	{`{"x":1}`, false, false},
	{`{"te\u0072ms":[1]}`, false, false},
	{`{"queries":null}`, false, false},
	{`{"queries":[{"terms":[1]},]}`, false, false},
	{`{"queries":[{"queries":[]}]}`, false, false},
	{`{"queries":[],"queries":[]}`, false, false},
	{`{"queries":[3]}`, false, false},
	{`{"queries":[]}]`, false, false},
	{"", false, false},
	{"null", false, false},
	{"[1,2]", false, false},
	{"\ufeff{}", false, false},
}

func TestFastParser(t *testing.T) {
	for _, c := range fastSeeds {
		search, batch := checkFast(t, []byte(c.body))
		if search != c.search || batch != c.batch {
			t.Errorf("%q: fast search %v batch %v, want %v %v", c.body, search, batch, c.search, c.batch)
		}
	}
	// Random batches as clients write them, with random spacing: all fast.
	r := rand.New(rand.NewPCG(7, 8))
	sp := func() string { return []string{"", "", " ", "\n", " \t\r\n"}[r.IntN(5)] }
	for range 2000 {
		var b strings.Builder
		n := r.IntN(20)
		b.WriteString(sp() + "{" + sp() + `"queries"` + sp() + ":" + sp() + "[")
		for i := range n {
			if i > 0 {
				b.WriteString(sp() + "," + sp())
			}
			var fields []string
			if r.IntN(4) > 0 {
				var ts []string
				for range r.IntN(6) {
					ts = append(ts, fmt.Sprint([]uint64{0, 1, 9, 10, 4294967295, uint64(r.Uint32())}[r.IntN(6)]))
				}
				fields = append(fields, `"terms"`+sp()+":"+sp()+"["+sp()+strings.Join(ts, sp()+","+sp())+sp()+"]")
			}
			if r.IntN(2) == 0 {
				fields = append(fields, `"limit":`+sp()+fmt.Sprint(r.IntN(2000)))
			}
			if r.IntN(8) == 0 {
				fields = append(fields, `"q":"`+[]string{"", "a b", "café", "x1 y2"}[r.IntN(4)]+`"`)
			}
			r.Shuffle(len(fields), func(i, j int) { fields[i], fields[j] = fields[j], fields[i] })
			b.WriteString("{" + sp() + strings.Join(fields, sp()+","+sp()) + sp() + "}")
		}
		b.WriteString(sp() + "]" + sp() + "}" + sp())
		if _, batch := checkFast(t, []byte(b.String())); !batch {
			t.Fatalf("%q: not taken by the fast parser", b.String())
		}
	}
}

func FuzzFastParser(f *testing.F) {
	for _, c := range fastSeeds {
		f.Add([]byte(c.body))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkFast(t, b) })
}

// BenchmarkParseBatch measures the fast parser on a batch of 256 queries of
// 2 to 4 terms, as xsect loadgen sends them.
func BenchmarkParseBatch(b *testing.B) {
	body := batchBody(256)
	b.SetBytes(int64(len(body)))
	var reqs []searchRequest
	for b.Loop() {
		var ok bool
		if reqs, ok = parseBatch(body, reqs); !ok || len(reqs) != 256 {
			b.Fatal("not parsed")
		}
	}
}
