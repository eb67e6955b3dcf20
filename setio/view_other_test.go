//go:build purego || !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package setio

import (
	"bytes"

	"github.com/xsect/xsect/sets"
)

func viewOrRead(data []byte, name string) (*sets.Collection, error) {
	return readBinary(bytes.NewReader(data), name, int64(len(data)))
}
