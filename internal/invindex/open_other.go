//go:build purego || !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package invindex

// openFile reads the file into memory: this build maps nothing.
func openFile(path string) (*Index, error) { return readFile(path) }
