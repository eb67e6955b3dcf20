package serve

import (
	"bytes"
	"unicode/utf8"
)

// The request bodies that clients send in practice are plain JSON: lowercase
// keys without escapes, terms and limits written as digits, strings without
// escapes. fastParser decodes exactly those, without reflection and with a
// few allocations per request (the terms of all the queries of a request
// share one array), where encoding/json spent most of the server's time.
// Anything else (an error, an escape, a key in another case, a repeated
// key, a null, a sign, a number beyond range) makes it give up, and the body
// is decoded again by decodeStrict: encoding/json's verdicts and the error
// messages stay exactly as they were, and only bodies that encoding/json
// accepts, with the same values, take the fast path (FuzzFastParser checks
// both).

// fastParser parses one body. Its methods take the position to read from
// and return the position after what they read, or -1 to give up.
type fastParser struct {
	b     []byte
	terms []uint32 // every query's terms; a query's Terms is a slice of it
	lims  []int    // the limits given; Limit points into it
	qs    []string // the q strings given; Q points into it
	// Sized so that they rarely grow; when one does, the slices and
	// pointers into its old array stay valid: nothing is written there again.
}

// ws skips JSON whitespace.
func ws(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// eat skips whitespace and then c, or gives up.
func eat(b []byte, i int, c byte) int {
	i = ws(b, i)
	if i < len(b) && b[i] == c {
		return i + 1
	}
	return -1
}

// has reports whether c follows whitespace at i (i >= 0).
func has(b []byte, i int, c byte) bool {
	i = ws(b, i)
	return i < len(b) && b[i] == c
}

// Keys, as key returns them.
const (
	keyNone = iota
	keyTerms
	keyQ
	keyLimit
	keyQueries
)

// key reads a key of lowercase letters (no escapes) and its colon.
func key(b []byte, i int) (int, int) {
	if i = eat(b, i, '"'); i < 0 {
		return keyNone, -1
	}
	start := i
	for i < len(b) && b[i] >= 'a' && b[i] <= 'z' {
		i++
	}
	if i >= len(b) || b[i] != '"' {
		return keyNone, -1
	}
	k := keyNone
	switch string(b[start:i]) { // no allocation
	case "terms":
		k = keyTerms
	case "q":
		k = keyQ
	case "limit":
		k = keyLimit
	case "queries":
		k = keyQueries
	}
	if k == keyNone {
		return keyNone, -1
	}
	return k, eat(b, i+1, ':')
}

// digits reads the run of decimal digits from b[i] on: its value (which
// wraps past 20 digits; wellFormed bounds the length) and its end. Small
// enough to be inlined in the parser's loops.
func digits(b []byte, i int) (uint64, int) {
	v := uint64(0)
	for i < len(b) {
		c := b[i] - '0'
		if c > 9 {
			break
		}
		v = v*10 + uint64(c)
		i++
	}
	return v, i
}

// wellFormed reports whether the digits b[start:end] are a JSON integer
// of at most maxLen digits: some, and no leading zero but 0 alone.
func wellFormed(b []byte, start, end, maxLen int) bool {
	n := end - start
	return n > 0 && n <= maxLen && (n == 1 || b[start] != '0')
}

// number reads an integer of digits only, with no leading zero (but 0
// alone) and at most maxLen digits, after whitespace.
func number(b []byte, i, maxLen int) (uint64, int) {
	start := ws(b, i)
	v, i := digits(b, start)
	if !wellFormed(b, start, i, maxLen) {
		return 0, -1
	}
	// A number ends here: a fraction or an exponent is not an integer.
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return 0, -1
	}
	return v, i
}

// termArray reads [t, ...] onto p.terms. It reads the digits itself (by
// digits, inlined) rather than by number, which skips whitespace first:
// this loop is most of the parsing.
func (p *fastParser) termArray(i int) int {
	b := p.b
	if i = eat(b, i, '['); i < 0 {
		return -1
	}
	i = ws(b, i)
	if i < len(b) && b[i] == ']' {
		return i + 1
	}
	terms := p.terms
	defer func() { p.terms = terms }()
	for {
		start := i
		var v uint64
		v, i = digits(b, start)
		if !wellFormed(b, start, i, 10) || v > 1<<32-1 {
			return -1
		}
		terms = append(terms, uint32(v))
		if i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i = ws(b, i)
		}
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case ',':
			i = ws(b, i+1)
		case ']':
			return i + 1
		default: // a fraction, an exponent, or anything else
			return -1
		}
	}
}

// str reads a string without escapes or control characters, valid UTF-8.
func str(b []byte, i int) (string, int) {
	if i = eat(b, i, '"'); i < 0 {
		return "", -1
	}
	start := i
	ascii := true
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"':
			s := b[start:i]
			if !ascii && !utf8.Valid(s) {
				return "", -1 // encoding/json would replace bad bytes with U+FFFD
			}
			return string(s), i + 1
		case c == '\\' || c < 0x20:
			return "", -1
		case c >= 0x80:
			ascii = false
		}
	}
	return "", -1
}

// query reads one query object into r.
func (p *fastParser) query(i int, r *searchRequest) int {
	b := p.b
	if i = eat(b, i, '{'); i < 0 {
		return -1
	}
	if has(b, i, '}') {
		return eat(b, i, '}')
	}
	for {
		var k int
		if k, i = key(b, i); i < 0 {
			return -1
		}
		switch k {
		case keyTerms:
			if r.Terms != nil {
				return -1 // repeated
			}
			lo := len(p.terms)
			if i = p.termArray(i); i < 0 {
				return -1
			}
			r.Terms = p.terms[lo:len(p.terms):len(p.terms)]
		case keyQ:
			if r.Q != nil {
				return -1
			}
			var s string
			if s, i = str(b, i); i < 0 {
				return -1
			}
			if p.qs == nil {
				p.qs = make([]string, 0, cap(p.lims))
			}
			p.qs = append(p.qs, s)
			r.Q = &p.qs[len(p.qs)-1]
		case keyLimit:
			if r.Limit != nil {
				return -1
			}
			var v uint64
			if v, i = number(b, i, 18); i < 0 {
				return -1
			}
			p.lims = append(p.lims, int(v))
			r.Limit = &p.lims[len(p.lims)-1]
		default: // "queries" in a query
			return -1
		}
		i = ws(b, i)
		if i < len(b) && b[i] == ',' {
			i++
			continue
		}
		if i < len(b) && b[i] == '}' {
			return i + 1
		}
		return -1
	}
}

// newFastParser returns a parser for body with room for all its queries
// and terms: each term is followed by a comma or a closing bracket, each
// query opens a brace.
func newFastParser(body []byte) *fastParser {
	return &fastParser{
		b:     body,
		terms: make([]uint32, 0, bytes.Count(body, []byte{','})+bytes.Count(body, []byte{']'})),
		lims:  make([]int, 0, bytes.Count(body, []byte{'{'})),
	}
}

// parseSearch decodes the body of /v1/search into r; ok false: decode it
// with decodeStrict instead.
func parseSearch(body []byte, r *searchRequest) (ok bool) {
	p := newFastParser(body)
	var q searchRequest
	i := p.query(0, &q)
	if i < 0 || ws(body, i) != len(body) {
		return false
	}
	*r = q
	return true
}

// parseBatch decodes the body of /v1/search:batch, appending its queries to
// reqs[:0]; ok false: decode it with decodeStrict instead.
func parseBatch(body []byte, reqs []searchRequest) (_ []searchRequest, ok bool) {
	p := newFastParser(body)
	b := p.b
	i := eat(b, 0, '{')
	if i < 0 {
		return nil, false
	}
	k, i := key(b, i)
	if i < 0 || k != keyQueries {
		return nil, false
	}
	if i = eat(b, i, '['); i < 0 {
		return nil, false
	}
	if reqs == nil {
		reqs = make([]searchRequest, 0, cap(p.lims))
	}
	reqs = reqs[:0]
	if has(b, i, ']') {
		i = eat(b, i, ']')
	} else {
		for {
			reqs = append(reqs, searchRequest{})
			if i = p.query(i, &reqs[len(reqs)-1]); i < 0 {
				return nil, false
			}
			i = ws(b, i)
			if i < len(b) && b[i] == ',' {
				i++
				continue
			}
			if i < len(b) && b[i] == ']' {
				i++
				break
			}
			return nil, false
		}
	}
	if i = eat(b, i, '}'); i < 0 || ws(b, i) != len(b) {
		return nil, false
	}
	return reqs, true
}
