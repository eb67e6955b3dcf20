package serve

import "unicode/utf8"

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

// fastParser parses one body.
type fastParser struct {
	b     []byte
	i     int
	terms []uint32 // the terms of every query of the body
	lims  []int    // the limits given, in order; Limit points into it
}

// whitespace as JSON defines it.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (p *fastParser) ws() {
	for p.i < len(p.b) && isSpace(p.b[p.i]) {
		p.i++
	}
}

// peek returns the next byte after whitespace, or 0 at the end.
func (p *fastParser) peek() byte {
	p.ws()
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

// eat consumes c after whitespace.
func (p *fastParser) eat(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

// end reports whether only whitespace is left.
func (p *fastParser) end() bool {
	p.ws()
	return p.i == len(p.b)
}

// key reads a key without escapes and its colon.
func (p *fastParser) key() (string, bool) {
	if !p.eat('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '"' {
			k := p.b[start:p.i]
			p.i++
			if !p.eat(':') {
				return "", false
			}
			switch string(k) { // no allocation
			case "terms":
				return "terms", true
			case "q":
				return "q", true
			case "limit":
				return "limit", true
			case "queries":
				return "queries", true
			}
			return "", false
		}
		if c < 'a' || c > 'z' {
			return "", false
		}
		p.i++
	}
	return "", false
}

// digits reads a run of digits with no leading zero (but 0 alone) and at
// most maxLen of them, and returns its value.
func (p *fastParser) digits(maxLen int) (uint64, bool) {
	start := p.i
	v := uint64(0)
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		v = v*10 + uint64(p.b[p.i]-'0')
		p.i++
		if p.i-start > maxLen {
			return 0, false
		}
	}
	n := p.i - start
	if n == 0 || (n > 1 && p.b[start] == '0') {
		return 0, false
	}
	// A number must end here: a fraction or an exponent is not an integer.
	if p.i < len(p.b) {
		if c := p.b[p.i]; c == '.' || c == 'e' || c == 'E' {
			return 0, false
		}
	}
	return v, true
}

// termArray reads [t, ...] onto p.terms.
func (p *fastParser) termArray() bool {
	if !p.eat('[') {
		return false
	}
	if p.peek() != ']' {
		for {
			p.ws()
			v, ok := p.digits(10)
			if !ok || v > 1<<32-1 {
				return false
			}
			p.terms = append(p.terms, uint32(v))
			if !p.eat(',') {
				break
			}
		}
	}
	return p.eat(']')
}

// str reads a string without escapes or control characters, valid UTF-8.
func (p *fastParser) str() (string, bool) {
	if !p.eat('"') {
		return "", false
	}
	start := p.i
	ascii := true
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			if !ascii && !utf8.Valid(s) {
				return "", false // encoding/json replaces bad bytes with U+FFFD
			}
			return string(s), true
		case c == '\\' || c < 0x20:
			return "", false
		case c >= 0x80:
			ascii = false
		}
		p.i++
	}
	return "", false
}

// fastQuery is one query as read: its terms are p.terms[lo:hi] (lo < 0:
// none given); the slices are taken once every term is read, since
// appending may move the array.
type fastQuery struct {
	lo, hi   int
	limit    int
	hasLimit bool
	q        string
	hasQ     bool
}

// query reads one query object into f.
func (p *fastParser) query(f *fastQuery) bool {
	*f = fastQuery{lo: -1, hi: -1}
	if !p.eat('{') {
		return false
	}
	if p.eat('}') {
		return true
	}
	for {
		k, ok := p.key()
		if !ok {
			return false
		}
		switch k {
		case "terms":
			if f.lo >= 0 {
				return false // repeated
			}
			f.lo = len(p.terms)
			if !p.termArray() {
				return false
			}
			f.hi = len(p.terms)
		case "q":
			if f.hasQ {
				return false
			}
			if f.q, ok = p.str(); !ok {
				return false
			}
			f.hasQ = true
		case "limit":
			if f.hasLimit {
				return false
			}
			p.ws()
			v, ok := p.digits(18)
			if !ok {
				return false
			}
			f.limit, f.hasLimit = int(v), true
		default: // "queries" in a query
			return false
		}
		if !p.eat(',') {
			return p.eat('}')
		}
	}
}

// requests turns the queries read into searchRequests as encoding/json
// would fill them: terms never nil when given, limits and strings through
// pointers (into one array each).
func (p *fastParser) requests(fs []fastQuery, reqs []searchRequest) {
	if p.terms == nil {
		p.terms = []uint32{} // "terms":[] is an empty list, not none
	}
	nl, nq := 0, 0
	for _, f := range fs {
		if f.hasLimit {
			nl++
		}
		if f.hasQ {
			nq++
		}
	}
	lims := make([]int, 0, nl)
	var qs []string
	if nq > 0 {
		qs = make([]string, 0, nq)
	}
	for i, f := range fs {
		r := &reqs[i]
		if f.lo >= 0 {
			r.Terms = p.terms[f.lo:f.hi:f.hi]
		}
		if f.hasLimit {
			lims = append(lims, f.limit)
			r.Limit = &lims[len(lims)-1]
		}
		if f.hasQ {
			qs = append(qs, f.q)
			r.Q = &qs[len(qs)-1]
		}
	}
}

// parseSearch decodes the body of /v1/search into r; ok false: decode it
// with decodeStrict instead.
func parseSearch(body []byte, r *searchRequest) (ok bool) {
	p := fastParser{b: body}
	var f [1]fastQuery
	if !p.query(&f[0]) || !p.end() {
		return false
	}
	reqs := make([]searchRequest, 1)
	p.requests(f[:], reqs)
	*r = reqs[0]
	return true
}

// parseBatch decodes the body of /v1/search:batch; ok false: decode it with
// decodeStrict instead. The queries' terms share one array.
func parseBatch(body []byte) (reqs []searchRequest, ok bool) {
	p := fastParser{b: body, terms: make([]uint32, 0, len(body)/6+1)}
	if !p.eat('{') {
		return nil, false
	}
	if k, ok := p.key(); !ok || k != "queries" {
		return nil, false
	}
	if !p.eat('[') {
		return nil, false
	}
	fs := make([]fastQuery, 0, 64)
	if !p.eat(']') {
		for {
			fs = append(fs, fastQuery{})
			if !p.query(&fs[len(fs)-1]) {
				return nil, false
			}
			if !p.eat(',') {
				if !p.eat(']') {
					return nil, false
				}
				break
			}
		}
	}
	if !p.eat('}') || !p.end() {
		return nil, false
	}
	reqs = make([]searchRequest, len(fs))
	p.requests(fs, reqs)
	return reqs, true
}
