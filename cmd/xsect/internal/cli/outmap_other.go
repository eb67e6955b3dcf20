//go:build !linux

package cli

import "os"

// mappedWriters is 1 where outputs are not mapped: write(2) alone.
const mappedWriters = 1

// mapReserve is 0: nothing is reserved ahead.
const mapReserve = 0

// mappedOutput is Linux's (outmap_linux.go): here no output is mapped.
type mappedOutput struct{}

func newMappedOutput(*os.File, int64, string) *mappedOutput { return nil }

func (*mappedOutput) write([]byte) error { panic("cli: no mapped output on this system") }
func (*mappedOutput) close() error       { return nil }
