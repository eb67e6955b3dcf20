package pipeline

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"

	// The filesystems a path may name: local files, gs://, s3://.
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/gcs"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/s3"
)

// A worker reads the collections from their paths, once per process: each
// tile it runs uses the same copy. The collections are not sent through
// the runner (as a side input would be): they can be gigabytes, which
// runners' side inputs handle badly, and a binary file on a local or
// network disk is mapped in place by setio.Map rather than decoded.

// loaded is a collection read once for the process.
type loaded struct {
	once sync.Once
	c    *sets.Collection
	sum  uint64
	err  error
}

var (
	cacheMu sync.Mutex
	cache   = map[string]*loaded{}
)

// Load returns the collection at path, read once per process, and its
// Fingerprint. A path with a scheme (gs://bucket/x) is read through Beam's
// filesystems; a local one is mapped (binary) or read (text, gzip).
func Load(ctx context.Context, path string) (*sets.Collection, uint64, error) {
	cacheMu.Lock()
	l := cache[path]
	if l == nil {
		l = &loaded{}
		cache[path] = l
	}
	cacheMu.Unlock()
	l.once.Do(func() {
		l.c, l.err = load(ctx, path)
		if l.err == nil {
			l.sum = Fingerprint(l.c)
		}
	})
	return l.c, l.sum, l.err
}

// forget drops path from the cache (tests rewrite files).
func forget(path string) {
	cacheMu.Lock()
	delete(cache, path)
	cacheMu.Unlock()
}

// IsURL reports whether path names a file of a Beam filesystem other than
// the local one ("gs://bucket/x", "s3://bucket/x").
func IsURL(path string) bool {
	i := strings.Index(path, "://")
	return i > 0 && !strings.ContainsAny(path[:i], "/\\")
}

// LocalPath makes a local path absolute, so that workers started in
// another folder find it; URLs stay as they are.
func LocalPath(path string) (string, error) {
	if IsURL(path) {
		return path, nil
	}
	return filepath.Abs(path)
}

func load(ctx context.Context, path string) (*sets.Collection, error) {
	if !IsURL(path) {
		c, _, err := setio.Map(path)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, setio.ErrBadInput) {
			err = fmt.Errorf("%w: %v", errBadJob, err)
		}
		return c, err
	}
	fsys, err := filesystem.New(ctx, path)
	if err != nil {
		return nil, err
	}
	defer fsys.Close()
	size, err := fsys.Size(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r, err := fsys.OpenRead(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer r.Close()
	c, _, err := setio.Read(bufio.NewReaderSize(r, 1<<20), path, size)
	if errors.Is(err, setio.ErrBadInput) {
		err = fmt.Errorf("%w: %v", errBadJob, err)
	}
	return c, err
}

// Fingerprint is a checksum of a collection's sets (CRC-32C of its
// offsets, and of its elements), the same whichever file format held
// them.
func Fingerprint(c *sets.Collection) uint64 {
	t := crc32.MakeTable(crc32.Castagnoli)
	bytesOf := func(p unsafe.Pointer, n int) []byte {
		if n == 0 {
			return nil
		}
		return unsafe.Slice((*byte)(p), n)
	}
	var off, el uint32
	if len(c.Offsets) > 0 {
		off = crc32.Checksum(bytesOf(unsafe.Pointer(&c.Offsets[0]), 8*len(c.Offsets)), t)
	}
	if len(c.Elements) > 0 {
		el = crc32.Checksum(bytesOf(unsafe.Pointer(&c.Elements[0]), 4*len(c.Elements)), t)
	}
	return uint64(off)<<32 | uint64(el) | 1 // never 0, which skips the check
}
