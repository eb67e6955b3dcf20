//go:build !linux

package sysinfo

// memory is unknown here: Memory falls back to its default.
func memory() int64 { return 0 }
