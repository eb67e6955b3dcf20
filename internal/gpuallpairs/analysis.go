package gpuallpairs

import (
	"github.com/xsect/xsect/internal/allpairs"
	"github.com/xsect/xsect/internal/gpurt"
)

// startAnalysis starts, once per problem and where a GPU may be present,
// the part of the GPU engines' estimates that needs no open GPU: the
// shared elements, mmscan's candidates and, once the driver has described
// the GPUs, MMJoin's split. The estimates themselves wait for the GPUs'
// contexts (they need their free memory), a fifth of a second or more;
// this analysis runs meanwhile and they find it memoised. Under --device
// auto the CPU's estimates compute much of it beside the opening anyway;
// under --device gpu nothing else would.
func startAnalysis(p *allpairs.Problem) {
	if gpurt.Present() != nil {
		return
	}
	p.Memo("gpuallpairs.prepare", func() any {
		go func() {
			info, ok := describedFirst(p.GPUs)
			if !ok {
				return
			}
			analyse(p, info)
		}()
		return nil
	})
}

// analyse computes, memoised in p, what every GPU engine's estimate
// shares on a GPU described by info.
func analyse(p *allpairs.Problem, info gpurt.Info) {
	mmscanColumns(p, info, mmscanTech{}.heavy)
	if mmjoinCannot(p) == nil {
		mmjoinSplit(p, info, defaultTuning())
	}
}

// describedFirst returns the driver's description of the first GPU of
// list (nil: GPU 0), which the planner's estimates take from the opened
// set's first owner: it waits for the driver (a tenth of a second), not
// for the GPUs' contexts.
func describedFirst(list []int) (gpurt.Info, bool) {
	all, err := gpurt.Devices()
	if err != nil {
		return gpurt.Info{}, false
	}
	o := 0
	if len(list) > 0 {
		o = list[0]
	}
	if o < 0 || o >= len(all) {
		return gpurt.Info{}, false
	}
	return all[o], true
}
