//go:build !amd64 || purego

package simjoin

// walkPositional: see walk.go.
func walkPositional(ent []entry, stop uint32, cnt []uint32, cands []cand, need, touched []uint32, aq, q uint32) (walked, added int) {
	return walkPositionalGeneric(ent, stop, cnt, cands, need, touched, aq, q)
}
