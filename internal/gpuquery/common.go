package gpuquery

import (
	"time"

	"github.com/xsect/xsect/internal/gpurt"
)

// deviceTerm is the kernels' Term, byte for byte: a list and its bitmap.
type deviceTerm struct {
	off  uint64
	len  uint32
	slot int32
}

// bucketGroup is each bucket's group size (kernels/batch.cu: jobs of up
// to 64, 256, 1024, 4096 and splitLen elements).
var bucketGroup = [...]int{32, 64, 128, 256, 512}

const (
	numBuckets = len(bucketGroup)
	// splitLen is the longest slice of a shortest list one job takes
	// (SPLIT): a longer list is split into jobs that run side by side, so
	// that one huge query does not hold the device alone at the end of a
	// batch.
	splitLen = 8192
	// maxQueries bounds the queries of one device batch.
	maxQueries = 1 << 16
	// batchBytes is the device memory of a batch's buffers at most: jobs,
	// header, slices, terms, and the ids kept.
	batchBytes = jobBytes*numBuckets*(2*maxQueries+1024) + 4*qArrays*maxQueries + 12*(2*maxQueries+1024) + 8*maxScratch
)

// stats accumulate how the batches ran, for Notes.
type stats struct {
	batches, queries, host int
	timed                  int // batches whose kernels were timed
	upBytes, downBytes     int64
	fallback               bool                       // host buffers from cuMemAllocHost
	phases                 [][numPhases]time.Duration // each batch's, for the medians
	kernels                [][numBuckets + 2]time.Duration
}

// The phases of a batch that Notes times: on the host, sizing and packing
// the queries into registered memory ("place"), waiting for the device's
// goroutine ("handoff"), queueing the batch's copies and kernels there
// ("launch"), waiting there for the batch to end on the device
// ("wait": the device is the bottleneck where it is long) and reading the
// answers back into the results ("finish"); on the device (events), the
// upload, the kernels and the download.
const (
	phPlace = iota
	phHandoff
	phLaunch
	phWait
	phUpload
	phKernels
	phDownload
	phFinish
	numPhases
)

// maxPhases bounds the batches whose phases are kept: the latest ones.
const maxPhases = 1024

var phaseNames = [numPhases]string{"place", "handoff", "launch", "wait", "upload", "kernels", "download", "finish"}

func bytesString(n int64) string { return gpurt.FormatBytes(uint64(n)) }
