package serve

import "context"

// Pool returns a backend that runs each batch on one of bs, never two
// batches on one at a time (a batch waits for one to be free). For
// backends that run one search at a time, such as a GPU searcher,
// several let one batch's host stages overlap another's device work; with
// Config.Concurrency len(bs), no batch waits. Device is bs[0]'s; bs must
// not be empty.
func Pool(bs ...Backend) Backend {
	p := &pool{device: bs[0].Device(), free: make(chan Backend, len(bs))}
	for _, b := range bs {
		p.free <- b
	}
	return p
}

type pool struct {
	device string
	free   chan Backend
}

func (p *pool) Device() string { return p.device }

func (p *pool) Search(ctx context.Context, qs []Query, limit int, countOnly bool, res []Result) error {
	var b Backend
	select {
	case b = <-p.free:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { p.free <- b }()
	return b.Search(ctx, qs, limit, countOnly, res)
}
