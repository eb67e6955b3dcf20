//go:build !linux && !darwin

package sysinfo

// readCaches knows no source here: CPUCaches returns defaultCaches.
func readCaches() (Caches, bool) { return Caches{}, false }
