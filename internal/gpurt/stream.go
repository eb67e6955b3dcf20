package gpurt

import (
	"time"

	"github.com/xsect/xsect/internal/cuda"
)

// Stream is a queue of device work that runs in order. A nil *Stream is
// the default (legacy) stream. Streams from NewStream synchronise with the
// default stream, so the synchronous copies (CopyToDevice, CopyToHost),
// which use it, are ordered after their queued work.
type Stream struct {
	h cuda.Stream
}

func (s *Stream) handle() cuda.Stream {
	if s == nil {
		return 0
	}
	return s.h
}

// NewStream creates a stream.
func (c *Ctx) NewStream() (*Stream, error) {
	h, err := cuda.StreamCreate(0)
	if err != nil {
		return nil, c.wrap(err)
	}
	return &Stream{h: h}, nil
}

// DestroyStream destroys s once its work is done.
func (c *Ctx) DestroyStream(s *Stream) error {
	if s == nil || s.h == 0 {
		return nil
	}
	err := cuda.StreamDestroy(s.h)
	s.h = 0
	return c.wrap(err)
}

// Sync waits for s's work and returns the first asynchronous error.
func (c *Ctx) Sync(s *Stream) error { return c.asyncErr(cuda.StreamSynchronize(s.handle())) }

// Event marks a point in a stream, for waiting and timing.
type Event struct {
	h cuda.Event
}

// NewEvent creates an event that can time.
func (c *Ctx) NewEvent() (*Event, error) {
	h, err := cuda.EventCreate(cuda.EventDefault)
	if err != nil {
		return nil, c.wrap(err)
	}
	return &Event{h: h}, nil
}

// DestroyEvent destroys e.
func (c *Ctx) DestroyEvent(e *Event) error {
	if e == nil || e.h == 0 {
		return nil
	}
	err := cuda.EventDestroy(e.h)
	e.h = 0
	return c.wrap(err)
}

// Record marks e at the current end of s.
func (c *Ctx) Record(e *Event, s *Stream) error { return c.wrap(cuda.EventRecord(e.h, s.handle())) }

// Wait blocks until the work before e's last Record has finished.
func (c *Ctx) Wait(e *Event) error { return c.asyncErr(cuda.EventSynchronize(e.h)) }

// Elapsed returns the device time between two recorded events, after
// waiting for end. The resolution is about half a microsecond.
func (c *Ctx) Elapsed(start, end *Event) (time.Duration, error) {
	if err := c.Wait(end); err != nil {
		return 0, err
	}
	ms, err := cuda.EventElapsedTime(start.h, end.h)
	if err != nil {
		return 0, c.wrap(err)
	}
	return time.Duration(float64(ms) * 1e6), nil
}
