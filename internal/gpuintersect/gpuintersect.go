// Package gpuintersect intersects two large sorted sets on an NVIDIA GPU,
// with the techniques of Bellas & Gounaris, "Exploiting GPUs for fast
// intersection of large sets" (section 3.1):
//
//   - "ip": Intersect Path. Cross diagonals of the merge grid split the
//     work between blocks (grid level) and again between threads (block
//     level); each thread merges a fixed number of steps in shared memory.
//   - "obs": Optimized Binary Search. Each element of the smaller set is
//     looked up in the larger one, the top levels of the search tree cached
//     in shared memory, 32 lookups per warp at a time.
//   - "ip-obs": IP's grid-level partition, then binary search within each
//     block's part, all in shared memory.
//   - "hi": hash-based. A table of the smaller set in device memory, probed
//     with the larger one.
//   - "ip-hi": IP's grid-level partition, then a hash table per block in
//     shared memory.
//   - "bitmap": both sets as bitmaps over their shared value range, ANDed
//     and counted word by word (the paper's BI-naive).
//   - "bitmap-dynamic": the smaller set as a bitmap, the larger one split
//     over the blocks, each testing its elements' bits (BI-dynamic).
//
// Inputs are strictly increasing []uint32, as for package intersect, and
// the results are identical to intersect.Count and intersect.Intersect.
// Count and Intersect take host slices and include the transfers; the
// Engine's Set methods work on sets already on the device, for callers
// that reuse them and for timing kernels apart from transfers. Problems
// larger than the device's free memory are split into value ranges that
// fit.
package gpuintersect

import (
	"embed"
	"fmt"
	"strings"

	"github.com/xsect/xsect/internal/gpurt"
)

// Method is one GPU intersection technique.
type Method int

// The methods, in the order Methods lists them.
const (
	IP Method = iota
	IPOBS
	OBS
	IPHI
	HI
	Bitmap
	BitmapDynamic
	numMethods
)

var methodNames = [numMethods]string{"ip", "ip-obs", "obs", "ip-hi", "hi", "bitmap", "bitmap-dynamic"}

// String returns the method's name, such as "ip-obs".
func (m Method) String() string {
	if m < 0 || m >= numMethods {
		return fmt.Sprintf("Method(%d)", int(m))
	}
	return methodNames[m]
}

// Methods returns every method.
func Methods() []Method {
	ms := make([]Method, numMethods)
	for i := range ms {
		ms[i] = Method(i)
	}
	return ms
}

// Auto is the method Count and Intersect use for "auto": the fastest in
// the benchmarks on every distribution measured (see docs/GPU.md).
const Auto = IP

// Lookup returns the method called name; "auto" is Auto.
func Lookup(name string) (Method, error) {
	if name == "auto" {
		return Auto, nil
	}
	for i, n := range methodNames {
		if n == name {
			return Method(i), nil
		}
	}
	return 0, fmt.Errorf("gpuintersect: unknown method %q (methods: auto, %s)", name, strings.Join(methodNames[:], ", "))
}

//go:embed kernels
var kernelFiles embed.FS

// source is the kernels' translation unit, with their prebuilt modules.
var source = gpurt.EmbeddedSource(kernelFiles, "kernels/sisi.cu")

// families are the kernel families loaded as modules of their own (ip
// comes in the engine's block shape, ipSource).
var families = []string{"ipobs", "iphi", "obs", "hi", "bm", "bmd"}

// familySource returns the source of one family's module: the helper
// kernels and the family's, not every method at once.
func familySource(family string) gpurt.Source {
	return source.With("-DONE_FAMILY", "-DFAMILY_"+family)
}

// ipSource returns the source of the ip family's module in block shape ip.
func ipSource(ip ipConfig) gpurt.Source {
	opts := []string{"-DIP_ONLY", "-DONE_FAMILY", "-DFAMILY_ip", fmt.Sprintf("-DTHREADS=%d", ip.threads), fmt.Sprintf("-DIP_ITEMS=%d", ip.items)}
	if ip.syncLoad {
		opts = append(opts, "-DIP_SYNC_LOAD")
	}
	return source.With(opts...)
}

// KernelSources returns the sources of the modules the engine loads in its
// default configuration, for internal/kernelgen to prebuild.
func KernelSources() []gpurt.Source {
	out := []gpurt.Source{ipSource(defaultIP)}
	for _, f := range families {
		out = append(out, familySource(f))
	}
	return out
}

var engines gpurt.PerDevice[*Engine]

// engineFor returns the shared engine of dev.
func engineFor(dev *gpurt.Device) (*Engine, error) {
	return engines.Open(dev, func() (*Engine, error) { return New(dev) })
}

// Count returns |a ∩ b| computed on dev with method m, transfers included.
// a and b are strictly increasing.
func Count(dev *gpurt.Device, a, b []uint32, m Method) (int, error) {
	e, err := engineFor(dev)
	if err != nil {
		return 0, err
	}
	return e.Count(a, b, m)
}

// Intersect appends a ∩ b, in increasing order, to dst and returns the
// extended slice, computed on dev with method m, transfers included.
func Intersect(dev *gpurt.Device, dst, a, b []uint32, m Method) ([]uint32, error) {
	e, err := engineFor(dev)
	if err != nil {
		return dst, err
	}
	return e.Intersect(dst, a, b, m)
}
