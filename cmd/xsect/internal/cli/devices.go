package cli

import (
	"flag"
	"fmt"
	"strings"

	"github.com/xsect/xsect/gpu"
	"github.com/xsect/xsect/internal/gpurt"
)

func init() {
	register(&command{
		name:    "devices",
		summary: "list the GPUs xsect can use, or say why there are none",
		usage:   "",
		help: `
Lists the NVIDIA GPUs the CUDA driver reports: name, memory, multiprocessors,
compute capability, L2 cache, peak memory bandwidth and how the GPU gets
xsect's kernels (prebuilt cubins, prebuilt PTX that the driver compiles, or
NVRTC); then the driver's CUDA version, the NVRTC compiler (needed only for
kernels not prebuilt for a GPU) with the directory it caches kernels in, and
cuBLAS (needed only by allpairs' mm and mmjoin techniques). Without a usable
GPU it says why (no driver library, no device, a driver too old) and exits 0:
the CPU paths still work. The GPU numbers are the ordinals that --gpus takes;
the GPU commands use every GPU by default (intersect the first).`,
		setup: func(fs *flag.FlagSet) func(*Env, []string) error {
			return func(env *Env, args []string) error {
				if len(args) != 0 {
					return usagef("unexpected arguments %q", args)
				}
				out := output(env)
				infos, err := gpu.Devices()
				if err != nil {
					fmt.Fprintf(out, "no GPU: %v\n", err)
					return out.Flush()
				}
				for _, in := range infos {
					fmt.Fprintf(out, "GPU %d: %s\n", in.Ordinal, in.Name)
					fmt.Fprintf(out, "  memory %s, %d SMs, compute capability %d.%d (%s), L2 %s, peak bandwidth %.0f GB/s\n",
						gpurt.FormatBytes(in.Memory), in.SMs, in.Major, in.Minor, in.Arch(), gpurt.FormatBytes(uint64(in.L2Bytes)), in.PeakBandwidth()/1e9)
					fmt.Fprintf(out, "  kernels: %s\n", gpu.Kernels(in))
				}
				if v, err := gpu.DriverVersion(); err == nil {
					fmt.Fprintf(out, "driver: CUDA %s\n", v)
				}
				fmt.Fprintf(out, "prebuilt kernels: cubins for %s, PTX for %s\n",
					strings.Join(gpurt.PrebuiltCubins, ", "), gpurt.PrebuiltPTX)
				if lib, v, err := gpu.Compiler(); err == nil {
					dir, _ := gpu.CacheDir()
					fmt.Fprintf(out, "NVRTC: %s (%s), for kernels not prebuilt; cache %s\n", lib, v, dir)
				} else {
					fmt.Fprintf(out, "NVRTC: none, and none needed for the prebuilt kernels (%v)\n", err)
				}
				if lib, err := gpu.BLASLibrary(); err == nil {
					fmt.Fprintf(out, "cuBLAS: %s, for allpairs' mm and mmjoin\n", lib)
				} else {
					fmt.Fprintf(out, "cuBLAS: none, so allpairs' mm and mmjoin are not planned (%v)\n", err)
				}
				return out.Flush()
			}
		},
	})
}
