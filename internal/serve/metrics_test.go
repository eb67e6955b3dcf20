package serve

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sample is one parsed line of the Prometheus text format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelPair  = regexp.MustCompile(`^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\.)*)"(,|$)`)
)

// parseMetrics parses the Prometheus text format (0.0.4) strictly enough to
// catch what a scraper rejects: every sample's family has a HELP and a TYPE
// before it, names and labels are well formed, values are numbers, a family
// comes in one block, and no series repeats. It returns the samples and the
// type of every family.
func parseMetrics(text string) (samples []sample, types map[string]string, err error) {
	types = map[string]string{}
	helps := map[string]bool{}
	seen := map[string]bool{}
	current := ""
	closed := map[string]bool{}
	if !strings.HasSuffix(text, "\n") {
		return nil, nil, fmt.Errorf("no newline at the end")
	}
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		fail := func(format string, args ...any) ([]sample, map[string]string, error) {
			return nil, nil, fmt.Errorf("line %d %q: %s", i+1, line, fmt.Sprintf(format, args...))
		}
		if strings.HasPrefix(line, "#") {
			f := strings.SplitN(line, " ", 4)
			if len(f) < 4 || (f[1] != "HELP" && f[1] != "TYPE") || !metricName.MatchString(f[2]) {
				return fail("bad comment")
			}
			name := f[2]
			if name != current {
				if closed[name] {
					return fail("family %s split", name)
				}
				if current != "" {
					closed[current] = true
				}
				current = name
			}
			if f[1] == "HELP" {
				helps[name] = true
			} else {
				switch f[3] {
				case "counter", "gauge", "histogram", "summary", "untyped":
				default:
					return fail("bad type")
				}
				if _, dup := types[name]; dup {
					return fail("second TYPE")
				}
				types[name] = f[3]
			}
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			return fail("no value")
		}
		series, val := line[:sp], line[sp+1:]
		v, err := strconv.ParseFloat(val, 64)
		if err != nil && val != "+Inf" && val != "-Inf" && val != "NaN" {
			return fail("bad value")
		}
		s := sample{name: series, labels: map[string]string{}, value: v}
		if j := strings.IndexByte(series, '{'); j >= 0 {
			if !strings.HasSuffix(series, "}") {
				return fail("bad labels")
			}
			s.name = series[:j]
			rest := series[j+1 : len(series)-1]
			for rest != "" {
				m := labelPair.FindStringSubmatch(rest)
				if m == nil {
					return fail("bad label in %q", rest)
				}
				if _, dup := s.labels[m[1]]; dup {
					return fail("label %s twice", m[1])
				}
				s.labels[m[1]] = m[2]
				rest = rest[len(m[0]):]
			}
		}
		if !metricName.MatchString(s.name) {
			return fail("bad name")
		}
		family := s.name
		if types[current] == "histogram" {
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if strings.TrimSuffix(s.name, suf) == current {
					family = current
				}
			}
		}
		if family != current || !helps[family] || types[family] == "" {
			return fail("sample outside its family's block (HELP and TYPE of %s first)", s.name)
		}
		if seen[series] {
			return fail("series repeated")
		}
		seen[series] = true
		samples = append(samples, s)
	}
	// Histograms: cumulative buckets ending at +Inf, equal to _count.
	for name, typ := range types {
		if typ != "histogram" {
			continue
		}
		groups := map[string][]sample{}
		for _, s := range samples {
			if s.name == name+"_bucket" || s.name == name+"_sum" || s.name == name+"_count" {
				key := labelKey(s.labels, "le")
				groups[key] = append(groups[key], s)
			}
		}
		if len(groups) == 0 {
			return nil, nil, fmt.Errorf("histogram %s has no samples", name)
		}
		for key, g := range groups {
			prevLe, prev := math.Inf(-1), 0.0
			count, inf := -1.0, -1.0
			hasSum := false
			for _, s := range g {
				switch s.name {
				case name + "_bucket":
					le, err := strconv.ParseFloat(s.labels["le"], 64)
					if err != nil {
						return nil, nil, fmt.Errorf("%s{%s}: le %q", name, key, s.labels["le"])
					}
					if le <= prevLe || s.value < prev {
						return nil, nil, fmt.Errorf("%s{%s}: bucket le=%v (%v) after le=%v (%v)", name, key, le, s.value, prevLe, prev)
					}
					prevLe, prev = le, s.value
					if math.IsInf(le, 1) {
						inf = s.value
					}
				case name + "_count":
					count = s.value
				case name + "_sum":
					hasSum = true
				}
			}
			if inf < 0 || count != inf || !hasSum {
				return nil, nil, fmt.Errorf("%s{%s}: +Inf bucket %v, count %v, sum present %v", name, key, inf, count, hasSum)
			}
		}
	}
	return samples, types, nil
}

func labelKey(labels map[string]string, skip string) string {
	var keys []string
	for k, v := range labels {
		if k != skip {
			keys = append(keys, k+"="+v)
		}
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}

// value returns the one sample named name with the labels given as k, v
// pairs.
func value(t *testing.T, samples []sample, name string, kv ...string) float64 {
	t.Helper()
	for _, s := range samples {
		if s.name != name || len(s.labels) != len(kv)/2 {
			continue
		}
		match := true
		for i := 0; i < len(kv); i += 2 {
			match = match && s.labels[kv[i]] == kv[i+1]
		}
		if match {
			return s.value
		}
	}
	t.Fatalf("no sample %s %v", name, kv)
	return 0
}

func TestMetrics(t *testing.T) {
	docs := [][]uint32{{0, 1}, {1}}
	_, ts := newTestServer(t, Config{BatchSize: 100}, newRefBackend(docs), nil)
	// Before any query: every series is there, at zero.
	code, hdr, text := call(t, ts, "GET", "/metrics", "")
	if code != 200 || hdr.Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("/metrics: %d %q", code, hdr.Get("Content-Type"))
	}
	samples, types, err := parseMetrics(text)
	if err != nil {
		t.Fatalf("metrics: %v\n%s", err, text)
	}
	for name, typ := range map[string]string{
		"xsect_request_duration_seconds": "histogram", "xsect_batch_size": "histogram", "xsect_queue_depth": "gauge",
		"xsect_queries_total": "counter", "xsect_errors_total": "counter", "xsect_requests_total": "counter",
		"xsect_queue_wait_seconds": "histogram", "xsect_batch_duration_seconds": "histogram",
	} {
		if types[name] != typ {
			t.Errorf("%s: type %q, want %s", name, types[name], typ)
		}
	}
	for name := range types {
		if !strings.HasPrefix(name, "xsect_") {
			t.Errorf("%s: not prefixed xsect_", name)
		}
	}
	if v := value(t, samples, "xsect_queries_total", "device", "cpu"); v != 0 {
		t.Errorf("queries before any: %v", v)
	}
	if v := value(t, samples, "xsect_ready", "device", "cpu"); v != 1 {
		t.Errorf("ready: %v", v)
	}

	for range 3 {
		call(t, ts, "POST", "/v1/search", `{"terms":[1]}`)
	}
	call(t, ts, "POST", "/v1/search:batch", `{"queries":[{"terms":[0]},{"terms":[1]},{"terms":[]}]}`)
	call(t, ts, "POST", "/v1/search", `{"terms":[-1]}`)
	call(t, ts, "POST", "/v1/search", `{"terms":[1],"limit":1e9}`)
	call(t, ts, "GET", "/v1/search", "")
	call(t, ts, "GET", "/nowhere", "")
	_, _, text = call(t, ts, "GET", "/metrics", "")
	if samples, _, err = parseMetrics(text); err != nil {
		t.Fatalf("metrics: %v\n%s", err, text)
	}
	for _, c := range []struct {
		name string
		kv   []string
		want float64
	}{
		{"xsect_queries_total", []string{"device", "cpu"}, 6},
		{"xsect_queries_total", []string{"device", "gpu"}, 0},
		{"xsect_errors_total", []string{"code", "400"}, 2},
		{"xsect_errors_total", []string{"code", "405"}, 1},
		{"xsect_errors_total", []string{"code", "404"}, 1},
		{"xsect_errors_total", []string{"code", "429"}, 0},
		{"xsect_requests_total", []string{"endpoint", "search"}, 6},
		{"xsect_requests_total", []string{"endpoint", "batch"}, 1},
		{"xsect_request_duration_seconds_count", []string{"endpoint", "search"}, 6},
		{"xsect_request_duration_seconds_count", []string{"endpoint", "batch"}, 1},
		{"xsect_batch_size_count", nil, 4},
		{"xsect_batch_size_sum", nil, 6},
		{"xsect_batch_size_bucket", []string{"le", "1"}, 3},
		{"xsect_batch_size_bucket", []string{"le", "4"}, 4},
		{"xsect_batches_total", nil, 4},
		{"xsect_queue_depth", nil, 0},
		{"xsect_queue_capacity", nil, 8192},
	} {
		if got := value(t, samples, c.name, c.kv...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.kv, got, c.want)
		}
	}
}

func TestParseMetrics(t *testing.T) {
	// Odd observations (zero, above the last bound) still make a valid
	// histogram.
	h := newHistogram(1, 1, 2, 4)
	for _, v := range []int64{0, 1, 3, 4, 5, 100} {
		h.observe(v)
	}
	good := "# HELP x_h h\n# TYPE x_h histogram\n" + string(h.write(nil, "x_h", `a="b"`))
	samples, _, err := parseMetrics(good)
	if err != nil {
		t.Fatalf("%v\n%s", err, good)
	}
	for _, c := range []struct {
		le   string
		want float64
	}{{"1", 2}, {"2", 2}, {"4", 4}, {"+Inf", 6}} {
		if got := value(t, samples, "x_h_bucket", "a", "b", "le", c.le); got != c.want {
			t.Errorf("le %s: %v, want %v", c.le, got, c.want)
		}
	}
	if got := value(t, samples, "x_h_sum", "a", "b"); got != 113 {
		t.Errorf("sum %v", got)
	}
	// The parser rejects what a scraper would.
	g := "# HELP x_g g\n# TYPE x_g gauge\n"
	for _, bad := range []string{
		g + "x_g 1",
		"x_g 1\n",
		"# TYPE x_g gauge\nx_g 1\n",
		g + "x_g one\n",
		g + "x-g 1\n",
		g + `x_g{a="b} 1` + "\n",
		g + `x_g{a=b} 1` + "\n",
		g + `x_g{a="1",a="2"} 1` + "\n",
		g + "x_g 1\nx_g 2\n",
		g + "y_g 1\n",
		g + "# TYPE x_g counter\n",
		g + "# HELP y y\n# TYPE y gauge\ny 1\nx_g 1\n",
		"# HELP x_h h\n# TYPE x_h histogram\n" + `x_h_bucket{le="1"} 2` + "\n" + `x_h_bucket{le="+Inf"} 1` + "\nx_h_sum 1\nx_h_count 1\n",
		"# HELP x_h h\n# TYPE x_h histogram\n" + `x_h_bucket{le="1"} 2` + "\n" + `x_h_bucket{le="+Inf"} 2` + "\nx_h_sum 1\nx_h_count 3\n",
		"# HELP x_h h\n# TYPE x_h histogram\n" + `x_h_bucket{le="1"} 2` + "\nx_h_sum 1\nx_h_count 2\n",
	} {
		if _, _, err := parseMetrics(bad); err == nil {
			t.Errorf("parseMetrics accepted %q", bad)
		}
	}
}
