package gpurt

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const handOffSupported = true

// holdUntilParentExits reads the helper's standard input, a pipe whose
// only writer is the process that started it, until the pipe closes: when
// that process has ended. The driver's files it was given close with its
// own exit.
func holdUntilParentExits() {
	io.Copy(io.Discard, os.Stdin)
}

// lingerAfterTeardown, in the helper once its parent has ended, closes
// the files it was given (descriptors 3 on, as many as its first argument
// says), which tears the parent's GPUs down and frees what else they held,
// and then, for d, keeps the driver started in this process (no context):
// see LingerEnv.
func lingerAfterTeardown(d time.Duration) {
	if d <= 0 {
		return
	}
	if len(os.Args) > 1 {
		n, _ := strconv.Atoi(os.Args[1])
		for fd := 3; fd < 3+n; fd++ {
			syscall.Close(fd)
		}
	}
	if _, err := Devices(); err != nil {
		return
	}
	time.Sleep(d)
}

// startTeardownHelper starts this program again as the teardown helper,
// holding the process's files of the driver (where it asked for it) and
// extra, and keeping the driver started for linger after the teardown
// where it was handed the driver's files. It returns the helper's process
// ID and its pipe's end here (startHelper), or -1 where it started none:
// nothing to hand off.
func startTeardownHelper(linger time.Duration, extra []uintptr) (pid, parentEnd int, err error) {
	var files []uintptr
	if Probed() {
		if files, err = driverFiles(); err != nil {
			return -1, -1, err
		}
	}
	if len(files) == 0 {
		linger = 0 // no GPU to keep started for the next command
	}
	files = append(files, extra...)
	if len(files) == 0 {
		return -1, -1, nil
	}
	return startHelper("/proc/self/exe", files, linger)
}

// startHelper starts exe as the teardown helper with files as its
// descriptors from 3 on (their count its argument), the read end of a pipe
// from this process as its standard input, and neither standard output
// nor standard error, so that nothing waiting for this process's output
// waits for it, nor a working directory of this process's (a lingering
// helper would keep its file system busy); its environment is this
// process's (where the driver's libraries are found) with TeardownEnv and
// LingerEnv set. It returns the helper's process ID and the pipe's write
// end, a bare descriptor (no *os.File whose finalizer could close it) that
// stays open until this process exits or the caller closes it.
func startHelper(exe string, files []uintptr, linger time.Duration) (pid, parentEnd int, err error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return 0, -1, fmt.Errorf("gpu: handing the teardown off: %w", err)
	}
	const closed = ^uintptr(0) // the child's descriptor is closed
	env := []string{TeardownEnv + "=helper", LingerEnv + "=" + linger.String()}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, TeardownEnv+"=") && !strings.HasPrefix(kv, LingerEnv+"=") {
			env = append(env, kv)
		}
	}
	attr := &syscall.ProcAttr{
		Dir:   "/",
		Env:   env,
		Files: append([]uintptr{uintptr(p[0]), closed, closed}, files...),
	}
	pid, err = syscall.ForkExec(exe, []string{"xsect-gpu-teardown", strconv.Itoa(len(files))}, attr)
	syscall.Close(p[0])
	if err != nil {
		syscall.Close(p[1])
		return 0, -1, fmt.Errorf("gpu: handing the teardown off: %w", err)
	}
	return pid, p[1], nil
}

// driverFiles returns the process's open descriptors of the GPU driver's
// device files.
func driverFiles() ([]uintptr, error) {
	const dir = "/proc/self/fd"
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("gpu: handing the teardown off: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("gpu: handing the teardown off: %w", err)
	}
	var fds []uintptr
	for _, name := range names {
		fd, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		target, err := os.Readlink(dir + "/" + name)
		if err == nil && strings.HasPrefix(target, "/dev/nvidia") {
			fds = append(fds, uintptr(fd))
		}
	}
	return fds, nil
}
