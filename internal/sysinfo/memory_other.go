//go:build !linux

package sysinfo

// memory is unknown here: Memory falls back to its default.
func memory() int64 { return 0 }

// The limits of the process are not read here.
func addressSpaceLeft() int64 { return -1 }
func cgroupMemory() int64     { return -1 }
