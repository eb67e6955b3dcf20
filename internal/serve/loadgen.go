package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xsect/xsect/sets"
)

// LoadQuery is one query of a load test: term ids, or text when IsText.
type LoadQuery struct {
	Terms  []uint32
	Text   string
	IsText bool
}

// LoadConfig configures Load.
type LoadConfig struct {
	URL      string      // the server's base URL, such as http://127.0.0.1:8080
	Queries  []LoadQuery // sent in turn, from the first again after the last
	Clients  int         // concurrent clients, each with one request in flight
	Duration time.Duration
	Batch    int // queries per request: 1 posts to /v1/search, more to /v1/search:batch
	Limit    int // each query's limit; -1 leaves it to the server (10)
	// Progress, when set, is called about 5 times a second with the
	// requests answered so far.
	Progress func(requests int64)
	Client   *http.Client // nil: a client with a connection per client
}

// LoadReport is what Load measured.
type LoadReport struct {
	Clients  int
	Batch    int
	Elapsed  time.Duration // from the first request to the last answer
	Requests int64         // answered 200 with a well-formed answer
	Queries  int64         // in those requests
	// Errors counts the other requests by status: 0 is no answer (a
	// transport error), 200 an answer that is not a well-formed answer to
	// the request (not JSON, cut short, the wrong number of results).
	Errors map[int]int64
	// FirstError is the first failed request's error, for the report.
	FirstError string
	lat        latencies
}

// Latency returns the latency (time from sending a request to reading all
// of its answer) at quantile p in [0, 1] over the requests answered 200,
// within 1/64 of the true value.
func (r *LoadReport) Latency(p float64) time.Duration { return r.lat.quantile(p) }

// MeanLatency returns the mean latency of the requests answered 200.
func (r *LoadReport) MeanLatency() time.Duration {
	if r.lat.n == 0 {
		return 0
	}
	return time.Duration(r.lat.sum / r.lat.n)
}

// ErrorCount returns the number of failed requests.
func (r *LoadReport) ErrorCount() int64 {
	n := int64(0)
	for _, c := range r.Errors {
		n += c
	}
	return n
}

// String is the report as printed by xsect loadgen.
func (r *LoadReport) String() string {
	var b strings.Builder
	secs := r.Elapsed.Seconds()
	fmt.Fprintf(&b, "clients %d, %d queries per request, %.2f s\n", r.Clients, r.Batch, secs)
	fmt.Fprintf(&b, "requests %d (%.0f/s), queries %d (%.0f/s), errors %d\n", r.Requests, float64(r.Requests)/secs,
		r.Queries, float64(r.Queries)/secs, r.ErrorCount())
	ms := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds()*1e3, 'f', 3, 64) }
	fmt.Fprintf(&b, "latency ms: mean %s, p50 %s, p99 %s, p99.9 %s, max %s\n", ms(r.MeanLatency()),
		ms(r.Latency(0.5)), ms(r.Latency(0.99)), ms(r.Latency(0.999)), ms(r.Latency(1)))
	if len(r.Errors) > 0 {
		var codes []int
		for c := range r.Errors {
			codes = append(codes, c)
		}
		slices.Sort(codes)
		b.WriteString("errors by status:")
		for _, c := range codes {
			name := strconv.Itoa(c)
			switch c {
			case 0:
				name = "no answer"
			case http.StatusOK:
				name = "200 malformed"
			}
			fmt.Fprintf(&b, " %s: %d;", name, r.Errors[c])
		}
		b.WriteString(" first: " + r.FirstError + "\n")
	}
	return b.String()
}

// Load runs a closed-loop load test: Clients goroutines each send a request,
// read its answer and send the next, for Duration or until ctx is done.
func Load(ctx context.Context, cfg LoadConfig) (*LoadReport, error) {
	base, err := url.Parse(cfg.URL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("URL %q: want http://HOST:PORT", cfg.URL)
	}
	base.Path = strings.TrimSuffix(base.Path, "/")
	switch {
	case len(cfg.Queries) == 0:
		return nil, errors.New("no queries")
	case cfg.Clients < 1:
		return nil, fmt.Errorf("%d clients: want at least 1", cfg.Clients)
	case cfg.Batch < 1:
		return nil, fmt.Errorf("batch of %d queries: want at least 1", cfg.Batch)
	case cfg.Duration <= 0:
		return nil, fmt.Errorf("duration %v: want more than 0", cfg.Duration)
	}
	client := cfg.Client
	if client == nil {
		client = &http.Client{Transport: &http.Transport{
			MaxIdleConnsPerHost: cfg.Clients,
			DisableCompression:  true,
		}}
	}
	// Every query's JSON is made once; a request joins Batch of them.
	enc := make([][]byte, len(cfg.Queries))
	for i, q := range cfg.Queries {
		var b []byte
		if q.IsText {
			t, _ := json.Marshal(q.Text)
			b = append([]byte(`{"q":`), t...)
		} else {
			b = append(b, `{"terms":[`...)
			for k, t := range q.Terms {
				if k > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendUint(b, uint64(t), 10)
			}
			b = append(b, ']')
		}
		if cfg.Limit >= 0 {
			b = append(b, `,"limit":`...)
			b = strconv.AppendInt(b, int64(cfg.Limit), 10)
		}
		enc[i] = append(b, '}')
	}
	// The most ids an answer may hold: what was asked, or the server's
	// default (which --max-limit may only lower).
	limit := cfg.Limit
	if limit < 0 {
		limit = DefaultLimit
	}
	endpoint := base.String() + "/v1/search"
	if cfg.Batch > 1 {
		endpoint += ":batch"
	}

	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var next, answered atomic.Int64
	rep := &LoadReport{Clients: cfg.Clients, Batch: cfg.Batch, Errors: map[int]int64{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	progressDone := make(chan struct{})
	if cfg.Progress != nil {
		go func() {
			t := time.NewTicker(200 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					cfg.Progress(answered.Load())
				case <-progressDone:
					return
				}
			}
		}()
	}
	for c := 0; c < cfg.Clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat latencies
			var requests, queries int64
			errs := map[int]int64{}
			first := ""
			var body []byte
			var answer bytes.Buffer
			for ctx.Err() == nil {
				i := int(next.Add(int64(cfg.Batch))-int64(cfg.Batch)) % len(enc)
				body = body[:0]
				if cfg.Batch > 1 {
					body = append(body, `{"queries":[`...)
				}
				for k := 0; k < cfg.Batch; k++ {
					if k > 0 {
						body = append(body, ',')
					}
					body = append(body, enc[(i+k)%len(enc)]...)
				}
				if cfg.Batch > 1 {
					body = append(body, "]}"...)
				}
				t0 := time.Now()
				code, msg := post(ctx, client, endpoint, body, &answer)
				d := time.Since(t0)
				if code == http.StatusOK {
					err := checkAnswer(answer.Bytes(), cfg.Batch, limit)
					if err == nil {
						lat.add(int64(d))
						requests++
						queries += int64(cfg.Batch)
						answered.Add(1)
						continue
					}
					msg = "malformed answer: " + err.Error()
				}
				if ctx.Err() != nil && code == 0 {
					break // cut off by the end of the run
				}
				errs[code]++
				if first == "" {
					first = msg
				}
				if code == 0 {
					// Do not spin on a refused connection.
					select {
					case <-ctx.Done():
					case <-time.After(10 * time.Millisecond):
					}
				}
			}
			mu.Lock()
			defer mu.Unlock()
			rep.lat.merge(&lat)
			rep.Requests += requests
			rep.Queries += queries
			for c, n := range errs {
				rep.Errors[c] += n
			}
			if rep.FirstError == "" {
				rep.FirstError = first
			}
		}()
	}
	wg.Wait()
	rep.Elapsed = time.Since(start)
	close(progressDone)
	return rep, nil
}

// post sends one request and reads its answer, into answer when the
// status is 200; it returns the status (0 when none came, or was cut
// short) and, for a failure, a message.
func post(ctx context.Context, client *http.Client, endpoint string, body []byte, answer *bytes.Buffer) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		answer.Reset()
		if _, err := answer.ReadFrom(resp.Body); err != nil {
			return 0, "reading the answer: " + err.Error()
		}
		return http.StatusOK, ""
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	return resp.StatusCode, fmt.Sprintf("%s: %s", resp.Status, bytes.TrimSpace(msg))
}

// latencies is a histogram of nanoseconds in log-linear buckets: 64 per
// power of two, so a quantile is within 1/64 of the true value, in fixed
// memory however long the run.
type latencies struct {
	counts   [128 + 64*58]int64
	n, sum   int64
	min, max int64
}

func latBucket(v int64) int {
	if v < 128 {
		return int(max(v, 0))
	}
	shift := bits.Len64(uint64(v)) - 7 // v >> shift is in [64, 128)
	return 128 + (shift-1)*64 + int(v>>shift) - 64
}

// latValue is the middle of bucket i.
func latValue(i int) int64 {
	if i < 128 {
		return int64(i)
	}
	shift := (i-128)/64 + 1
	lo := int64((i-128)%64+64) << shift
	return lo + (int64(1)<<shift)/2
}

func (l *latencies) add(v int64) {
	l.counts[latBucket(v)]++
	if l.n == 0 || v < l.min {
		l.min = v
	}
	l.max = max(l.max, v)
	l.n++
	l.sum += v
}

func (l *latencies) merge(o *latencies) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		l.counts[i] += c
	}
	if l.n == 0 || o.min < l.min {
		l.min = o.min
	}
	l.max = max(l.max, o.max)
	l.n += o.n
	l.sum += o.sum
}

func (l *latencies) quantile(p float64) time.Duration {
	if l.n == 0 {
		return 0
	}
	if p >= 1 {
		return time.Duration(l.max)
	}
	rank := int64(p*float64(l.n)) + 1 // the rank-th smallest, 1-based
	rank = min(rank, l.n)
	seen := int64(0)
	for i, c := range l.counts {
		seen += c
		if seen >= rank {
			return time.Duration(min(max(latValue(i), l.min), l.max))
		}
	}
	return time.Duration(l.max)
}

// checkAnswer checks that b is a well-formed answer to a request of batch
// queries (1: /v1/search), each of at most limit ids: a server that
// answers 200 with an error page, or with JSON cut short, must not count
// as answering. Answers written as xsect serve writes them are checked in
// one pass without allocating (at millions of queries a second, decoding
// them would take the load generator's cores from the server); anything
// else is decoded by encoding/json, which decides.
func checkAnswer(b []byte, batch, limit int) error {
	if ok, err := scanAnswer(b, batch, limit); ok {
		return err
	}
	return decodeAnswer(b, batch, limit)
}

// checkResult checks the values of one query's result: count matches, of
// which ids ids are given, increasing (when increasing), at most limit.
func checkResult(count int64, ids int, increasing bool, limit int) error {
	switch {
	case count < int64(ids):
		return fmt.Errorf("a count of %d with %d ids", count, ids)
	case ids > limit:
		return fmt.Errorf("%d ids, over the limit of %d", ids, limit)
	case !increasing:
		return errors.New("ids not increasing")
	}
	return nil
}

// scanAnswer checks an answer written as xsect serve writes it (with
// whitespace anywhere JSON allows it). It returns ok false, and no error,
// for an answer in any other form.
func scanAnswer(b []byte, batch, limit int) (ok bool, err error) {
	if batch == 1 {
		i, err := scanResult(b, 0, limit)
		if i < 0 || ws(b, i) != len(b) {
			return false, nil
		}
		return true, err
	}
	i := eat(b, 0, '{')
	if i = fixedKey(b, i, "results"); i < 0 {
		return false, nil
	}
	if i = eat(b, i, '['); i < 0 {
		return false, nil
	}
	n := 0
	var first error
	for more := !has(b, i, ']'); more; n++ {
		var err error
		if i, err = scanResult(b, i, limit); i < 0 {
			return false, nil
		}
		if err != nil && first == nil {
			first = fmt.Errorf("results[%d]: %w", n, err)
		}
		if more = has(b, i, ','); more {
			i = eat(b, i, ',')
		}
	}
	if i = eat(b, i, ']'); i < 0 {
		return false, nil
	}
	if i = eat(b, i, '}'); i < 0 || ws(b, i) != len(b) {
		return false, nil
	}
	if n != batch {
		return true, fmt.Errorf("%d results for %d queries", n, batch)
	}
	return true, first
}

// scanResult reads {"count":C,"ids":[...]} from b[i:] (i < 0: nothing to
// read) and checks its values; it returns the position after it, or -1
// for anything else.
func scanResult(b []byte, i, limit int) (int, error) {
	if i < 0 {
		return -1, nil
	}
	i = eat(b, i, '{')
	var count uint64
	if i = fixedKey(b, i, "count"); i < 0 {
		return -1, nil
	}
	if count, i = number(b, i, 18); i < 0 {
		return -1, nil
	}
	i = eat(b, i, ',')
	if i = fixedKey(b, i, "ids"); i < 0 {
		return -1, nil
	}
	if i = eat(b, i, '['); i < 0 {
		return -1, nil
	}
	ids, increasing, prev := 0, true, int64(-1)
	for more := !has(b, i, ']'); more; ids++ {
		var id uint64
		if id, i = number(b, i, 10); i < 0 || id > 1<<32-1 {
			return -1, nil
		}
		increasing = increasing && int64(id) > prev
		prev = int64(id)
		if more = has(b, i, ','); more {
			i = eat(b, i, ',')
		}
	}
	if i = eat(b, i, ']'); i < 0 {
		return -1, nil
	}
	if i = eat(b, i, '}'); i < 0 {
		return -1, nil
	}
	return i, checkResult(int64(count), ids, increasing, limit)
}

// fixedKey reads the key name (no escapes) and its colon after
// whitespace at b[i:] (i < 0: nothing to read), or returns -1.
func fixedKey(b []byte, i int, name string) int {
	if i < 0 {
		return -1
	}
	if i = eat(b, i, '"'); i < 0 || !bytes.HasPrefix(b[i:], []byte(name)) {
		return -1
	}
	if i += len(name); i >= len(b) || b[i] != '"' {
		return -1
	}
	return eat(b, i+1, ':')
}

// loadResult is one query's result, as encoding/json decodes it.
type loadResult struct {
	Count *int64    `json:"count"`
	IDs   *[]uint32 `json:"ids"`
}

// decodeAnswer is checkAnswer by encoding/json, for an answer that
// scanAnswer does not read.
func decodeAnswer(b []byte, batch, limit int) error {
	var results []loadResult
	var err error
	if batch == 1 {
		results = make([]loadResult, 1)
		err = json.Unmarshal(b, &results[0])
	} else {
		var a struct {
			Results *[]loadResult `json:"results"`
		}
		err = json.Unmarshal(b, &a)
		if err == nil && a.Results == nil {
			err = errors.New(`no "results"`)
		}
		if err == nil {
			results = *a.Results
		}
	}
	if err != nil {
		return fmt.Errorf("%v, in an answer of %d bytes starting %q", err, len(b), b[:min(len(b), 40)])
	}
	if batch > 1 && len(results) != batch {
		return fmt.Errorf("%d results for %d queries", len(results), batch)
	}
	for k, r := range results {
		if r.Count == nil || r.IDs == nil {
			err = errors.New(`want "count" and "ids"`)
		} else {
			err = checkResult(*r.Count, len(*r.IDs), sets.IsStrict(*r.IDs), limit)
		}
		if err != nil && batch > 1 {
			return fmt.Errorf("results[%d]: %w", k, err)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
