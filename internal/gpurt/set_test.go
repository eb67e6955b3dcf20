package gpurt

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xsect/xsect/internal/gpurt/gputest"
)

func TestParseGPUs(t *testing.T) {
	good := []struct {
		in   string
		want []int
	}{
		{"", nil},
		{"all", nil},
		{" ALL ", nil},
		{"1", []int{0}},
		{"3", []int{0, 1, 2}},
		{"2,", []int{2}},
		{"0,", []int{0}},
		{"1,3", []int{1, 3}},
		{" 1 , 3 ", []int{1, 3}},
		{"0,0,0", []int{0, 0, 0}},
		{"3,1,3", []int{3, 1, 3}},
	}
	for _, c := range good {
		got, err := ParseGPUs(c.in)
		if err != nil || !slices.Equal(got, c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("ParseGPUs(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"0", "-1", "x", "1.5", "1,,2", ",", ",1", "1,-2", "1,a", "all,1", "257", "1e3", "0x2",
		strings.Repeat("0,", 300)} {
		if got, err := ParseGPUs(in); err == nil {
			t.Errorf("ParseGPUs(%q) = %v, want an error", in, got)
		} else if !strings.Contains(err.Error(), "gpus") {
			t.Errorf("ParseGPUs(%q): error %q does not name the flag", in, err)
		}
	}
}

func FuzzParseGPUs(f *testing.F) {
	for _, s := range []string{"all", "2", "0,1", "2,", "0,0", "-1", ",,", "9999999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		list, err := ParseGPUs(s)
		if err != nil {
			return
		}
		if list == nil {
			if v := strings.TrimSpace(s); v != "" && !strings.EqualFold(v, "all") {
				t.Fatalf("ParseGPUs(%q) = all", s)
			}
			return
		}
		if len(list) == 0 || len(list) > maxOwners {
			t.Fatalf("ParseGPUs(%q) = %d ordinals", s, len(list))
		}
		for _, o := range list {
			if o < 0 {
				t.Fatalf("ParseGPUs(%q) = %v: negative ordinal", s, list)
			}
		}
	})
}

// fakeSet is a set of devices that are never opened, for the scheduler.
func fakeSet(ordinals ...int) *Set {
	devs := make([]*Device, len(ordinals))
	for i, o := range ordinals {
		devs[i] = &Device{info: Info{Ordinal: o, Name: fmt.Sprintf("fake %d", o)}}
	}
	return NewSet(devs...)
}

func TestSetShares(t *testing.T) {
	s := fakeSet(0, 1, 0, 0)
	if s.Len() != 4 || s.Devices() != 2 {
		t.Fatalf("Len %d, Devices %d; want 4, 2", s.Len(), s.Devices())
	}
	for i, want := range []int{3, 1, 3, 3} {
		if s.Share(i) != want {
			t.Errorf("Share(%d) = %d, want %d", i, s.Share(i), want)
		}
	}
	if got := s.String(); got != "GPUs 0 (3 owners), 1, fake 0, fake 1" {
		t.Errorf("String() = %q", got)
	}
	if got := fakeSet(2).String(); got != "GPU 2, fake 2" {
		t.Errorf("String() = %q", got)
	}
}

// TestRunTakesEveryTileOnce runs many tiles on sets of 1 to 8 owners,
// with random work per tile: every tile is taken once, by one owner,
// each owner's tiles increase, and the report adds up.
func TestRunTakesEveryTileOnce(t *testing.T) {
	for _, owners := range []int{1, 2, 3, 8} {
		for _, tiles := range []int{0, 1, 2, 7, 100, 1000} {
			ords := make([]int, owners)
			for i := range ords {
				ords[i] = i % 2
			}
			s := fakeSet(ords...)
			taken := make([]atomic.Int32, tiles)
			var mu sync.Mutex
			byOwner := map[int][]int{}
			rep, err := s.Run(context.Background(), tiles, func(ctx context.Context, w *Worker) error {
				if w.Device() != s.Owner(w.Index()) || w.Share() != s.Share(w.Index()) || w.Owners() != min(owners, tiles) {
					return fmt.Errorf("worker %d: device, share or owners wrong", w.Index())
				}
				r := rand.New(rand.NewPCG(uint64(w.Index()), 1))
				var mine []int
				for {
					i, ok := w.Next()
					if !ok {
						break
					}
					taken[i].Add(1)
					mine = append(mine, i)
					for range r.IntN(3) {
						runtime.Gosched()
					}
				}
				mu.Lock()
				byOwner[w.Index()] = mine
				mu.Unlock()
				return nil
			})
			if err != nil {
				t.Fatalf("%d owners, %d tiles: %v", owners, tiles, err)
			}
			for i := range taken {
				if n := taken[i].Load(); n != 1 {
					t.Fatalf("%d owners: tile %d taken %d times", owners, i, n)
				}
			}
			if len(rep.Owners) != min(owners, tiles) {
				t.Fatalf("%d owners, %d tiles: report of %d owners", owners, tiles, len(rep.Owners))
			}
			sum := 0
			for _, u := range rep.Owners {
				sum += u.Tiles
				mine := byOwner[u.Owner]
				if len(mine) != u.Tiles || !slices.IsSorted(mine) {
					t.Fatalf("owner %d: report says %d tiles, took %v", u.Owner, u.Tiles, mine)
				}
				if u.Ordinal != ords[u.Owner] {
					t.Fatalf("owner %d: ordinal %d, want %d", u.Owner, u.Ordinal, ords[u.Owner])
				}
			}
			if sum != tiles {
				t.Fatalf("%d owners: report counts %d tiles of %d", owners, sum, tiles)
			}
		}
	}
}

// TestRunDynamic holds owner 0 on its first tile until the others have
// emptied the queue: the owners that are free take the next tiles.
func TestRunDynamic(t *testing.T) {
	s := fakeSet(0, 0, 0)
	const tiles = 50
	var done atomic.Int32
	holding := make(chan struct{})
	drained := make(chan struct{})
	rep, err := s.Run(context.Background(), tiles, func(ctx context.Context, w *Worker) error {
		if w.Index() == 0 {
			_, ok := w.Next()
			close(holding)
			if !ok {
				return errors.New("owner 0 got no tile")
			}
			<-drained
			if _, ok := w.Next(); ok {
				return errors.New("owner 0 got a tile after the queue was drained")
			}
			return nil
		}
		<-holding
		for {
			if _, ok := w.Next(); !ok {
				break
			}
		}
		if done.Add(1) == 2 {
			close(drained)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Owners[0].Tiles != 1 || rep.Owners[1].Tiles+rep.Owners[2].Tiles != tiles-1 {
		t.Fatalf("tiles by owner: %+v", rep.Owners)
	}
}

// TestRunStopsOnError fails owner 1 on its third tile: the others take
// no tile once their context is cancelled, and Run returns that error,
// not the others' cancellations.
func TestRunStopsOnError(t *testing.T) {
	s := fakeSet(0, 0, 1, 1)
	boom := errors.New("boom")
	const tiles = 1 << 20
	var late atomic.Int64
	_, err := s.Run(context.Background(), tiles, func(ctx context.Context, w *Worker) error {
		n := 0
		for {
			cancelled := ctx.Err() != nil
			_, ok := w.Next()
			if !ok {
				break
			}
			if cancelled {
				late.Add(1)
			}
			n++
			if w.Index() == 1 && n == 3 {
				return boom
			}
			time.Sleep(10 * time.Microsecond)
		}
		if ctx.Err() == nil {
			return errors.New("queue ended without the context being cancelled")
		}
		return ctx.Err()
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want boom", err)
	}
	if n := late.Load(); n != 0 {
		t.Fatalf("%d tiles taken after the context was cancelled", n)
	}
}

// TestRunPanics re-raises a worker's panic in Run's caller, after the
// other owners have returned.
func TestRunPanics(t *testing.T) {
	s := fakeSet(0, 0)
	var returned atomic.Int32
	defer func() {
		v := recover()
		if v != "kaboom" {
			t.Fatalf("recovered %v, want kaboom", v)
		}
		if returned.Load() != 1 {
			t.Fatalf("the other owner had not returned when the panic was re-raised")
		}
	}()
	s.Run(context.Background(), 100, func(ctx context.Context, w *Worker) error {
		if w.Index() == 0 {
			w.Next()
			panic("kaboom")
		}
		defer returned.Add(1)
		for {
			if _, ok := w.Next(); !ok {
				return nil
			}
			<-ctx.Done()
		}
	})
	t.Fatal("Run returned")
}

// TestRunCancelled returns the caller's cancellation.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := fakeSet(0, 1).Run(ctx, 10, func(ctx context.Context, w *Worker) error {
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			if _, ok := w.Next(); !ok {
				return nil
			}
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
}

func TestReportString(t *testing.T) {
	r := Report{Owners: []Usage{{0, 0, 3, time.Second}, {1, 0, 2, 2 * time.Second}, {2, 1, 5, time.Second}}, Wall: 2 * time.Second}
	want := "3 owners, 10 batches in 2.000 s: GPU 0#0 3 batches busy 1.000 s, GPU 0#1 2 batches busy 2.000 s, GPU 1 5 batches busy 1.000 s"
	if got := r.Describe("batches"); got != want {
		t.Errorf("Describe = %q\nwant       %q", got, want)
	}
}

// TestOpenSetGPU opens three owners of GPU 0 and one of every GPU: the
// owners are distinct devices with their own threads, owner 0 is the
// default device, and work handed to them runs at once.
func TestOpenSetGPU(t *testing.T) {
	gputest.Need(t, Available())
	s, err := OpenSet([]int{0, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 3 || s.Devices() != 1 || s.Share(0) != 3 {
		t.Fatalf("OpenSet(0,0,0): %d owners, %d devices, share %d", s.Len(), s.Devices(), s.Share(0))
	}
	def, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if s.Owner(0) != def {
		t.Fatal("owner 0 of GPU 0 is not the default device")
	}
	for i := range 3 {
		if s.Owner(i).Owner() != i {
			t.Errorf("owner %d says it is owner %d", i, s.Owner(i).Owner())
		}
	}
	if again, err := OpenSet([]int{0, 0, 0}); err != nil || again != s {
		t.Fatalf("OpenSet again: %p, %v; want the same set %p", again, err, s)
	}
	// All three hold their Do at once: none waits for another.
	var wg sync.WaitGroup
	inside := make(chan struct{}, 3)
	release := make(chan struct{})
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Owner(i).Do(func(c *Ctx) error {
				inside <- struct{}{}
				<-release
				_, _, err := c.MemInfo()
				return err
			})
		}()
	}
	for range 3 {
		select {
		case <-inside:
		case <-time.After(time.Minute):
			t.Fatal("the owners of one GPU do not run work at once")
		}
	}
	close(release)
	wg.Wait()
	all, err := OpenSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	infos, _ := Devices()
	if all.Len() != len(infos) || all.Devices() != len(infos) {
		t.Fatalf("OpenSet(all): %d owners on %d GPUs, the host has %d", all.Len(), all.Devices(), len(infos))
	}
	if _, err := OpenSet([]int{len(infos)}); err == nil || !strings.Contains(err.Error(), "no GPU") {
		t.Fatalf("OpenSet of GPU %d: %v", len(infos), err)
	}
	free, err := s.FreeMemory()
	if err != nil || free <= 0 || free > int64(infos[0].Memory)/3 {
		t.Fatalf("FreeMemory of 3 owners: %d, %v (the GPU has %d)", free, err, infos[0].Memory)
	}
}

func TestUploadLock(t *testing.T) {
	s := fakeSet(0, 1, 0)
	if s.Owner(0).UploadLock() != s.Owner(2).UploadLock() {
		t.Error("two owners of GPU 0 have different upload locks")
	}
	if s.Owner(0).UploadLock() == s.Owner(1).UploadLock() {
		t.Error("GPUs 0 and 1 share an upload lock")
	}
}

// TestLockOwners checks that a set's owners are locked by GPU and owner
// number whatever the set's order, and all unlocked after.
func TestLockOwners(t *testing.T) {
	s := fakeSet(1, 0, 0, 2, 1)
	for i, k := range []int{0, 0, 1, 0, 1} {
		s.owners[i].owner = k
	}
	mus := make([]sync.Mutex, s.Len())
	var order []int
	unlock := s.LockOwners(func(i int) *sync.Mutex {
		if mus[i].TryLock() {
			mus[i].Unlock()
			order = append(order, i)
		}
		return &mus[i]
	})
	if want := []int{1, 2, 0, 4, 3}; !slices.Equal(order, want) {
		t.Fatalf("locked in the order %v, want %v", order, want)
	}
	for i := range mus {
		if mus[i].TryLock() {
			t.Fatalf("owner %d not locked", i)
		}
	}
	unlock()
	for i := range mus {
		if !mus[i].TryLock() {
			t.Fatalf("owner %d still locked", i)
		}
	}
}

// TestOpenSharedParallel opens fake GPUs through Open's sharing: two
// GPUs start at once (the first waits for the second to begin, which
// deadlocks if Open starts them one after another), callers of the same
// GPU share its one start, and a failed start is tried again by the next.
func TestOpenSharedParallel(t *testing.T) {
	const a, b = 1000, 1001 // ordinals no test opens for real
	var mu sync.Mutex
	starts := map[int]int{}
	bBegan := make(chan struct{})
	startDevice := func(ordinal, owner int) (*Device, error) {
		mu.Lock()
		starts[ordinal]++
		n := starts[ordinal]
		mu.Unlock()
		switch ordinal {
		case a:
			select {
			case <-bBegan:
			case <-time.After(10 * time.Second):
				return nil, fmt.Errorf("GPU %d started only after GPU %d", b, a)
			}
		case b:
			if n == 1 {
				close(bBegan)
			}
			time.Sleep(20 * time.Millisecond) // others of b wait meanwhile
			if n == 1 {
				return nil, errors.New("first start fails")
			}
		}
		return &Device{info: Info{Ordinal: ordinal}, refs: 1}, nil
	}
	t.Cleanup(func() {
		openMu.Lock()
		delete(opened, a)
		delete(opened, b)
		openMu.Unlock()
	})
	var wg sync.WaitGroup
	devs := make([]*Device, 4)
	errs := make([]error, 4)
	for i, o := range []int{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			devs[i], errs[i] = openShared(o, startDevice)
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("GPU %d: %v, %v", a, errs[0], errs[2])
	}
	if devs[0] != devs[2] || starts[a] != 1 || devs[0].refs != 2 {
		t.Errorf("GPU %d: devices %p %p, %d starts, %d refs; want one device, one start, 2 refs", a, devs[0], devs[2], starts[a], devs[0].refs)
	}
	// Of b's two callers, one ran the failing start; the other either
	// waited for it and started again, or came after it and did.
	ok := 0
	for _, i := range []int{1, 3} {
		if errs[i] == nil {
			ok++
		}
	}
	if ok != 1 || starts[b] != 2 {
		t.Errorf("GPU %d: %d callers opened it in %d starts (%v, %v); want 1 in 2", b, ok, starts[b], errs[1], errs[3])
	}
	d, err := openShared(b, startDevice)
	if err != nil || starts[b] != 2 || d.refs != 2 {
		t.Errorf("GPU %d opened again: %v, %d starts, %d refs; want the open one, 2 refs", b, err, starts[b], d.refs)
	}
}
