package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"strings"
	"time"

	"github.com/xsect/xsect/internal/progress"
	"github.com/xsect/xsect/internal/serve"
	"github.com/xsect/xsect/query"
)

func init() {
	register(&command{
		name:    "loadgen",
		summary: "load-test an 'xsect serve' server: throughput and latency percentiles",
		usage:   "URL QUERIES --clients C --duration D [--batch K] [--limit N] [--text]",
		help: `
Sends the queries of QUERIES to the server at URL (http://HOST:PORT, as
'xsect serve' listens) from --clients concurrent clients for --duration, each
client sending a request, reading its answer, then sending the next (a closed
loop). QUERIES is read as 'xsect query' reads it: one query per line, term ids
separated by spaces, or with --text raw text sent as "q" (the server's index
must then have a vocabulary). The queries are sent in turn, from the first
again after the last. With --batch K > 1, a request carries K queries to
/v1/search:batch; otherwise one to /v1/search.

Every answer is checked: an answer of status 200 that is not a well-formed
answer to its request (an error page, JSON cut short, the wrong number of
results) is an error, "200 malformed". Prints the run's requests and queries
per second, the errors by status, and the latency of the requests answered
(from sending to reading the whole answer): mean, p50, p99, p99.9 and max,
within 1/64. Exits 1 when any request failed, or none was answered.`,
		setup: func(fs *flag.FlagSet) func(*Env, []string) error {
			clients := fs.Int("clients", 1, "concurrent clients, each with one request in flight")
			duration := fs.Duration("duration", 10*time.Second, "length of the run")
			batch := fs.Int("batch", 1, "queries per request (more than 1: /v1/search:batch)")
			limit := fs.Int("limit", -1, "the limit sent with each query (-1: none, the server's default of 10)")
			text := fs.Bool("text", false, "QUERIES holds text, sent as \"q\"")
			return func(env *Env, args []string) error {
				if len(args) != 2 {
					return usagef("want URL and QUERIES, got %d arguments", len(args))
				}
				switch {
				case *clients < 1 || *clients > 1<<16:
					return usagef("--clients %d: want 1 to 65536", *clients)
				case *duration <= 0:
					return usagef("--duration %v: want more than 0", *duration)
				case *batch < 1 || *batch > 1<<20:
					return usagef("--batch %d: want 1 to 2^20", *batch)
				case *limit < -1:
					return usagef("--limit %d: want 0 or more, or -1 for none", *limit)
				}
				qs, err := readLoadQueries(env, args[1], *text)
				if err != nil {
					return err
				}
				if len(qs) == 0 {
					return inputError{fmt.Errorf("%s: no queries", args[1])}
				}
				url := strings.TrimSuffix(args[0], "/")
				if u, err := neturl.Parse(url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return usagef("URL %q: want http://HOST:PORT", args[0])
				}
				if err := checkHealth(url); err != nil {
					return err
				}
				bar := progress.Start("loadgen", "requests", 0)
				done := int64(0)
				rep, err := serve.Load(context.Background(), serve.LoadConfig{
					URL: url, Queries: qs, Clients: *clients, Duration: *duration, Batch: *batch, Limit: *limit,
					Progress: func(n int64) {
						bar.Add(n - done)
						done = n
					},
				})
				bar.Done()
				if err != nil {
					return usageError{err.Error()}
				}
				out := output(env)
				io.WriteString(out, rep.String())
				if err := out.Flush(); err != nil {
					return err
				}
				// A run with failures measured something else than
				// the server answering: a script must not take it
				// for a clean measurement.
				if n := rep.ErrorCount(); n > 0 {
					return fmt.Errorf("%d of %d requests failed (errors by status above)", n, n+rep.Requests)
				}
				if rep.Requests == 0 {
					return errors.New("no request was answered")
				}
				return nil
			}
		},
	})
}

// checkHealth asks the server's /healthz, so that a wrong URL or a server
// still loading is one clear error rather than a run of failures.
func checkHealth(url string) error {
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url + "/healthz")
	if err != nil {
		return fmt.Errorf("the server at %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the server at %s is not ready: %s %s", url, resp.Status, bytes.TrimSpace(body))
	}
	return nil
}

// readLoadQueries reads the query file as xsect query does: term ids per
// line (a bad line is an error naming the file, line and column), or text.
func readLoadQueries(env *Env, path string, text bool) ([]serve.LoadQuery, error) {
	var qs []serve.LoadQuery
	err := readQueryLines(env, path, func(name string, lineNo int, line []byte) error {
		if text {
			qs = append(qs, serve.LoadQuery{Text: string(bytes.TrimSuffix(line, []byte{'\r'})), IsText: true})
			return nil
		}
		q, err := parseQueryIDs(query.Query{}, line, name, lineNo)
		if err != nil {
			return err
		}
		qs = append(qs, serve.LoadQuery{Terms: q.Terms})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return qs, nil
}
