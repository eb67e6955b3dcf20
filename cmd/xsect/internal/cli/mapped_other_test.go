//go:build purego || !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package cli

// indexMapped says whether this build maps index files (internal/invindex's
// open_mmap.go) rather than reading them into memory.
const indexMapped = false
