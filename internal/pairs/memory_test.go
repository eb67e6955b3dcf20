package pairs

import (
	"context"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"

	"github.com/xsect/xsect/internal/engine"
	"github.com/xsect/xsect/internal/settest"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
	"github.com/xsect/xsect/synth"
)

// liveHeap returns the bytes of the objects alive after a collection.
func liveHeap() int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// memoryShapes are inputs whose shapes stress different parts of the
// engines' memory: many items in one transaction (the prepared data and
// every per-item array), many items in few short transactions, a real
// sparse data set, and a dense generated one.
func memoryShapes(t *testing.T) []dataset {
	one := make([]uint32, 300000)
	for i := range one {
		one[i] = uint32(i)
	}
	short := sets.New()
	for i := range 20000 {
		short.Add([]uint32{uint32(2 * i), uint32(2*i + 1), uint32(2*i + 2)})
	}
	retail, err := setio.Load(settest.SharedData(t, "fimi", "retail.dat"))
	if err != nil {
		t.Fatal(err)
	}
	dense, err := synth.GenerateBernoulli(2000, 0.05, 2_000_000, 1)
	if err != nil {
		t.Fatal(err)
	}
	return []dataset{
		{"one transaction of 300000 items", sets.FromSets(one), []int{1}},
		{"20000 transactions of 3 items", short, []int{1}},
		{"retail", retail, []int{2}},
		{"dense", dense, []int{20}},
	}
}

// TestMemoryEstimates checks that the memory a plan predicts (its prepared
// data and its engine's estimate: Plan.Memory) bounds what each engine
// holds once it has set up and mined its first item or tile. The run
// stops there: the shapes have too many pairs to mine them all.
func TestMemoryEstimates(t *testing.T) {
	for _, ds := range memoryShapes(t) {
		for _, e := range Engines() {
			if e.Kind() != engine.CPU {
				continue
			}
			base := liveHeap()
			ctx, cancel := context.WithCancel(context.Background())
			var once sync.Once
			held := int64(-1)
			opt := Options{MinSupport: ds.support[0], Technique: e.Name(), Device: "cpu", Threads: 2, CountOnly: true,
				Progress: func(stage string, done, total int64) {
					if stage == "pairs" {
						once.Do(func() {
							held = liveHeap() - base
							cancel()
						})
					}
				}}
			p, err := NewPlan(ds.tx, opt)
			if err != nil {
				t.Fatalf("%s, %s: %v", ds.name, e.Name(), err)
			}
			if _, err := p.Run(ctx, func([]Pair) error { return nil }); err != nil && ctx.Err() == nil {
				t.Fatalf("%s, %s: %v", ds.name, e.Name(), err)
			}
			cancel()
			predicted := p.Memory()
			t.Logf("%s, %s: predicted %s, held %s", ds.name, e.Name(), engine.Bytes(predicted), engine.Bytes(held))
			if held > predicted+predicted/20+1<<20 {
				t.Errorf("%s, %s: held %s after its first item, predicted %s", ds.name, e.Name(), engine.Bytes(held), engine.Bytes(predicted))
			}
		}
	}
}
