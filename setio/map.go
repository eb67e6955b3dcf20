package setio

import "github.com/xsect/xsect/sets"

// Map returns the collection in the file at path and a function that
// releases it. A binary file is mapped into memory read-only and used in
// place, after its header, checksum and invariants have been verified (one
// pass over the data, no copy): the collection's slices point into the
// mapping, so they must not be written (a write faults) nor used after
// close. Other files (text, or any file where mapping is not supported: the
// purego build, big-endian machines, systems without mmap) are loaded with
// Load and close does nothing; treat the result as read-only all the same.
func Map(path string) (c *sets.Collection, close func() error, err error) {
	return mapFile(path)
}

func loadNoClose(path string) (*sets.Collection, func() error, error) {
	c, err := Load(path)
	if err != nil {
		return nil, nil, err
	}
	return c, func() error { return nil }, nil
}
