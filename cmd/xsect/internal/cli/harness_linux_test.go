//go:build linux

package cli

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

const (
	limitsSupported = true
	rlimitAS        = syscall.RLIMIT_AS
	rlimitFSize     = syscall.RLIMIT_FSIZE
)

// setLimit sets the soft and hard limits of a resource of this process.
// A file too large is then an error of the write (EFBIG): the Go runtime
// ignores SIGXFSZ.
func setLimit(resource int, n uint64) error {
	return syscall.Setrlimit(resource, &syscall.Rlimit{Cur: n, Max: n})
}

// A bad or hostile input under an address-space limit (the 4 GiB the
// issue was found with) ends with one line that names the problem and
// exit status 2, not with the Go runtime's fatal error and goroutine dump.
func TestAddressSpaceLimit(t *testing.T) {
	skipUnderRace(t)
	dir := t.TempDir()
	lie := lyingHeader(1<<40, 1<<50)
	lieFile := filepath.Join(dir, "lie.bin")
	os.WriteFile(lieFile, append(lie, make([]byte, 4096)...), 0o644)
	good := filepath.Join(dir, "good.txt")
	os.WriteFile(good, []byte("1 2 3\n2 3\n"), 0o644)
	var junk bytes.Buffer
	zw := gzip.NewWriter(&junk)
	zw.Write([]byte("1 2 3\n"))
	zw.Close()
	junk.WriteString("not gzip")
	junkFile := filepath.Join(dir, "junk.gz")
	os.WriteFile(junkFile, junk.Bytes(), 0o644)
	for _, tc := range []struct {
		args  []string
		stdin []byte
		want  string
	}{
		{[]string{"info", "-"}, append(lie, make([]byte, 1<<20)...), "truncated"},
		{[]string{"info", lieFile}, nil, "header says"},
		{[]string{"allpairs", lieFile}, nil, "header says"},
		{[]string{"allpairs", good, "--threads", "2000000000"}, nil, "--threads 2000000000"},
		{[]string{"pairs", "--min-support", "1", "--threads", "2000000000", good}, nil, "--threads 2000000000"},
		{[]string{"info", junkFile}, nil, "trailing garbage"},
	} {
		r := child{args: tc.args, stdin: bytes.NewReader(tc.stdin), limits: map[string]uint64{childASEnv: 4 << 30}}.run(t)
		firstLine, _, _ := strings.Cut(r.stderr, "\n")
		if r.state.ExitCode() != ExitUsage || !strings.HasPrefix(r.stderr, "xsect ") || !strings.Contains(firstLine, tc.want) ||
			strings.Contains(r.stderr, "fatal error") || strings.Contains(r.stderr, "goroutine") {
			t.Errorf("%q under 4 GiB: %v, stderr %q; want exit 2 and %q", tc.args, r.state, r.stderr, tc.want)
		}
	}
}

// lyingHeader is a valid binary header for k sets and n elements.
func lyingHeader(k, n uint64) []byte {
	b := make([]byte, 64)
	copy(b, "\x89XSET\r\n\x1a")
	le := binary.LittleEndian
	le.PutUint32(b[8:], 1)
	le.PutUint32(b[12:], 1)
	le.PutUint64(b[16:], k)
	le.PutUint64(b[24:], n)
	le.PutUint64(b[32:], 64)
	elems := (64 + 8*(k+1) + 63) &^ 63
	le.PutUint64(b[40:], elems)
	le.PutUint64(b[48:], elems+4*n)
	le.PutUint32(b[60:], crc32.Checksum(b[:60], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// A write that fails on a regular file (here at the file-size limit, as on
// a full disk) names the user's path, not the temporary file, exits 1 and
// leaves nothing.
func TestFileSizeLimit(t *testing.T) {
	for _, args := range [][]string{
		{"gen", "--sets", "5000", "--avg-size", "200", "-o", "out.txt"},
		{"gen", "--sets", "5000", "--avg-size", "200", "--format", "binary", "-o", "out.txt"},
		{"pairs", "--gen-items", "300", "--gen-p", "0.1", "--gen-occurrences", "300000", "--gen-out", "out.txt"},
		{"pairs", "--gen-items", "300", "--gen-p", "0.1", "--gen-occurrences", "300000", "--min-support", "1", "-o", "out.txt"},
		{"pairs", "--gen-items", "300", "--gen-p", "0.1", "--gen-occurrences", "300000", "--min-support", "1", "--sort", "-o", "out.txt"},
	} {
		dir := t.TempDir()
		r := child{args: args, dir: dir, limits: map[string]uint64{childFSizeEnv: 64 << 10}}.run(t)
		if r.state.ExitCode() != ExitFailure || r.stderr != "xsect "+args[0]+": writing out.txt: file too large\n" {
			t.Errorf("%q over the file size limit: %v, stderr %q", args, r.state, r.stderr)
		}
		if names := entries(t, dir); len(names) != 0 {
			t.Errorf("%q: left %q", args, names)
		}
	}
}

// peakRSS is the most memory this process has had resident (VmHWM), in
// bytes, or 0 if it cannot be read.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// runPeak runs c and returns the result and the child's peak resident
// memory.
func runPeak(t *testing.T, c child) (childResult, int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "peak")
	c.env = append(c.env, childPeakEnv+"="+path)
	r := c.run(t)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%q: no peak memory (%v, stderr %.300q): %v", c.args, r.state, r.stderr, err)
	}
	n, _ := strconv.ParseInt(string(b), 10, 64)
	return r, n
}

// pairLines checks, as it is written to, that the text is the lines
// "i<TAB>j<TAB>value" of every pair i < j < k, in order.
type pairLines struct {
	k, i, j int
	value   string
	partial []byte
	err     error
}

func (p *pairLines) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 && p.err == nil {
		end := bytes.IndexByte(b, '\n')
		if end < 0 {
			p.partial = append(p.partial, b...)
			break
		}
		line := append(p.partial, b[:end]...)
		p.partial, b = p.partial[:0], b[end+1:]
		if p.j == 0 {
			p.j = p.i + 1
		}
		if want := strconv.Itoa(p.i) + "\t" + strconv.Itoa(p.j) + "\t" + p.value; string(line) != want || p.i >= p.k-1 {
			p.err = fmt.Errorf("line %q, want %q", line, want)
			break
		}
		if p.j++; p.j == p.k {
			p.i, p.j = p.i+1, 0
		}
	}
	return n, nil
}

// done reports whether every pair came, and nothing else.
func (p *pairLines) done() error {
	if p.err == nil && (p.i != p.k-1 || len(p.partial) > 0) {
		p.err = fmt.Errorf("ended before pair (%d, %d) of %d sets", p.i, p.j, p.k)
	}
	return p.err
}

// allpairs and simjoin --sort on 72 million pairs, under the 4 GiB
// address-space limit the issues were found with (sorting them in memory
// died there of Go's fatal out-of-memory error): the pairs are sorted in
// runs and merged, the output is every pair in order, and the runs'
// directory under $TMPDIR is gone. simjoin, which held every pair
// however low --memory was, stays within its budget (as much again for
// the runtime and the test binary).
func TestSortUnderAddressLimit(t *testing.T) {
	skipUnderRace(t)
	if testing.Short() {
		t.Skip("72 million pairs")
	}
	const k = 12000
	in := sharedElementSets(t, k)
	for _, tc := range []struct {
		args    []string
		value   string // every pair's third column
		maxPeak int64  // 0: not checked
	}{
		{[]string{"allpairs", in, "--sort"}, "1", 0},
		{[]string{"simjoin", in, "--threshold", "0.2", "--sort", "--memory", "64"}, "0.200000", 128 << 20},
	} {
		tmp := t.TempDir()
		check := &pairLines{k: k, value: tc.value}
		r, peak := runPeak(t, child{args: tc.args, stdout: check, env: []string{"TMPDIR=" + tmp},
			limits: map[string]uint64{childASEnv: 4 << 30}})
		if r.state.ExitCode() != ExitOK {
			t.Fatalf("%q: exit %v, stderr %q", tc.args, r.state, r.stderr)
		}
		if err := check.done(); err != nil {
			t.Errorf("%q: %v", tc.args, err)
		}
		if names := entries(t, tmp); len(names) != 0 {
			t.Errorf("%q: left %q in TMPDIR", tc.args, names)
		}
		t.Logf("%q: %d MiB resident at the peak", tc.args, peak>>20)
		if tc.maxPeak > 0 && (peak == 0 || peak > tc.maxPeak) {
			t.Errorf("%q: %d MiB resident at the peak, want at most %d", tc.args, peak>>20, tc.maxPeak>>20)
		}
	}
}

// gzipBomb writes n empty lines, gzip-compressed: the same member of a
// million of them, repeated.
func gzipBomb(t *testing.T, n int) string {
	var member bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	zw.Write(bytes.Repeat([]byte("\n"), 1<<20))
	zw.Close()
	path := filepath.Join(t.TempDir(), "bomb.gz")
	os.WriteFile(path, bytes.Repeat(member.Bytes(), n>>20), 0o644)
	return path
}

// A gzip bomb (400 million empty lines in half a megabyte) is refused,
// under the address-space limit, under GOMEMLIMIT and under --memory,
// with exit status 1 and one line that says what to raise: not Go's fatal
// error.
func TestGzipBomb(t *testing.T) {
	skipUnderRace(t)
	bomb := gzipBomb(t, 400<<20)
	for _, tc := range []struct {
		args   []string
		env    []string
		limits map[string]uint64
		advice string
	}{
		{[]string{"info", bomb}, nil, map[string]uint64{childASEnv: 4 << 30}, "raise the address-space limit (ulimit -v)"},
		{[]string{"allpairs", bomb, "--count-only"}, nil, map[string]uint64{childASEnv: 4 << 30}, "raise the address-space limit (ulimit -v)"},
		{[]string{"info", bomb}, []string{"GOMEMLIMIT=512MiB"}, nil, "raise GOMEMLIMIT"},
		{[]string{"info", bomb, "--memory", "256"}, nil, nil, "raise --memory"},
	} {
		r := child{args: tc.args, env: tc.env, limits: tc.limits}.run(t)
		if r.state.ExitCode() != ExitFailure || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 ||
			!strings.HasPrefix(r.stderr, "xsect "+tc.args[0]+": "+bomb+": ") || !strings.HasSuffix(r.stderr, ": "+tc.advice+"\n") {
			t.Errorf("%q %q: %v, stderr %q; want exit 1 and one line saying %q", tc.env, tc.args, r.state, r.stderr, tc.advice)
		}
	}
}

// pairs writes its pairs while they come, on standard output as to a
// file, in bounded memory: every pair arrives, and the process never
// holds more than a fraction of them (it held them all before).
func TestPairsOutputBounded(t *testing.T) {
	skipUnderRace(t)
	gen := []string{"pairs", "--gen-items", "6000", "--gen-p", "0.05", "--gen-occurrences", "2000000", "--min-support", "1"}
	code, count, stderr := run(t, append(slices.Clone(gen), "--count")...)
	if code != ExitOK {
		t.Fatal(stderr)
	}
	want, _ := strconv.Atoi(strings.TrimSpace(count))
	dir := t.TempDir()
	for _, extra := range [][]string{nil, {"-o", "out.txt"}, {"--sort", "--memory", "48"}} {
		lines := &lineCounter{}
		args := append(slices.Clone(gen), extra...)
		r, rss := runPeak(t, child{args: args, stdout: lines, dir: dir, env: []string{"TMPDIR=" + dir}})
		if r.state.ExitCode() != ExitOK {
			t.Fatalf("%q: %v, %s", args, r.state, r.stderr)
		}
		if len(extra) > 0 && extra[0] == "-o" {
			data, err := os.ReadFile(filepath.Join(dir, "out.txt"))
			if err != nil {
				t.Fatal(err)
			}
			lines.Write(data)
			os.Remove(filepath.Join(dir, "out.txt"))
		}
		if lines.lines != want || lines.unsorted && extra != nil && extra[0] == "--sort" {
			t.Errorf("%q: %d lines (sorted: %v), want %d", args, lines.lines, !lines.unsorted, want)
		}
		// The process itself (the runtime, the generated instance, the
		// queue of chunks, and the sort's runs under --memory 48) peaks at
		// 53-74 MiB here for 216 MiB of output: half the output leaves it
		// room, and holding the pairs would exceed it.
		if rss == 0 || rss > lines.bytes/2 {
			t.Errorf("%q: %d MiB resident at the peak for %d MiB of output", args, rss>>20, lines.bytes>>20)
		}
	}
}

// lineCounter counts the lines and bytes written to it, and whether the
// pairs "a<TAB>b<TAB>..." came in order.
type lineCounter struct {
	lines    int
	bytes    int64
	partial  []byte
	prev     [2]uint64
	unsorted bool
}

func (c *lineCounter) Write(b []byte) (int, error) {
	c.bytes += int64(len(b))
	n := len(b)
	for len(b) > 0 {
		end := bytes.IndexByte(b, '\n')
		if end < 0 {
			c.partial = append(c.partial, b...)
			break
		}
		line := b[:end]
		if len(c.partial) > 0 {
			line = append(c.partial, line...)
			c.partial = c.partial[:0]
		}
		b = b[end+1:]
		a, rest, _ := bytes.Cut(line, []byte("\t"))
		bb, _, _ := bytes.Cut(rest, []byte("\t"))
		i, _ := strconv.ParseUint(string(a), 10, 32)
		j, _ := strconv.ParseUint(string(bb), 10, 32)
		if c.lines > 0 && (i < c.prev[0] || i == c.prev[0] && j <= c.prev[1]) {
			c.unsorted = true
		}
		c.prev = [2]uint64{i, j}
		c.lines++
	}
	return n, nil
}

// skipUnderRace skips a test of memory limits or peaks under the race
// detector, which reserves hundreds of MiB of shadow memory per process.
func skipUnderRace(t *testing.T) {
	if raceDetector {
		t.Skip("memory limits and peaks measure the race detector's shadow memory here")
	}
}
