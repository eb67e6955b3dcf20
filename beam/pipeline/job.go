// Package pipeline runs xsect's pair workloads (all-pairs counts,
// containment joins, frequent pairs, similarity joins) as Apache Beam
// pipelines: the launcher reads the collection, cuts the pair space into
// tiles from its statistics (Plan), and the pipeline (Build) hands the
// tiles to the runner's workers, each of which reads the collection from
// its path, runs xsect's planner and engine on its tile (RunTile) on the
// device it has, and writes the tile's lines, exactly as the xsect command
// prints them, to a file of its own: PREFIX-00003-of-00010.
//
// A tile's output depends on nothing but the collection and the tile, so a
// tile that the runner retries writes the same lines again, under the same
// name (written to a temporary name, then renamed).
package pipeline

import (
	"errors"
	"fmt"

	"github.com/xsect/xsect/allpairs"
	"github.com/xsect/xsect/gpu"
	"github.com/xsect/xsect/pairs"
	"github.com/xsect/xsect/simjoin"
)

// Workloads are the workloads a Job may name.
var Workloads = []string{"allpairs", "containment", "pairs", "simjoin"}

// Job is what a pipeline computes, in the terms of the xsect command's
// flags. It travels to the workers inside the pipeline (as JSON), so it
// holds only plain values.
type Job struct {
	// Workload is one of Workloads.
	Workload string
	// Input is the collection's path (a local file, or a URL of a Beam
	// filesystem: gs://, s3://); With the second collection of an R × S
	// join, or "" for a self-join. Every worker reads them.
	Input, With string
	// InputSum and WithSum are the collections' checksums as the
	// launcher read them (Fingerprint): a worker that reads something
	// else fails rather than mix two inputs. 0 skips the check.
	InputSum, WithSum uint64
	// Output is the prefix of the output files' names.
	Output string

	// MinOverlap is allpairs' --min-overlap; MinDegree containment's
	// --min-degree (a ratio: "1", "0.8", "2/3").
	MinOverlap int
	MinDegree  string
	// Largest is --largest (allpairs, containment).
	Largest int
	// MinSupport is pairs' --min-support as an absolute count (Plan
	// resolves a fraction against the number of transactions).
	MinSupport int
	// Measure, Threshold and Distinct are simjoin's flags.
	Measure, Threshold string
	Distinct           bool

	// Technique is --technique (--engine and --algorithm are its old
	// names); Device --device; GPUs --gpus ("all", N or a list of
	// ordinals; gpu.ParseGPUs); Threads --threads; MemoryMiB --memory, of
	// each worker (0: half of the worker's memory, or of its GOMEMLIMIT,
	// address-space or cgroup limit when lower).
	Technique string
	Device    string
	GPUs      string
	Threads   int
	MemoryMiB int64
	// CountOnly writes only the number of pairs, in one file; Sort sorts
	// the lines of each file by i, then j.
	CountOnly, Sort bool
	// Explain logs each tile's plan on its worker.
	Explain bool
}

// Tile is one tile of a job: the pairs (i, j) with i in [RowLo, RowHi) and
// j in [ColLo, ColHi) (set ids, or item ids for pairs; a Hi of 0 has no
// bound).
type Tile struct {
	// Index is the tile's number, from 0, and Tiles the number of tiles of
	// the job; both name the tile's file (FileName).
	Index, Tiles               int
	RowLo, RowHi, ColLo, ColHi int
}

// errBadJob marks a job that cannot run as given: bad usage.
var errBadJob = errors.New("bad job")

// IsBadJob reports whether err is a job's or an input's fault (the xsect
// command's exit status 2) rather than a failure while running.
func IsBadJob(err error) bool { return errors.Is(err, errBadJob) }

func badJob(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadJob, fmt.Sprintf(format, args...))
}

// Check validates the job's parameters, without reading anything.
func (j *Job) Check() error {
	switch j.Workload {
	case "allpairs":
		if j.MinOverlap < 0 {
			return badJob("--min-overlap %d is negative", j.MinOverlap)
		}
	case "containment":
		if _, err := allpairs.ParseRatio(j.MinDegree); err != nil {
			return badJob("--min-degree: %v", err)
		}
	case "pairs":
		if j.With != "" {
			return badJob("pairs mines one collection of transactions: no --with")
		}
	case "simjoin":
		if _, err := j.simThreshold(); err != nil {
			return err
		}
	default:
		return badJob("unknown workload %q", j.Workload)
	}
	switch {
	case j.Input == "":
		return badJob("--input is required")
	case j.Output == "":
		return badJob("--output is required")
	case j.Largest < 0:
		return badJob("--largest %d is negative", j.Largest)
	case j.Threads < 0 || j.Threads > 4096:
		return badJob("--threads %d: want 1 to 4096, or 0 for every core", j.Threads)
	case j.MemoryMiB < 0 || j.MemoryMiB > 1<<30:
		return badJob("--memory %d: want MiB in [0, 2^30], 0 for the default", j.MemoryMiB)
	}
	switch j.Device {
	case "", "auto", "cpu", "gpu":
	default:
		return badJob("--device %q: want cpu, gpu or auto", j.Device)
	}
	if _, err := gpu.ParseGPUs(j.GPUs); err != nil {
		return badJob("--%v", err)
	}
	names := allpairs.Techniques()
	switch j.Workload {
	case "pairs":
		names = pairs.Techniques()
	case "simjoin":
		names = simjoin.Techniques()
	}
	if t := j.Technique; t != "" && t != "auto" && !contains(names, t) {
		return badJob("technique %q: want auto or one of %v", t, names)
	}
	return nil
}

// simThreshold parses simjoin's measure and threshold.
func (j *Job) simThreshold() (simjoin.Threshold, error) {
	if j.Threshold == "" {
		return simjoin.Threshold{}, badJob("--threshold is required")
	}
	m, err := simjoin.ParseMeasure(j.Measure)
	if err != nil {
		return simjoin.Threshold{}, badJob("--measure: %v", err)
	}
	th, err := simjoin.ParseThreshold(m, j.Threshold)
	if err != nil {
		return simjoin.Threshold{}, badJob("--threshold: %v", err)
	}
	return th, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// FileName returns the name of tile index's file of n: PREFIX-00003-of-00010.
func FileName(prefix string, index, n int) string {
	return fmt.Sprintf("%s-%05d-of-%05d", prefix, index, n)
}
