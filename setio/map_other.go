//go:build purego || !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package setio

import "github.com/xsect/xsect/sets"

func mapFile(path string) (*sets.Collection, func() error, error) { return loadNoClose(path) }
