package gpuquery

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/invindex"
	"github.com/xsect/xsect/internal/query"
)

// runnersPerOwner is the runners opened on each owner of the set: while
// one search's batches are packed or read back on the host, another's run
// on the device (as the server's two GPU searchers did, measured on the
// H100 host in docs/SERVE.md). A runner's buffers grow at its first
// searches, so one that is never used costs little.
const runnersPerOwner = 2

// setRunner is the GPU engine's Runner: runnersPerOwner devRunners on each
// owner of a set of GPUs, each owner with the index resident, scheduled
// by a sched (a large search split over the owners, a small one on the
// least-loaded). It is safe for concurrent use.
type setRunner struct {
	set     *gpurt.Set
	runners [][]*devRunner // by owner
	sched   *sched

	closeOnce sync.Once
	closeErr  error
}

// openOwners opens per devRunners on every owner of set, the owners in
// parallel (each uploads the index on its own goroutine; owners of one GPU
// one after the other, see gpurt.Device.UploadLock).
func openOwners(set *gpurt.Set, ix *invindex.Index, threads, per int) (*setRunner, error) {
	sr := &setRunner{set: set, runners: make([][]*devRunner, set.Len())}
	errs := make([]error, set.Len())
	var wg sync.WaitGroup
	for i := range set.Len() {
		wg.Go(func() {
			for range per {
				r, err := newDevRunner(set.Owner(i), ix, threads)
				if err != nil {
					errs[i] = fmt.Errorf("%s: %w", ownerName(set, i), err)
					return
				}
				sr.runners[i] = append(sr.runners[i], r)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, errors.Join(err, sr.closeRunners())
	}
	rs := make([][]searcher, len(sr.runners))
	for i, owner := range sr.runners {
		for _, r := range owner {
			rs[i] = append(rs[i], r)
		}
	}
	sr.sched = newSched(rs, minPart)
	return sr, nil
}

// ownerName names owner i of set: "gpu 1", or "gpu 0#1" for the second
// owner of a GPU the set holds twice.
func ownerName(set *gpurt.Set, i int) string {
	o := set.Owner(i).Info().Ordinal
	if set.Share(i) == 1 {
		return fmt.Sprintf("gpu %d", o)
	}
	k := 0
	for j := range i {
		if set.Owner(j).Info().Ordinal == o {
			k++
		}
	}
	return fmt.Sprintf("gpu %d#%d", o, k)
}

// Search answers a batch; see query.Runner and sched.Search.
func (sr *setRunner) Search(ctx context.Context, qs []query.Query, limit int, countOnly bool, res []query.Result) error {
	return sr.sched.Search(ctx, qs, limit, countOnly, res)
}

// Concurrency returns the searches that run at once before another waits.
func (sr *setRunner) Concurrency() int { return sr.set.Len() * runnersPerOwner }

// Notes describes the batches run so far, owner by owner, each line
// naming its GPU.
func (sr *setRunner) Notes() string {
	var b strings.Builder
	for i, owner := range sr.runners {
		var st stats
		for _, r := range owner {
			st.add(r.snapshot())
		}
		b.WriteString(st.describe(ownerName(sr.set, i)))
	}
	if b.Len() > 0 && sr.set.Len() > 1 {
		return fmt.Sprintf("gpu: %d owners, %s\n", sr.set.Len(), sr.set) + b.String()
	}
	return b.String()
}

// Close stops the searches waiting for a runner and closes every runner
// (each after its search in flight); the index's lists are freed on each
// owner after its last runner.
func (sr *setRunner) Close() error {
	sr.closeOnce.Do(func() {
		sr.sched.close()
		sr.closeErr = sr.closeRunners()
	})
	return sr.closeErr
}

func (sr *setRunner) closeRunners() error {
	var errs []error
	for _, owner := range sr.runners {
		for _, r := range owner {
			errs = append(errs, r.Close())
		}
	}
	return errors.Join(errs...)
}
