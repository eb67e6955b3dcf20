package sets

import "fmt"

// Range is the half-open range [Lo, Hi) of ids, set ids or item ids, that
// one side of a tile of a pair workload covers: its rows or its columns.
// Hi == 0 means no upper bound, so the zero Range covers every id.
//
// A workload run on the tile Rows × Cols reports exactly the pairs (i, j)
// of the whole run with i in Rows and j in Cols: cutting the ids into
// ranges and running every tile (in a self-join, every tile with Rows
// before or equal to Cols) gives the whole run's pairs, each once.
type Range struct {
	// Lo is the first id of the range, Hi the id past its last (0: no
	// upper bound).
	Lo, Hi int
}

// All reports whether r covers every id: it is the zero Range.
func (r Range) All() bool { return r == Range{} }

// Contains reports whether id lies in r.
func (r Range) Contains(id int) bool { return id >= r.Lo && (r.Hi == 0 || id < r.Hi) }

// Clip returns the ids of [0, n) that r covers, as lo <= hi.
func (r Range) Clip(n int) (lo, hi int) {
	lo, hi = min(max(r.Lo, 0), n), n
	if r.Hi != 0 {
		hi = min(r.Hi, n)
	}
	return lo, max(lo, hi)
}

// Validate returns an error for a range that is not one: a negative Lo, or
// a bounded Hi below Lo. name names it in the error ("Rows").
func (r Range) Validate(name string) error {
	if r.Lo < 0 || r.Hi < 0 || r.Hi != 0 && r.Hi < r.Lo {
		return fmt.Errorf("%s %v: want 0 <= Lo <= Hi, or Hi 0 for no bound", name, r)
	}
	return nil
}

// String formats r as "[Lo, Hi)", or "[Lo, ∞)" without a bound.
func (r Range) String() string {
	if r.Hi == 0 {
		return fmt.Sprintf("[%d, ∞)", r.Lo)
	}
	return fmt.Sprintf("[%d, %d)", r.Lo, r.Hi)
}
