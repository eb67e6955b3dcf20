//go:build !linux

package hugepage

const enabled = false

func advise(p, n uintptr) {}
