//go:build linux

package cli

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
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
