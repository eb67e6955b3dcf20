package gpurt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ParseGPUs parses a choice of GPUs as the --gpus flag writes it: "all"
// (or "") is every GPU of the host, and returns nil; a number N is the
// first N GPUs, 0 to N-1; a comma-separated list names ordinals ("1,3";
// "2," is GPU 2 alone). An ordinal listed twice gets two owners (see
// Owner): that gains nothing but exercises the scheduling of a Set on one
// GPU. The device count is not checked here (see CheckGPUs).
func ParseGPUs(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "all") {
		return nil, nil
	}
	if !strings.Contains(s, ",") {
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("gpus %q: want all, a number of GPUs or a comma-separated list of ordinals", s)
		}
		if n < 1 {
			return nil, fmt.Errorf("gpus %q: a number of GPUs is at least 1 (GPU 0 alone is \"0,\"; the cpu device needs none)", s)
		}
		if n > maxOwners {
			return nil, fmt.Errorf("gpus %q: at most %d", s, maxOwners)
		}
		return ordinals(n), nil
	}
	var list []int
	for i, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" && i > 0 && i == strings.Count(s, ",") {
			break // "2," names GPU 2 alone
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("gpus %q: %q is not a GPU ordinal (0, 1, ...)", s, f)
		}
		list = append(list, n)
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("gpus %q: no GPU listed", s)
	}
	if len(list) > maxOwners {
		return nil, fmt.Errorf("gpus %q: at most %d owners", s, maxOwners)
	}
	return list, nil
}

// maxOwners bounds the owners of a set: each is a goroutine on its own OS
// thread with its own streams and buffers.
const maxOwners = 256

// CheckGPUs checks a choice of GPUs from ParseGPUs against the host's
// devices and returns it with nil (all) resolved to every ordinal.
func CheckGPUs(list []int) ([]int, error) {
	infos, err := Devices()
	if err != nil {
		return nil, err
	}
	if list == nil {
		return ordinals(len(infos)), nil
	}
	for _, o := range list {
		if o >= len(infos) {
			return nil, fmt.Errorf("gpu: no GPU %d: the host has %s", o, countGPUs(len(infos)))
		}
	}
	return list, nil
}

// ordinals returns the first n GPU ordinals, 0 to n-1.
func ordinals(n int) []int {
	list := make([]int, n)
	for i := range list {
		list[i] = i
	}
	return list
}

func countGPUs(n int) string {
	if n == 1 {
		return "1 GPU (0)"
	}
	return fmt.Sprintf("%d GPUs (0 to %d)", n, n-1)
}

// GuessDevices returns how many distinct GPUs list (from ParseGPUs)
// selects, for estimates that must not load the driver: the distinct
// ordinals of a list; for nil, the driver's count once Available has
// answered, before that the NVIDIA device nodes /dev/nvidiaN (or the
// entries of CUDA_VISIBLE_DEVICES, where it is set), at least 1.
func GuessDevices(list []int) int {
	if list != nil {
		return distinct(list)
	}
	if Probed() {
		// The cached answer: planners ask for every estimate.
		return max(len(KnownDevices()), 1)
	}
	if v, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok {
		n := 0
		for _, f := range strings.Split(v, ",") {
			if strings.TrimSpace(f) != "" {
				n++
			}
		}
		return max(n, 1)
	}
	nodes, _ := filepath.Glob("/dev/nvidia*")
	n := 0
	for _, p := range nodes {
		if nodeName.MatchString(filepath.Base(p)) {
			n++
		}
	}
	return max(n, 1)
}

var nodeName = regexp.MustCompile(`^nvidia[0-9]+$`)

func distinct(list []int) int {
	s := slices.Clone(list)
	slices.Sort(s)
	return len(slices.Compact(s))
}

var owners struct {
	sync.Mutex
	m map[[2]int]func() (*Device, error)
}

var uploadLocks struct {
	sync.Mutex
	m map[int]*sync.Mutex
}

// UploadLock returns a lock that every owner of d's GPU shares. Engines
// hold it while they upload their inputs at the start of a run: the owners
// of one GPU share its link to the host, and one upload at a time lets
// the first owner start computing while the others upload, instead of all
// waiting for all.
func (d *Device) UploadLock() *sync.Mutex {
	uploadLocks.Lock()
	defer uploadLocks.Unlock()
	if uploadLocks.m == nil {
		uploadLocks.m = map[int]*sync.Mutex{}
	}
	mu := uploadLocks.m[d.info.Ordinal]
	if mu == nil {
		mu = new(sync.Mutex)
		uploadLocks.m[d.info.Ordinal] = mu
	}
	return mu
}

// Owner returns owner k of GPU ordinal, opened at first use and never
// closed. Owner 0 is the device Open returns (for ordinal 0, Default's).
// Owners 1 and up are more goroutines, each on its own locked OS thread
// with the same primary context current, its own streams, modules and
// cuBLAS handle: work they are handed runs on the one GPU concurrently.
// Several owners of one GPU are no faster than one, since they share its
// multiprocessors and memory; they let a Set's splitting, scheduling and
// merging run, and be measured, on a host with one GPU.
func Owner(ordinal, k int) (*Device, error) {
	if ordinal < 0 || k < 0 {
		return nil, fmt.Errorf("gpu: owner %d of GPU %d: negative", k, ordinal)
	}
	noteRequest(ordinal)
	owners.Lock()
	if owners.m == nil {
		owners.m = map[[2]int]func() (*Device, error){}
	}
	open := owners.m[[2]int{ordinal, k}]
	if open == nil {
		open = sync.OnceValues(func() (*Device, error) {
			switch {
			case ordinal == 0 && k == 0:
				return Default()
			case k == 0:
				return Open(ordinal)
			}
			if err := Available(); err != nil {
				return nil, err
			}
			return start(ordinal, k)
		})
		owners.m[[2]int{ordinal, k}] = open
	}
	owners.Unlock()
	return open()
}

// Set is the GPUs a run spreads its tiles over: one owner (a Device) per
// entry of the choice it was opened with, each with its goroutine on a
// locked OS thread. Run hands the tiles out.
type Set struct {
	owners  []*Device
	share   []int // owners of the same GPU as owner i, i included
	devices int   // distinct GPUs
}

var sets struct {
	sync.Mutex
	m map[string]func() (*Set, error)
}

// OpenSet opens the GPUs of a choice from ParseGPUs (nil: every GPU of the
// host), owner by owner: the first listing of an ordinal is its owner 0,
// the second its owner 1 (see Owner), and so on. The set is kept, with its
// devices, for the rest of the process: later calls with the same choice
// return it at once.
func OpenSet(list []int) (*Set, error) {
	key := "all"
	if list != nil {
		key = fmt.Sprint(list)
	}
	sets.Lock()
	if sets.m == nil {
		sets.m = map[string]func() (*Set, error){}
	}
	open := sets.m[key]
	if open == nil {
		list := slices.Clone(list)
		open = sync.OnceValues(func() (*Set, error) { return openSet(list) })
		sets.m[key] = open
	}
	sets.Unlock()
	return open()
}

func openSet(list []int) (*Set, error) {
	list, err := CheckGPUs(list)
	if err != nil {
		return nil, err
	}
	// One owner after another, in the choice's order: the driver creates
	// contexts one at a time whatever the callers do (docs/GPU.md, "How
	// many GPUs pay"), so the first GPU is ready first, for a run that
	// weighs it alone (Weigh), and the last no later.
	devs := make([]*Device, len(list))
	seen := map[int]int{}
	for i, o := range list {
		k := seen[o]
		seen[o]++
		if devs[i], err = Owner(o, k); err != nil {
			return nil, err
		}
	}
	return NewSet(devs...), nil
}

// NewSet makes a set of open devices (a caller's own, or Owner's). A
// device may appear once only.
func NewSet(devs ...*Device) *Set {
	s := &Set{owners: devs, share: make([]int, len(devs))}
	per := map[int]int{}
	for _, d := range devs {
		per[d.info.Ordinal]++
	}
	for i, d := range devs {
		s.share[i] = per[d.info.Ordinal]
	}
	s.devices = len(per)
	return s
}

// Len returns the number of owners.
func (s *Set) Len() int { return len(s.owners) }

// Owner returns owner i, in the order of the choice.
func (s *Set) Owner(i int) *Device { return s.owners[i] }

// Share returns the number of owners of owner i's GPU, i included: what
// each may plan in is that GPU's free memory divided by it.
func (s *Set) Share(i int) int { return s.share[i] }

// Devices returns the number of distinct GPUs of the set: the owners of
// one GPU count once.
func (s *Set) Devices() int { return s.devices }

// String describes the set, such as "GPUs 0 and 1 (NVIDIA H100 80GB
// HBM3)" or "GPU 0 (3 owners)".
func (s *Set) String() string {
	var gpus []Info
	var owners []int
	done := map[int]bool{}
	for i, d := range s.owners {
		if !done[d.info.Ordinal] {
			done[d.info.Ordinal] = true
			gpus, owners = append(gpus, d.info), append(owners, s.share[i])
		}
	}
	return describe(gpus, owners)
}

// describe writes GPUs as Set.String does: their ordinals, each with its
// owners where owners (nil: one each) gives it several, then every model
// once, such as "GPUs 0, 1, NVIDIA H200" or "GPU 0 (3 owners), NVIDIA
// H100 80GB HBM3".
func describe(gpus []Info, owners []int) string {
	var parts, names []string
	for i, g := range gpus {
		p := strconv.Itoa(g.Ordinal)
		if owners != nil && owners[i] > 1 {
			p += fmt.Sprintf(" (%d owners)", owners[i])
		}
		parts = append(parts, p)
		if !slices.Contains(names, g.Name) {
			names = append(names, g.Name)
		}
	}
	word := "GPU "
	if len(parts) > 1 {
		word = "GPUs "
	}
	return word + strings.Join(parts, ", ") + ", " + strings.Join(names, ", ")
}

// FreeMemory returns the least memory an owner of the set may plan in:
// over the owners, the free memory of its GPU divided by the owners
// sharing it. Runs plan once for every owner with it.
func (s *Set) FreeMemory() (int64, error) {
	least := int64(-1)
	for i, d := range s.owners {
		free, _, err := d.FreeMemory()
		if err != nil {
			return 0, err
		}
		f := int64(free) / int64(s.share[i])
		if least < 0 || f < least {
			least = f
		}
	}
	return max(least, 0), nil
}

// Worker is one owner's view of a Run: its device and the shared queue of
// tiles. Its methods are for the goroutine Run calls work on.
type Worker struct {
	index, share int
	owners       int
	dev          *Device
	q            *queue
	tiles        int
}

// Index returns the owner's position in the set.
func (w *Worker) Index() int { return w.index }

// Device returns the owner's device.
func (w *Worker) Device() *Device { return w.dev }

// Share returns the owners of the worker's GPU in the set (see
// Set.Share).
func (w *Worker) Share() int { return w.share }

// Owners returns the number of owners taking part in the run.
func (w *Worker) Owners() int { return w.owners }

// Next takes the next tile of the queue, the lowest index not yet taken
// by any owner, or returns false when none is left or the run stops.
func (w *Worker) Next() (int, bool) {
	i, ok := w.q.take()
	if ok {
		w.tiles++
	}
	return i, ok
}

// Peek returns the index the next Next of any owner would take, or -1:
// a hint for prefetching, not a promise.
func (w *Worker) Peek() int {
	i := w.q.next.Load()
	if i >= w.q.n || w.q.stopped.Load() {
		return -1
	}
	return int(i)
}

// queue hands out 0 .. n-1 in order, each once.
type queue struct {
	n       int64
	next    atomic.Int64
	stopped atomic.Bool
}

func (q *queue) take() (int, bool) {
	if q.stopped.Load() {
		return 0, false
	}
	i := q.next.Add(1) - 1
	if i >= q.n {
		return 0, false
	}
	return int(i), true
}

// Usage is what one owner did in a Run.
type Usage struct {
	Owner   int // position in the set
	Ordinal int // the GPU
	Tiles   int // tiles it took
	Busy    time.Duration
}

// Report is a Run's account, owner by owner.
type Report struct {
	Owners []Usage
	Wall   time.Duration
}

// String writes the report in one line, such as "2 owners, 40 tiles in
// 1.200 s: GPU 0 21 tiles busy 1.190 s, GPU 1 19 tiles busy 1.200 s".
func (r Report) String() string { return r.Describe("tiles") }

// Describe is String with another word than "tiles" for the units of work.
func (r Report) Describe(unit string) string {
	tiles := 0
	for _, u := range r.Owners {
		tiles += u.Tiles
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d owner", len(r.Owners))
	if len(r.Owners) != 1 {
		b.WriteString("s")
	}
	fmt.Fprintf(&b, ", %d %s in %.3f s:", tiles, unit, r.Wall.Seconds())
	seen := map[int]int{}
	for i, u := range r.Owners {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " GPU %d", u.Ordinal)
		if k := seen[u.Ordinal]; k > 0 || countOrdinal(r.Owners, u.Ordinal) > 1 {
			fmt.Fprintf(&b, "#%d", k)
		}
		seen[u.Ordinal]++
		fmt.Fprintf(&b, " %d %s busy %.3f s", u.Tiles, unit, u.Busy.Seconds())
	}
	return b.String()
}

func countOrdinal(us []Usage, o int) int {
	n := 0
	for _, u := range us {
		if u.Ordinal == o {
			n++
		}
	}
	return n
}

// Run spreads tiles 0 .. tiles-1 over the set: it calls work once per
// owner, all at once, each on a goroutine of its own, and work takes
// tiles with Worker.Next until none is left, so that an owner that
// finishes early takes the next tile (work runs its device code through
// Worker.Device's Do, as long as it wants: typically one Do for the whole
// loop). With fewer tiles than owners, only as many owners run. When work
// fails on one owner, the others' Next returns false and their ctx is
// cancelled: they stop after their current tile, and Run returns that
// first error once all have returned. A panic in work is re-raised in
// Run's caller after the others have stopped. Merging is the caller's:
// work delivers its results to something safe for concurrent use.
func (s *Set) Run(ctx context.Context, tiles int, work func(ctx context.Context, w *Worker) error) (Report, error) {
	start := time.Now()
	n := min(len(s.owners), tiles)
	rep := Report{Owners: make([]Usage, n)}
	if n == 0 {
		return rep, ctx.Err()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	q := &queue{n: int64(tiles)}
	var (
		mu       sync.Mutex
		first    error
		panicked bool
		panicVal any
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
		q.stopped.Store(true)
		cancel()
	}
	for i := range n {
		w := &Worker{index: i, share: s.share[i], owners: n, dev: s.owners[i], q: q}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			defer func() {
				rep.Owners[i] = Usage{Owner: i, Ordinal: w.dev.Info().Ordinal, Tiles: w.tiles, Busy: time.Since(t0)}
				if v := recover(); v != nil {
					mu.Lock()
					if !panicked {
						panicked, panicVal = true, v
					}
					mu.Unlock()
					fail(fmt.Errorf("gpu: owner %d panicked: %v", i, v))
				}
			}()
			if err := work(ctx, w); err != nil {
				fail(err)
			}
		}()
	}
	wg.Wait()
	rep.Wall = time.Since(start)
	if panicked {
		panic(panicVal)
	}
	return rep, first
}

// LockOwners locks mu(i) for every owner i of the set, in the order of
// their GPUs and owner numbers whatever the set's order, so that runs on
// sets that list the same owners in other orders never wait for each
// other in a circle, and returns the function that unlocks them all.
// Engines hold their per-owner state's lock for a run with it.
func (s *Set) LockOwners(mu func(i int) *sync.Mutex) (unlock func()) {
	order := make([]int, len(s.owners))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int {
		a, b := s.owners[x], s.owners[y]
		if c := a.info.Ordinal - b.info.Ordinal; c != 0 {
			return c
		}
		return a.owner - b.owner
	})
	for _, i := range order {
		mu(i).Lock()
	}
	return func() {
		for _, i := range slices.Backward(order) {
			mu(i).Unlock()
		}
	}
}

// OwnerMemory runs prepare (nil: nothing) on every owner in turn, on the
// owner's goroutine, and then reads its GPU's free memory; it returns
// what each owner may plan in: that free memory divided by the owners of
// the set sharing the GPU (see Share). Engines plan a run once for every
// owner, in the least of them. It stops at the first error.
func (s *Set) OwnerMemory(prepare func(i int, c *Ctx) error) ([]int64, error) {
	frees := make([]int64, len(s.owners))
	for i, d := range s.owners {
		err := d.Do(func(c *Ctx) error {
			if prepare != nil {
				if err := prepare(i, c); err != nil {
					return err
				}
			}
			free, _, err := c.MemInfo()
			frees[i] = int64(free) / int64(s.share[i])
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return frees, nil
}
