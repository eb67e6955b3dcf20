//go:build !linux

package cli

import "errors"

const (
	limitsSupported = false
	rlimitAS        = 0
	rlimitFSize     = 0
)

func setLimit(resource int, n uint64) error {
	return errors.New("resource limits are not supported here")
}

// peakRSS is not read here.
func peakRSS() int64 { return 0 }
