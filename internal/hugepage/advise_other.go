//go:build !linux

package hugepage

func enabled() bool { return false }

func advise(p, n uintptr) {}
