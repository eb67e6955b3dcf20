package serve

import (
	"math"
	"strconv"
	"sync/atomic"
	"time"
)

// histogram counts observations (integers: nanoseconds, queries) into
// buckets with fixed upper bounds. It is safe for concurrent use, without
// locks; a scrape may see a count and a sum a few observations apart.
type histogram struct {
	bounds []int64 // upper bounds, inclusive, increasing
	div    float64 // printed value = value / div (1e9 for nanoseconds as seconds)
	counts []atomic.Uint64
	sum    atomic.Int64
	total  atomic.Uint64
}

func newHistogram(div float64, bounds ...int64) *histogram {
	return &histogram{bounds: bounds, div: div, counts: make([]atomic.Uint64, len(bounds))}
}

func (h *histogram) observe(v int64) {
	for i, b := range h.bounds {
		if v <= b {
			h.counts[i].Add(1)
			break
		}
	}
	h.sum.Add(v)
	h.total.Add(1)
}

// write appends the histogram's series, with labels (`k="v"` pairs joined
// by commas, or "") on every sample.
func (h *histogram) write(buf []byte, name, labels string) []byte {
	sep := ""
	if labels != "" {
		sep = ","
	}
	total := h.total.Load()
	cum := uint64(0)
	for i, b := range h.bounds {
		cum += h.counts[i].Load()
		buf = append(buf, name+"_bucket{"+labels+sep+`le="`...)
		buf = appendFloat(buf, float64(b)/h.div)
		buf = append(buf, `"} `...)
		buf = strconv.AppendUint(buf, cum, 10)
		buf = append(buf, '\n')
	}
	// The total is read first: +Inf must count at least every bucket.
	total = max(total, cum)
	buf = append(buf, name+"_bucket{"+labels+sep+`le="+Inf"} `...)
	buf = strconv.AppendUint(buf, total, 10)
	buf = append(buf, '\n')
	buf = appendSample(buf, name+"_sum", labels, float64(h.sum.Load())/h.div)
	buf = append(buf, name+"_count"...)
	if labels != "" {
		buf = append(buf, "{"+labels+"}"...)
	}
	buf = append(buf, ' ')
	buf = strconv.AppendUint(buf, total, 10)
	return append(buf, '\n')
}

func appendFloat(buf []byte, f float64) []byte {
	if math.IsInf(f, 1) {
		return append(buf, "+Inf"...)
	}
	if math.Abs(f) < 1e15 {
		return strconv.AppendFloat(buf, f, 'f', -1, 64) // counters as integers, not 1.4e+06
	}
	return strconv.AppendFloat(buf, f, 'g', -1, 64)
}

func appendSample(buf []byte, name, labels string, v float64) []byte {
	buf = append(buf, name...)
	if labels != "" {
		buf = append(buf, "{"+labels+"}"...)
	}
	buf = append(buf, ' ')
	buf = appendFloat(buf, v)
	return append(buf, '\n')
}

func appendHeader(buf []byte, name, typ, help string) []byte {
	return append(buf, "# HELP "+name+" "+help+"\n# TYPE "+name+" "+typ+"\n"...)
}

// latencyBounds are the request and queue latency buckets, 50us to 10s.
var latencyBounds = []int64{
	50e3, 100e3, 250e3, 500e3, 1e6, 2.5e6, 5e6, 10e6, 20e6, 50e6, 100e6, 250e6, 500e6, 1e9, 2.5e9, 10e9,
}

// devices are the values of the device label, all printed so that a series
// exists before its first query.
var devices = [...]string{"cpu", "gpu"}

// errorCodes are the statuses an error may have, all printed.
var errorCodes = [...]int{400, 404, 405, 408, 413, 429, 499, 500, 503, 504}

// metrics are the service's counters.
type metrics struct {
	latency   [numEndpoints]*histogram
	requests  [numEndpoints]atomic.Uint64
	errors    [600]atomic.Uint64 // by status
	batchSize *histogram
	batchTime *histogram
	queueWait *histogram
	queries   [len(devices)]atomic.Uint64
	batches   atomic.Uint64
	failed    atomic.Uint64 // batches whose Search failed
}

func newMetrics() *metrics {
	m := &metrics{}
	for i := range m.latency {
		m.latency[i] = newHistogram(1e9, latencyBounds...)
	}
	var sizes []int64 // 1, 2, 4, ... 2^20: every batch size's series, whatever the device
	for b := int64(1); b <= 1<<20; b *= 2 {
		sizes = append(sizes, b)
	}
	m.batchSize = newHistogram(1, sizes...)
	m.batchTime = newHistogram(1e9, latencyBounds...)
	m.queueWait = newHistogram(1e9, latencyBounds...)
	return m
}

func (m *metrics) request(ep, code int, d time.Duration) {
	m.latency[ep].observe(int64(d))
	m.requests[ep].Add(1)
	if code >= 400 && code < len(m.errors) {
		m.errors[code].Add(1)
	}
}

func (m *metrics) batch(n int, device string, d time.Duration, err error) {
	m.batches.Add(1)
	m.batchSize.observe(int64(n))
	m.batchTime.observe(int64(d))
	if err != nil {
		m.failed.Add(1)
		return
	}
	for i, dev := range devices {
		if dev == device {
			m.queries[i].Add(uint64(n))
		}
	}
}

// write appends the metrics in the Prometheus text format (version 0.0.4).
// device is "" until the backend is set.
func (m *metrics) write(buf []byte, d *dispatcher, device string, inFlight, queueCap int, up time.Duration) []byte {
	buf = appendHeader(buf, "xsect_request_duration_seconds", "histogram", "Time from a request's arrival to its answer, by endpoint.")
	for ep, h := range m.latency {
		buf = h.write(buf, "xsect_request_duration_seconds", `endpoint="`+endpointNames[ep]+`"`)
	}
	buf = appendHeader(buf, "xsect_requests_total", "counter", "Requests answered, by endpoint.")
	for ep := range m.requests {
		buf = appendSample(buf, "xsect_requests_total", `endpoint="`+endpointNames[ep]+`"`, float64(m.requests[ep].Load()))
	}
	buf = appendHeader(buf, "xsect_errors_total", "counter", "Requests answered with an error, by HTTP status (499: the client went away).")
	shown := map[int]bool{}
	for _, c := range errorCodes {
		shown[c] = true
		buf = appendSample(buf, "xsect_errors_total", `code="`+strconv.Itoa(c)+`"`, float64(m.errors[c].Load()))
	}
	for c := 400; c < len(m.errors); c++ {
		if v := m.errors[c].Load(); v > 0 && !shown[c] {
			buf = appendSample(buf, "xsect_errors_total", `code="`+strconv.Itoa(c)+`"`, float64(v))
		}
	}
	buf = appendHeader(buf, "xsect_queries_total", "counter", "Queries answered by the backend, by device.")
	for i, dev := range devices {
		buf = appendSample(buf, "xsect_queries_total", `device="`+dev+`"`, float64(m.queries[i].Load()))
	}
	buf = appendHeader(buf, "xsect_batches_total", "counter", "Batches run on the backend.")
	buf = appendSample(buf, "xsect_batches_total", "", float64(m.batches.Load()))
	buf = appendHeader(buf, "xsect_batch_failures_total", "counter", "Batches whose search failed.")
	buf = appendSample(buf, "xsect_batch_failures_total", "", float64(m.failed.Load()))
	buf = appendHeader(buf, "xsect_batch_size", "histogram", "Queries per backend batch.")
	buf = m.batchSize.write(buf, "xsect_batch_size", "")
	buf = appendHeader(buf, "xsect_batch_duration_seconds", "histogram", "Time a batch took on the backend.")
	buf = m.batchTime.write(buf, "xsect_batch_duration_seconds", "")
	buf = appendHeader(buf, "xsect_queue_wait_seconds", "histogram", "Time a query waited between its admission and the start of its batch.")
	buf = m.queueWait.write(buf, "xsect_queue_wait_seconds", "")
	buf = appendHeader(buf, "xsect_queue_depth", "gauge", "Queries admitted and not yet running.")
	buf = appendSample(buf, "xsect_queue_depth", "", float64(d.queued.Load()))
	buf = appendHeader(buf, "xsect_queries_in_flight", "gauge", "Queries admitted and not yet answered: waiting, running, or their answers being written (at most the queue capacity).")
	buf = appendSample(buf, "xsect_queries_in_flight", "", float64(d.admitted.Load()))
	buf = appendHeader(buf, "xsect_batch_gathered", "gauge", "Queries gathered into the next batch, part of the queue depth.")
	buf = appendSample(buf, "xsect_batch_gathered", "", float64(d.pooled.Load()))
	buf = appendHeader(buf, "xsect_queue_capacity", "gauge", "Queries admitted at once (beyond: 429).")
	buf = appendSample(buf, "xsect_queue_capacity", "", float64(queueCap))
	buf = appendHeader(buf, "xsect_batches_in_flight", "gauge", "Batches running on the backend.")
	buf = appendSample(buf, "xsect_batches_in_flight", "", float64(inFlight))
	buf = appendHeader(buf, "xsect_ready", "gauge", "1 once the index is loaded, by device.")
	for _, dev := range devices {
		v := 0.0
		if dev == device {
			v = 1
		}
		buf = appendSample(buf, "xsect_ready", `device="`+dev+`"`, v)
	}
	buf = appendHeader(buf, "xsect_uptime_seconds", "gauge", "Seconds since the server started.")
	return appendSample(buf, "xsect_uptime_seconds", "", up.Seconds())
}
