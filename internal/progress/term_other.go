//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package progress

// isTerminal is false where xsect does not know how to ask: no progress
// bars there.
func isTerminal(fd uintptr) bool { return false }
