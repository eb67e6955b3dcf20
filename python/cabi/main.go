// Command cabi is xsect's C ABI for the Python package: built with
// go build -buildmode=c-shared into libxsect.so, which the package xsect
// (python/xsect) loads with ctypes. It calls the public packages of
// github.com/xsect/xsect only.
//
// Every operation runs as a job on its own goroutine, so that the caller
// can wait for it in slices (ctypes releases the GIL during each call) and
// cancel it (Ctrl-C in Python): xsect_start starts a job and returns its
// id, xsect_wait waits for it up to a timeout, xsect_cancel cancels its
// context, and once it is done xsect_meta describes the outcome (a JSON
// object: an error code and message, a number, the plan's explanation)
// and xsect_buffer hands out its result arrays. Those arrays are Go memory
// pinned (runtime.Pinner) until xsect_release, so that Python's numpy
// arrays use them in place, without a copy.
//
// Input arrays are the caller's memory (numpy's), passed as pointers and
// lengths; the job reads them in place, so the caller must keep them alive
// and unchanged until the job is done.
package main

/*
#include <stdint.h>
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/xsect/xsect/gpu"
	"github.com/xsect/xsect/intersect"
	"github.com/xsect/xsect/intersect/tune"
)

// main is required by -buildmode=c-shared; it never runs.
func main() {}

// The pairwise dispatch `xsect tune` saved on this machine serves Python
// too, as it does every xsect command (XSECT_PROFILE names another file or
// says off). A profile that cannot be used leaves the built-in dispatch:
// the answers are the same, only slower; the command line says why.
func init() { tune.UseSaved() }

// job is one operation started by xsect_start.
type job struct {
	done   chan struct{}
	cancel context.CancelFunc

	// Set by the job's goroutine before done is closed.
	meta   []byte   // the JSON outcome
	bufs   [][]byte // the result arrays, each pinned
	pinner runtime.Pinner
}

// outcome is what xsect_meta describes, as JSON.
type outcome struct {
	// Code is 0 for success, or one of the codes of errorCode.
	Code    int    `json:"code"`
	Message string `json:"message,omitempty"`
	// Errno is the system's error number of an OSError, if any.
	Errno int `json:"errno,omitempty"`
	// N is the operation's number: a count, an index handle.
	N       int64  `json:"n"`
	Explain string `json:"explain,omitempty"`
	// Info holds an operation's other scalars (an index's shape).
	Info map[string]int64 `json:"info,omitempty"`
}

var (
	jobsMu sync.Mutex
	jobs   = map[int64]*job{}
	lastID atomic.Int64
)

func lookup(id C.int64_t) *job {
	jobsMu.Lock()
	defer jobsMu.Unlock()
	return jobs[int64(id)]
}

// xsect_start starts the operation op (a NUL-terminated name) with the
// JSON parameters params and the n input arrays bufs[i] of lens[i] bytes,
// and returns the job's id (positive). The arrays must stay alive and
// unchanged until the job is done.
//
//export xsect_start
func xsect_start(op, params *C.char, bufs *unsafe.Pointer, lens *C.int64_t, n C.int) C.int64_t {
	name := C.GoString(op)
	var p params_
	perr := json.Unmarshal([]byte(C.GoString(params)), &p)
	in := make([][]byte, int(n))
	if n > 0 {
		ptrs := unsafe.Slice(bufs, int(n))
		ls := unsafe.Slice(lens, int(n))
		for i := range in {
			if ls[i] > 0 && ptrs[i] != nil {
				in[i] = unsafe.Slice((*byte)(ptrs[i]), int(ls[i]))
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	j := &job{done: make(chan struct{}), cancel: cancel}
	id := lastID.Add(1)
	jobsMu.Lock()
	jobs[id] = j
	jobsMu.Unlock()
	go func() {
		defer close(j.done)
		defer cancel()
		var o outcome
		var out [][]byte
		func() {
			defer func() {
				if r := recover(); r != nil {
					o = outcome{Code: codeError, Message: fmt.Sprintf("xsect: internal error in %s: %v", name, r)}
					out = nil
				}
			}()
			if perr != nil {
				o = outcome{Code: codeError, Message: fmt.Sprintf("xsect: bad parameters for %s: %v", name, perr)}
				return
			}
			o, out = run(ctx, name, &p, in)
		}()
		for _, b := range out {
			if len(b) > 0 {
				j.pinner.Pin(&b[0])
			}
		}
		j.bufs = out
		j.meta, _ = json.Marshal(o)
		j.pinner.Pin(&j.meta[0])
	}()
	return C.int64_t(id)
}

// xsect_wait waits up to ms milliseconds for job id to finish and returns
// 1 if it has (or does not exist), 0 otherwise.
//
//export xsect_wait
func xsect_wait(id C.int64_t, ms C.int) C.int {
	j := lookup(id)
	if j == nil {
		return 1
	}
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-j.done:
		return 1
	case <-t.C:
		return 0
	}
}

// xsect_cancel cancels job id: it stops soon, with the code cancelled
// unless it finished first.
//
//export xsect_cancel
func xsect_cancel(id C.int64_t) {
	if j := lookup(id); j != nil {
		j.cancel()
	}
}

// xsect_meta returns the JSON outcome of the finished job id and sets *n
// to its length; nil if the job does not exist or runs still.
//
//export xsect_meta
func xsect_meta(id C.int64_t, n *C.int64_t) unsafe.Pointer {
	j := finished(id)
	if j == nil {
		*n = 0
		return nil
	}
	*n = C.int64_t(len(j.meta))
	return unsafe.Pointer(&j.meta[0])
}

// xsect_buffers returns the number of result arrays of the finished job
// id.
//
//export xsect_buffers
func xsect_buffers(id C.int64_t) C.int {
	j := finished(id)
	if j == nil {
		return 0
	}
	return C.int(len(j.bufs))
}

// xsect_buffer returns result array i of the finished job id, pinned until
// xsect_release, and sets *n to its length in bytes (nil for an empty one).
//
//export xsect_buffer
func xsect_buffer(id C.int64_t, i C.int, n *C.int64_t) unsafe.Pointer {
	*n = 0
	j := finished(id)
	if j == nil || int(i) < 0 || int(i) >= len(j.bufs) || len(j.bufs[i]) == 0 {
		return nil
	}
	b := j.bufs[i]
	*n = C.int64_t(len(b))
	return unsafe.Pointer(&b[0])
}

// xsect_release forgets job id, cancelling it if it runs still, and
// unpins its arrays once it is done: the caller must no longer use them.
//
//export xsect_release
func xsect_release(id C.int64_t) {
	jobsMu.Lock()
	j := jobs[int64(id)]
	delete(jobs, int64(id))
	jobsMu.Unlock()
	if j == nil {
		return
	}
	j.cancel()
	go func() {
		<-j.done
		j.pinner.Unpin()
	}()
}

// xsect_index_close closes the index of handle h (from index_build or
// index_open).
//
//export xsect_index_close
func xsect_index_close(h C.int64_t) {
	closeIndex(int64(h))
}

// finished returns job id if it exists and is done.
func finished(id C.int64_t) *job {
	j := lookup(id)
	if j == nil {
		return nil
	}
	select {
	case <-j.done:
		return j
	default:
		return nil
	}
}

// asBytes returns the memory of s as bytes, for a result array.
func asBytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(zero)))
}

// asSlice returns the bytes b, the caller's array, as a []T in place.
func asSlice[T any](b []byte) []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if len(b) < size {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/size)
}

// xsect_count_cpu returns |a ∩ b| of the na and nb uint32 at a and b,
// counted on the CPU by intersect.CountParallel with threads goroutines
// (0: every core), synchronously: the fast path of xsect.count, which has no
// job to start. With check, it first verifies that both are strictly
// increasing and returns -1 if not; without, the caller vouches for it.
//
//export xsect_count_cpu
func xsect_count_cpu(a *C.uint32_t, na C.int64_t, b *C.uint32_t, nb C.int64_t, threads C.int, check C.int) C.int64_t {
	var x, y []uint32
	if na > 0 {
		x = unsafe.Slice((*uint32)(unsafe.Pointer(a)), int(na))
	}
	if nb > 0 {
		y = unsafe.Slice((*uint32)(unsafe.Pointer(b)), int(nb))
	}
	if check != 0 && !(strict(x, int(threads)) && strict(y, int(threads))) {
		return -1
	}
	return C.int64_t(intersect.CountParallel(x, y, int(threads)))
}

// xsect_gpu_available returns 1 if xsect can use a GPU on this machine.
//
//export xsect_gpu_available
func xsect_gpu_available() C.int {
	if gpu.Available() == nil {
		return 1
	}
	return 0
}
