package gpuallpairs

import xengine "github.com/xsect/xsect/internal/engine"

// The planner estimates the GPU's engines beside the CPU's only where
// every one of them says whether its GPUs are opening (engine.Opening).
var (
	_ xengine.Opening = (*engine)(nil)
	_ xengine.Opening = mmjoinEngine{}
)
