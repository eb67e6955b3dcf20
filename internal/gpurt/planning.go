package gpurt

import (
	"sync/atomic"
	"time"
)

// What a GPU costs a process besides its work, for the planners' estimates.
const (
	// OpenCost is opening the first GPU before any work: the driver's
	// cuInit, its context and the prebuilt kernels (230-350, 105-150 and
	// 2-5 ms on the 2-H200 host, docs/GPU.md); each further GPU adds
	// ContextCost.
	OpenCost = 350 * time.Millisecond
	// CloseCost is what a process that opened a GPU pays at its exit
	// where it does not hand the teardown off (HandOffTeardown): the
	// contexts' teardown (0.2 to 0.25 s on the 2-H200 host).
	CloseCost = 200 * time.Millisecond
)

// OpenLeft is what a run on the default device still waits for it to
// open: OpenWait of OpenCost.
func OpenLeft() time.Duration { return OpenWait(OpenCost) }

// CloseLeft is what the exit of a process that opens a GPU adds to a run
// that opens one: ExitCost until a GPU is being opened, 0 after, when the
// process pays it whatever runs.
func CloseLeft() time.Duration {
	if DefaultStarted() {
		return 0
	}
	return ExitCost()
}

// StartupLeftOn is what a GPU run on the GPUs of list (nil: all) adds to
// the process besides its work, for a planner's estimate: the opening it
// still waits for and the teardown at exit that it brings (SetLeft plus
// CloseLeft). Take it before anything of the estimate opens a GPU.
func StartupLeftOn(list []int) time.Duration { return SetLeft(list) + CloseLeft() }

// infos caches the driver's description of the GPUs once it has answered:
// planners ask for every estimate, and each answer costs about a
// millisecond.
var infos atomic.Pointer[[]Info]

// KnownDevices returns the GPUs' descriptions once the driver has answered
// (Probed), without loading it before, and nil otherwise.
func KnownDevices() []Info {
	if p := infos.Load(); p != nil {
		return *p
	}
	if !Probed() {
		return nil
	}
	all, err := Devices()
	if err != nil || len(all) == 0 {
		return nil
	}
	infos.Store(&all)
	return all
}

// FirstInfo describes the first GPU for a planner: the driver's answer
// once it has given one (KnownDevices), and before that StandIn.
func FirstInfo() Info {
	if all := KnownDevices(); all != nil {
		return all[0]
	}
	return StandIn()
}

// StandIn is the device planners assume before the driver has described
// the first GPU: the reference device (ReferenceH100) with the smallest
// data-center GPU's memory, 16 GiB, so that work planned before the driver
// answers fits any.
func StandIn() Info {
	info := ReferenceH100()
	info.Name, info.Memory = "the first GPU (not opened yet)", 16<<30
	return info
}
