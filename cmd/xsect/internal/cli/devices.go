package cli

import (
	"flag"
	"fmt"

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
compute capability, L2 cache and peak memory bandwidth, then the driver's
CUDA version, the NVRTC compiler and the directory compiled kernels are
cached in. Without a usable GPU it says why (no driver library, no device,
a driver too old) and exits 0: the CPU paths still work. The GPU numbers are
the ordinals that --gpus takes; the GPU commands use every GPU by default.`,
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
				}
				if v, err := gpu.DriverVersion(); err == nil {
					fmt.Fprintf(out, "driver: CUDA %s\n", v)
				}
				if lib, v, err := gpu.Compiler(); err == nil {
					fmt.Fprintf(out, "compiler: %s (NVRTC %s)\n", lib, v)
				} else {
					fmt.Fprintf(out, "compiler: none, so no kernels can be built: %v\n", err)
				}
				if dir, err := gpu.CacheDir(); err == nil {
					fmt.Fprintf(out, "kernel cache: %s\n", dir)
				}
				return out.Flush()
			}
		},
	})
}
