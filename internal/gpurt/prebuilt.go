package gpurt

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
)

// Prebuilt kernels are the modules of a Source compiled ahead of time by
// internal/kernelgen, where NVRTC is (a GPU machine with the CUDA toolkit),
// and committed beside the source like generated assembly: a cubin for
// each architecture of PrebuiltCubins and PTX for PrebuiltPTX, which the
// driver compiles for any newer GPU. A binary that embeds them needs only
// the driver (libcuda): no NVRTC, no compilation at first use.
var (
	// PrebuiltCubins are the architectures prebuilt kernels hold machine
	// code for: the A100 and the H100 and H200.
	PrebuiltCubins = []string{"sm_80", "sm_90"}
	// PrebuiltPTX is the virtual architecture of the prebuilt PTX, loaded
	// on a GPU of compute capability 8.0 or newer without a cubin of its
	// own (the driver compiles it once and keeps it in its cache).
	PrebuiltPTX = "compute_80"
)

// ManifestName is the file that lists a directory's prebuilt kernels: one
// line a source variant, "stem sha256 file...", where sha256 is
// Source.Digest of the variant the files were generated from.
const ManifestName = "generated.txt"

// EmbeddedSource returns the CUDA source at name in fsys (a package's
// embedded kernels directory) with the given NVRTC options, and the
// prebuilt kernels of fsys beside it. It panics if the file is missing,
// which is a build mistake.
func EmbeddedSource(fsys fs.FS, name string, options ...string) Source {
	code, err := fs.ReadFile(fsys, name)
	if err != nil {
		panic(fmt.Sprintf("gpurt: embedded kernel source: %v", err))
	}
	dir, err := fs.Sub(fsys, path.Dir(name))
	if err != nil {
		panic(fmt.Sprintf("gpurt: embedded kernel source: %v", err))
	}
	return Source{Name: path.Base(name), Code: string(code), Options: options, Prebuilt: dir}
}

// With returns s with options in place of its own.
func (s Source) With(options ...string) Source {
	s.Options = options
	return s
}

// Stem names the prebuilt files of s: the source's name without ".cu"
// and its options, each reduced to letters, digits and '_', such as
// "batmap.ONE_KERNEL.KERNEL_batmap8".
func (s Source) Stem() string {
	var b strings.Builder
	b.WriteString(strings.TrimSuffix(s.Name, ".cu"))
	for _, o := range s.Options {
		b.WriteByte('.')
		o = strings.TrimPrefix(strings.TrimPrefix(o, "-D"), "--")
		for _, r := range strings.TrimPrefix(o, "-") {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
				b.WriteRune(r)
			} else {
				b.WriteByte('_')
			}
		}
	}
	return b.String()
}

// Digest identifies what a prebuilt kernel was generated from: the code,
// the options and the compilation's fixed flags. Prebuilt files whose
// manifest line holds another digest are stale and not used.
func (s Source) Digest() string {
	h := sha256.New()
	for _, part := range append([]string{"xsect-prebuilt-1", s.Code}, s.Options...) {
		fmt.Fprintf(h, "%d:%s;", len(part), part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// PrebuiltFile returns the gzip-compressed file of a variant's prebuilt
// kernels for target (an architecture of PrebuiltCubins, or PrebuiltPTX).
func PrebuiltFile(stem, target string) string {
	if strings.HasPrefix(target, "compute_") {
		return stem + "." + target + ".ptx.gz"
	}
	return stem + "." + target + ".cubin.gz"
}

// ReadPrebuilt reads and decompresses one prebuilt file of fsys.
func ReadPrebuilt(fsys fs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return b, nil
}

// Manifest is a directory's list of prebuilt kernels.
type Manifest struct {
	// Compiler is the NVRTC version that generated them, such as "13.0".
	Compiler string
	// Entries maps a variant's stem to its digest and files.
	Entries map[string]ManifestEntry
}

// ManifestEntry is one variant's line of a manifest.
type ManifestEntry struct {
	Digest string
	Files  []string
}

// ReadManifest reads the manifest of fsys; a directory without one has an
// empty manifest.
func ReadManifest(fsys fs.FS) (Manifest, error) {
	m := Manifest{Entries: map[string]ManifestEntry{}}
	b, err := fs.ReadFile(fsys, ManifestName)
	if err != nil {
		if os.IsNotExist(err) {
			return m, nil
		}
		return m, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 3 && f[0] == "#" && f[1] == "nvrtc":
			m.Compiler = f[2]
		case len(f) == 0 || strings.HasPrefix(f[0], "#"):
		case len(f) < 3:
			return m, fmt.Errorf("%s:%d: want a stem, a digest and files", ManifestName, line)
		default:
			m.Entries[f[0]] = ManifestEntry{Digest: f[1], Files: f[2:]}
		}
	}
	return m, sc.Err()
}

// Write writes m in its file's format, sorted by stem.
func (m Manifest) Write(w *bytes.Buffer) {
	fmt.Fprintf(w, "# Code generated by internal/kernelgen; DO NOT EDIT.\n")
	fmt.Fprintf(w, "# Prebuilt kernels of this directory's CUDA sources: a variant's file stem, the digest of its\n")
	fmt.Fprintf(w, "# source and options (gpurt.Source.Digest), and its files.\n")
	fmt.Fprintf(w, "# nvrtc %s\n", m.Compiler)
	stems := make([]string, 0, len(m.Entries))
	for s := range m.Entries {
		stems = append(stems, s)
	}
	slices.Sort(stems)
	for _, s := range stems {
		e := m.Entries[s]
		fmt.Fprintf(w, "%s %s %s\n", s, e.Digest, strings.Join(e.Files, " "))
	}
}

// KernelsFor says how the device gets its kernels by default: "prebuilt
// cubins", "prebuilt PTX" or "NVRTC".
func KernelsFor(in Info) string {
	switch {
	case slices.Contains(PrebuiltCubins, in.Arch()):
		return FromCubin.String() + "s"
	case ptxRuns(in.Major, in.Minor):
		return FromPTX.String()
	}
	return FromNVRTC.String()
}

// ptxRuns reports whether the prebuilt PTX runs on a device of compute
// capability major.minor.
func ptxRuns(major, minor int) bool {
	var pm, pn int
	if _, err := fmt.Sscanf(PrebuiltPTX, "compute_%1d%1d", &pm, &pn); err != nil {
		return false
	}
	return major > pm || major == pm && minor >= pn
}

// prebuiltImage returns the prebuilt image of s for a device of compute
// capability major.minor and how it was found: its own architecture's
// cubin (where cubins is set), else the PTX when the device can run it;
// nil when there is none or the files are stale, and why says so.
func prebuiltImage(s Source, major, minor int, cubins bool) (image []byte, from Origin, why string) {
	if s.Prebuilt == nil {
		return nil, 0, "no prebuilt kernels"
	}
	m, err := ReadManifest(s.Prebuilt)
	if err != nil {
		return nil, 0, err.Error()
	}
	stem := s.Stem()
	e, ok := m.Entries[stem]
	switch {
	case !ok:
		return nil, 0, fmt.Sprintf("no prebuilt kernels for variant %s", stem)
	case e.Digest != s.Digest():
		return nil, 0, fmt.Sprintf("the prebuilt kernels of %s are stale (the source changed since; go run ./internal/kernelgen)", stem)
	}
	arch := fmt.Sprintf("sm_%d%d", major, minor)
	if cubins && slices.Contains(e.Files, PrebuiltFile(stem, arch)) {
		if b, err := ReadPrebuilt(s.Prebuilt, PrebuiltFile(stem, arch)); err == nil {
			return b, FromCubin, ""
		}
	}
	if ptxRuns(major, minor) && slices.Contains(e.Files, PrebuiltFile(stem, PrebuiltPTX)) {
		if b, err := ReadPrebuilt(s.Prebuilt, PrebuiltFile(stem, PrebuiltPTX)); err == nil {
			return append(b, 0), FromPTX, ""
		}
	}
	return nil, 0, fmt.Sprintf("no prebuilt kernels for %s (cubins for %s, PTX for %s)", arch, strings.Join(PrebuiltCubins, ", "), PrebuiltPTX)
}
