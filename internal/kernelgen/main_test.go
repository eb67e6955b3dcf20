package main

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/xsect/xsect/internal/gpurt"
	"github.com/xsect/xsect/internal/gpurt/gputest"
)

// TestPrebuiltUpToDate fails when a kernel source, or the options an
// engine loads it with, changed since its kernels were prebuilt.
func TestPrebuiltUpToDate(t *testing.T) {
	if err := checkAll(os.DirFS("../.."), kernelDirs()); err != nil {
		t.Fatal(err)
	}
}

// TestCheckFindsStale checks the check on a made-up directory: a source
// changed, a variant missing, a file missing, an unlisted file.
func TestCheckFindsStale(t *testing.T) {
	src := gpurt.Source{Name: "k.cu", Code: "extern \"C\" __global__ void k() {}"}
	variant := src.With("-DX=1")
	manifest := func(entries map[string]gpurt.ManifestEntry) *fstest.MapFile {
		var b bytes.Buffer
		gpurt.Manifest{Compiler: "13.0", Entries: entries}.Write(&b)
		return &fstest.MapFile{Data: b.Bytes()}
	}
	files := func(stem string) fstest.MapFS {
		fsys := fstest.MapFS{}
		for _, f := range targets(stem) {
			fsys["k/"+f] = &fstest.MapFile{Data: gzipped([]byte("image of " + f))}
		}
		return fsys
	}
	good := func() fstest.MapFS {
		fsys := files(src.Stem())
		for f, d := range files(variant.Stem()) {
			fsys[f] = d
		}
		fsys["k/"+gpurt.ManifestName] = manifest(map[string]gpurt.ManifestEntry{
			src.Stem():     {Digest: src.Digest(), Files: targets(src.Stem())},
			variant.Stem(): {Digest: variant.Digest(), Files: targets(variant.Stem())},
		})
		return fsys
	}
	dirs := []kernelDir{{"k", []gpurt.Source{src, variant}}}
	if err := checkAll(good(), dirs); err != nil {
		t.Fatalf("a complete directory: %v", err)
	}
	for _, tc := range []struct {
		name, want string
		change     func(fstest.MapFS) []kernelDir
	}{
		{"source changed", "stale", func(fsys fstest.MapFS) []kernelDir {
			changed := src
			changed.Code += "\n"
			return []kernelDir{{"k", []gpurt.Source{changed, variant}}}
		}},
		{"options changed", "not prebuilt", func(fsys fstest.MapFS) []kernelDir {
			return []kernelDir{{"k", []gpurt.Source{src, src.With("-DX=2")}}}
		}},
		{"file missing", "file does not exist", func(fsys fstest.MapFS) []kernelDir {
			delete(fsys, "k/"+gpurt.PrebuiltFile(src.Stem(), gpurt.PrebuiltCubins[0]))
			return dirs
		}},
		{"file damaged", "gzip", func(fsys fstest.MapFS) []kernelDir {
			fsys["k/"+gpurt.PrebuiltFile(src.Stem(), gpurt.PrebuiltPTX)] = &fstest.MapFile{Data: []byte("this is not a gzip stream at all")}
			return dirs
		}},
		{"unlisted file", "in no manifest", func(fsys fstest.MapFS) []kernelDir {
			fsys["k/old.sm_90.cubin.gz"] = &fstest.MapFile{Data: gzipped([]byte("x"))}
			return dirs
		}},
		{"variant no longer loaded", "which no engine loads", func(fsys fstest.MapFS) []kernelDir {
			return []kernelDir{{"k", []gpurt.Source{src}}}
		}},
		{"no manifest", "not prebuilt", func(fsys fstest.MapFS) []kernelDir {
			delete(fsys, "k/"+gpurt.ManifestName)
			return dirs
		}},
	} {
		fsys := good()
		d := tc.change(fsys)
		err := checkAll(fsys, d)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

// TestPrebuiltLoad loads every prebuilt variant on the first GPU, as a
// cubin and as PTX: the driver accepts what kernelgen wrote. The engines'
// own GPU tests check what the kernels compute.
func TestPrebuiltLoad(t *testing.T) {
	gputest.Need(t, gpurt.Available())
	dev, err := gpurt.Default()
	if err != nil {
		t.Fatal(err)
	}
	info := dev.Info()
	for _, mode := range []string{"auto", "ptx"} {
		t.Setenv(gpurt.KernelsEnv, mode)
		want := gpurt.FromPTX
		if mode == "auto" && slices.Contains(gpurt.PrebuiltCubins, info.Arch()) {
			want = gpurt.FromCubin
		}
		for _, kd := range kernelDirs() {
			for _, src := range kd.sources {
				err := dev.Do(func(c *gpurt.Ctx) error {
					start := time.Now()
					m, err := c.Load(src)
					if err != nil {
						return err
					}
					t.Logf("%s %s: %v in %v", info.Arch(), src.Stem(), m.From, time.Since(start).Round(time.Microsecond))
					if m.From != want {
						t.Errorf("%s in mode %s: from %v, want %v", src.Stem(), mode, m.From, want)
					}
					return c.Unload(m)
				})
				if err != nil {
					t.Fatalf("%s in mode %s: %v", src.Stem(), mode, err)
				}
			}
		}
	}
}
