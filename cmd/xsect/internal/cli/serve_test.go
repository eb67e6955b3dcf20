package cli

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/xsect/xsect/gpu"
)

// buildIndexFile builds the index of docs (one set of term ids per line) and
// returns its path.
func buildIndexFile(t *testing.T, docs string, text bool) string {
	t.Helper()
	in := writeFile(t, "docs.txt", docs)
	idx := filepath.Join(t.TempDir(), "docs.idx")
	args := []string{"index", "build", in, "-o", idx}
	if text {
		args = append(args, "--text")
	}
	if code, _, stderr := run(t, args...); code != ExitOK {
		t.Fatalf("index build: exit %d: %s", code, stderr)
	}
	return idx
}

// lineWatcher is a child's stderr: it keeps everything and hands each line
// to a channel.
type lineWatcher struct {
	w     *io.PipeWriter
	lines chan string
	all   strings.Builder
}

func newLineWatcher() *lineWatcher {
	r, w := io.Pipe()
	lw := &lineWatcher{w: w, lines: make(chan string, 1000)}
	go func() {
		s := bufio.NewScanner(r)
		for s.Scan() {
			lw.lines <- s.Text()
		}
		close(lw.lines)
	}()
	return lw
}

func (lw *lineWatcher) Write(b []byte) (int, error) { return lw.w.Write(b) }

// await returns the first line matching re, failing after a minute.
func (lw *lineWatcher) await(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case line, ok := <-lw.lines:
			if !ok {
				t.Fatalf("stderr ended before a line matching %v:\n%s", re, lw.all.String())
			}
			lw.all.WriteString(line + "\n")
			if m := re.FindStringSubmatch(line); m != nil {
				return m
			}
		case <-timeout:
			t.Fatalf("no line matching %v on stderr:\n%s", re, lw.all.String())
		}
	}
}

func httpDo(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServe runs xsect serve in a process of its own: it answers queries
// (checked against xsect query's answers), loadgen drives it, and SIGTERM
// stops it with exit status 0.
func TestServe(t *testing.T) {
	docs := "1 2 3\n2 3\n\n3 4 5\n0 1 2 3 4 5\n"
	idx := buildIndexFile(t, docs, false)
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	cmd, stderr, addr := startServe(t, idx, "--threads", "2", "--cpuprofile", prof)
	url := "http://" + addr
	if code, body := httpDo(t, "GET", url+"/healthz", ""); code != 200 {
		t.Fatalf("healthz: %d %s", code, body)
	}
	queries := "2 3\n3\n\n9\n3 3 1\n5 4\n"
	qfile := writeFile(t, "q.txt", queries)
	_, want, _ := run(t, "query", idx, qfile, "--count", "--device", "cpu")
	_, wantIDs, _ := run(t, "query", idx, qfile, "--device", "cpu")
	counts := strings.Split(strings.TrimSuffix(want, "\n"), "\n")
	idLines := strings.Split(strings.TrimSuffix(wantIDs, "\n"), "\n")
	for i, line := range strings.Split(strings.TrimSuffix(queries, "\n"), "\n") {
		terms := "[" + strings.Join(strings.Fields(line), ",") + "]"
		code, body := httpDo(t, "POST", url+"/v1/search", `{"terms":`+terms+`}`)
		exp := `{"count":` + counts[i] + `,"ids":[` + strings.ReplaceAll(idLines[i], " ", ",") + "]}\n"
		if code != 200 || body != exp {
			t.Errorf("query %q: %d %s, want %s", line, code, body, exp)
		}
	}
	if code, body := httpDo(t, "POST", url+"/v1/search", `{"terms":[1.5]}`); code != 400 || !strings.Contains(body, "terms[0]") {
		t.Errorf("bad term: %d %s", code, body)
	}

	code, stdout, errs := run(t, "loadgen", url, qfile, "--clients", "3", "--duration", "300ms", "--batch", "2", "--limit", "1")
	if code != ExitOK || !regexp.MustCompile(`requests [1-9]\d* \(\d+/s\), queries [1-9]\d* \(\d+/s\), errors 0\n`).MatchString(stdout) ||
		!strings.Contains(stdout, "p99.9") {
		t.Errorf("loadgen: exit %d\n%s%s", code, stdout, errs)
	}
	if code, body := httpDo(t, "GET", url+"/metrics", ""); code != 200 || !regexp.MustCompile(`(?m)^xsect_queries_total\{device="cpu"\} [1-9]`).MatchString(body) {
		t.Errorf("metrics: %d\n%s", code, body)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	stderr.await(t, regexp.MustCompile(`msg=stopped`))
	if err := cmd.Wait(); err != nil || cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("after SIGTERM: %v, exit %d\n%s", err, cmd.ProcessState.ExitCode(), stderr.all.String())
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("still listening after exit")
	}
	if b, err := os.ReadFile(prof); err != nil || len(b) == 0 {
		t.Errorf("--cpuprofile: %d bytes, %v", len(b), err)
	}
}

// startServe starts xsect serve on the CPU on idx, with its text logs in
// the watcher, and returns once it is ready, with the address it listens
// on. The process is killed at the end of the test.
func startServe(t *testing.T, idx string, flags ...string) (*exec.Cmd, *lineWatcher, string) {
	t.Helper()
	stderr := newLineWatcher()
	cmd, _, _ := child{args: append([]string{"serve", idx, "--addr", "127.0.0.1:0", "--device", "cpu"}, flags...)}.command(t)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	addr := stderr.await(t, regexp.MustCompile(`msg=listening addr=(\S+)`))[1]
	stderr.await(t, regexp.MustCompile(`msg=ready device=cpu`))
	return cmd, stderr, addr
}

// SIGHUP (a closed terminal, a supervisor) stops the server as SIGTERM
// does: logged, the request in flight answered, --cpuprofile written and
// no temporary file left, exit 0. It used to kill the process at once.
func TestServeHangup(t *testing.T) {
	idx := buildIndexFile(t, "1 2\n2\n", false)
	profDir := t.TempDir()
	prof := filepath.Join(profDir, "cpu.prof")
	cmd, stderr, addr := startServe(t, idx, "--cpuprofile", prof)
	// A request in flight: its body is half sent when the signal comes.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"terms":[2]}`
	fmt.Fprintf(conn, "POST /v1/search HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:5])
	time.Sleep(100 * time.Millisecond) // the server reads the headers
	cmd.Process.Signal(syscall.SIGHUP)
	stderr.await(t, regexp.MustCompile(`msg="signal received" signal=hangup`))
	io.WriteString(conn, body[5:])
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the request in flight: %v", err)
	}
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(answer) != `{"count":2,"ids":[0,1]}`+"\n" {
		t.Errorf("the request in flight: %d %q", resp.StatusCode, answer)
	}
	stderr.await(t, regexp.MustCompile(`msg=stopped`))
	if err := cmd.Wait(); err != nil {
		t.Errorf("after SIGHUP: %v\n%s", err, stderr.all.String())
	}
	if names := entries(t, profDir); len(names) != 1 || names[0] != "cpu.prof" {
		t.Errorf("after SIGHUP, the profile's directory holds %q; want the profile alone", names)
	}
}

// An index file overwritten in place while served (cp over it) fails the
// request that meets it with a 500 that says so, and stops the server
// cleanly with exit status 1 and a log line; it died of SIGBUS. Renamed
// over, it is no change: the server answers from the file it mapped.
func TestServeIndexChanged(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the index is mapped, and its changes seen, on Unix; tested on Linux")
	}
	var docs strings.Builder
	for i := range 30000 {
		fmt.Fprintf(&docs, "%d %d %d\n", i%7, i%1000, 1000+i)
	}
	idx := buildIndexFile(t, docs.String(), false)
	other := buildIndexFile(t, "1 2\n", false)
	otherData, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	cmd, stderr, addr := startServe(t, idx)
	url := "http://" + addr
	want := `{"count":4311,"ids":[0,7]}` + "\n" // i%7 == 0 or i%1000 == 0
	if code, body := httpDo(t, "POST", url+"/v1/search", `{"terms":[0],"limit":2}`); code != 200 || body != want {
		t.Fatalf("before: %d %s, want %s", code, body, want)
	}
	// Renamed over: the old file stays mapped.
	renamed := filepath.Join(t.TempDir(), "new.idx")
	if err := os.WriteFile(renamed, otherData, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(renamed, idx); err != nil {
		t.Fatal(err)
	}
	if code, body := httpDo(t, "POST", url+"/v1/search", `{"terms":[0],"limit":2}`); code != 200 || body != want {
		t.Fatalf("after a rename over the index: %d %s, want %s", code, body, want)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v", err)
	}
	if !indexMapped {
		t.Skip("this build reads the index into memory: a file overwritten in place does not reach the server")
	}

	// Overwritten in place.
	bigData, err := os.ReadFile(buildIndexFile(t, docs.String(), false))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(idx, bigData, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, stderr, addr = startServe(t, idx)
	url = "http://" + addr
	if err := os.WriteFile(idx, otherData, 0o644); err != nil {
		t.Fatal(err)
	}
	code, body := httpDo(t, "POST", url+"/v1/search:batch", `{"queries":[{"terms":[0]},{"terms":[3,999]}]}`)
	if code != 500 || !strings.Contains(body, "the index file changed while in use") {
		t.Errorf("a search after the index was overwritten: %d %s, want 500 saying the index changed", code, body)
	}
	stderr.await(t, regexp.MustCompile(`level=ERROR msg="the index file changed while served: stopping`))
	stderr.await(t, regexp.MustCompile(`msg=stopped`))
	err = cmd.Wait()
	last := stderr.await(t, regexp.MustCompile(`^xsect serve: .*`))[0]
	if cmd.ProcessState.ExitCode() != ExitFailure || !strings.Contains(last, idx+": the index file changed while in use") {
		t.Errorf("after the index changed: %v, exit %d; want a clean exit 1 saying the index changed\n%s", err, cmd.ProcessState.ExitCode(), stderr.all.String())
	}
}

// loadgen against a server that answers 200 with an error page, or
// that fails some requests, exits 1 with its report: it exited 0, the
// error pages counted as answers.
func TestLoadgenFailures(t *testing.T) {
	var calls atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/healthz") {
			return
		}
		io.Copy(io.Discard, r.Body)
		switch {
		case strings.HasPrefix(r.URL.Path, "/html/"):
			io.WriteString(w, "<html>maintenance</html>")
		default: // every third request turned away
			if calls.Add(1)%3 == 0 {
				http.Error(w, `{"error":"busy"}`, http.StatusTooManyRequests)
				return
			}
			io.WriteString(w, `{"count":1,"ids":[7]}`)
		}
	}))
	defer ts.Close()
	q := writeFile(t, "q.sets", "1 2\n")
	for _, c := range []struct{ url, requests, errors string }{
		{ts.URL + "/html", "\nrequests 0 (0/s)", "errors by status: 200 malformed: "},
		{ts.URL, "\nrequests ", "errors by status: 429: "},
	} {
		code, stdout, stderr := run(t, "loadgen", c.url, q, "--clients", "2", "--duration", "100ms")
		if code != ExitFailure || !strings.Contains(stdout, c.requests) || !strings.Contains(stdout, c.errors) ||
			!regexp.MustCompile(`^xsect loadgen: [1-9]\d* of [1-9]\d* requests failed \(errors by status above\)\n$`).MatchString(stderr) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1, %q and %q", c.url, code, stdout, stderr, c.requests, c.errors)
		}
	}
}

func TestServeText(t *testing.T) {
	idx := buildIndexFile(t, "The quick fox\nthe lazy dog\nA Fox, a dog\n", true)
	stderr := newLineWatcher()
	cmd, _, _ := child{args: []string{"serve", idx, "--addr", "127.0.0.1:0", "--device", "cpu", "--log-format", "json"}}.command(t)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	addr := stderr.await(t, regexp.MustCompile(`"msg":"listening","addr":"([^"]+)"`))[1]
	stderr.await(t, regexp.MustCompile(`"msg":"ready"`))
	url := "http://" + addr
	for _, c := range []struct{ q, want string }{
		{"fox", `{"count":2,"ids":[0,2]}`},
		{"DOG the", `{"count":1,"ids":[1]}`},
		{"cat", `{"count":0,"ids":[]}`},
	} {
		if code, body := httpDo(t, "POST", url+"/v1/search", `{"q":"`+c.q+`"}`); code != 200 || body != c.want+"\n" {
			t.Errorf("q %q: %d %s, want %s", c.q, code, body, c.want)
		}
	}
	qfile := writeFile(t, "q.txt", "fox\nthe dog\n")
	if code, stdout, errs := run(t, "loadgen", url, qfile, "--text", "--clients", "2", "--duration", "200ms"); code != ExitOK || !strings.Contains(stdout, "errors 0") {
		t.Errorf("loadgen --text: exit %d\n%s%s", code, stdout, errs)
	}
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Errorf("after SIGINT: %v\n%s", err, stderr.all.String())
	}
}

func TestServeUsage(t *testing.T) {
	idx := buildIndexFile(t, "1 2\n2\n", false)
	junk := writeFile(t, "junk.idx", "not an index")
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"serve"}, ExitUsage, "want one INDEX"},
		{[]string{"serve", idx, idx}, ExitUsage, "want one INDEX"},
		{[]string{"serve", junk}, ExitUsage, "junk.idx"},
		{[]string{"serve", filepath.Join(t.TempDir(), "absent")}, ExitUsage, "absent"},
		{[]string{"serve", idx, "--device", "tpu"}, ExitUsage, "--device"},
		{[]string{"serve", idx, "--threads", "-1"}, ExitUsage, "--threads"},
		{[]string{"serve", idx, "--batch-size", "-1"}, ExitUsage, "--batch-size"},
		{[]string{"serve", idx, "--queue", "-1"}, ExitUsage, "--queue"},
		{[]string{"serve", idx, "--max-queries", "0"}, ExitUsage, "--max-queries 0"},
		{[]string{"serve", idx, "--max-limit", "0"}, ExitUsage, "--max-limit 0"},
		{[]string{"serve", idx, "--max-body", "0"}, ExitUsage, "--max-body 0"},
		{[]string{"serve", idx, "--deadline", "0s"}, ExitUsage, "--deadline"},
		{[]string{"serve", idx, "--max-bodies", "-1"}, ExitUsage, "--max-bodies"},
		{[]string{"serve", idx, "--max-body", "2000", "--max-bodies", "1000"}, ExitUsage, "body budget"},
		{[]string{"serve", idx, "--batch-wait", "-1s"}, ExitUsage, "batch wait"},
		{[]string{"serve", idx, "--concurrency", "-1"}, ExitUsage, "--concurrency"},
		{[]string{"serve", idx, "--queue", "10", "--max-queries", "11"}, ExitUsage, "--max-queries 11"},
		{[]string{"serve", idx, "--log-level", "loud"}, ExitUsage, "--log-level"},
		{[]string{"serve", idx, "--log-format", "xml"}, ExitUsage, "--log-format"},
		{[]string{"serve", idx, "--addr", "256.0.0.1:1"}, ExitFailure, "cannot listen"},
		{[]string{"loadgen"}, ExitUsage, "want URL and QUERIES"},
		{[]string{"loadgen", "http://127.0.0.1:1", idx, "--clients", "0"}, ExitUsage, "--clients 0"},
		{[]string{"loadgen", "http://127.0.0.1:1", idx, "--duration", "0s"}, ExitUsage, "--duration"},
		{[]string{"loadgen", "http://127.0.0.1:1", idx, "--batch", "0"}, ExitUsage, "--batch 0"},
		{[]string{"loadgen", "http://127.0.0.1:1", idx, "--limit", "-2"}, ExitUsage, "--limit -2"},
		{[]string{"loadgen", "http://127.0.0.1:1", writeFile(t, "bad.q", "1 2\n3 x\n")}, ExitUsage, "bad.q:2:3"},
		{[]string{"loadgen", "http://127.0.0.1:1", writeFile(t, "empty.q", "")}, ExitUsage, "no queries"},
		{[]string{"loadgen", "http://127.0.0.1:1", writeFile(t, "ok.q", "1\n")}, ExitFailure, "127.0.0.1:1"},
		{[]string{"loadgen", "127.0.0.1:1", writeFile(t, "ok2.q", "1\n")}, ExitUsage, "want http://HOST:PORT"},
	} {
		code, _, stderr := run(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.msg) {
			t.Errorf("%q: exit %d, %q; want %d and %q", c.args, code, stderr, c.code, c.msg)
		}
	}
	// A port in use: exit 1.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if code, _, stderr := run(t, "serve", idx, "--addr", ln.Addr().String()); code != ExitFailure || !strings.Contains(stderr, "cannot listen") {
		t.Errorf("port in use: exit %d, %s", code, stderr)
	}
	// --device gpu without a GPU: a clear error once listening, exit 1.
	if gpu.Available() != nil {
		if code, _, stderr := run(t, "serve", idx, "--device", "gpu", "--addr", "127.0.0.1:0"); code != ExitFailure || !strings.Contains(stderr, "cannot run") {
			t.Errorf("--device gpu without a GPU: exit %d, %s", code, stderr)
		}
	}
	for _, name := range []string{"serve", "loadgen"} {
		if code, stdout, _ := run(t, name, "--help"); code != ExitOK || !strings.Contains(stdout, "Usage: xsect "+name) {
			t.Errorf("%s --help: exit %d", name, code)
		}
	}
}
