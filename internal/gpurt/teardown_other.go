//go:build !linux

package gpurt

import "time"

const handOffSupported = false

func holdUntilParentExits() {}

func lingerAfterTeardown(time.Duration) {}

func startTeardownHelper(time.Duration) error { return nil }
