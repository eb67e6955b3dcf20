//go:build race

package cli

// raceDetector says that the tests run under the race detector, whose
// shadow memory makes address-space limits and memory peaks meaningless.
const raceDetector = true
