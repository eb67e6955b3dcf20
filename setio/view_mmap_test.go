//go:build !purego && (linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package setio

import "github.com/xsect/xsect/sets"

func viewOrRead(data []byte, name string) (*sets.Collection, error) { return viewBinary(data, name) }
