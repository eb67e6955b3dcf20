package tune

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/xsect/xsect/intersect"
)

// ErrOtherCPU is the error Load returns (wrapped) for a profile measured on
// another CPU than this one: its crossovers are not this CPU's.
var ErrOtherCPU = errors.New("tune: the profile was measured on another CPU")

// DefaultPath returns where a user's profile is kept: pairwise-profile.json
// in xsect's folder of the user's cache (os.UserCacheDir).
func DefaultPath() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("tune: no cache folder for the profile: %w", err)
	}
	return filepath.Join(dir, "xsect", "pairwise-profile.json"), nil
}

// Save writes p to path as JSON, creating its folder: to a temporary file
// beside it first, renamed over path once whole.
func Save(path string, p intersect.Profile) error {
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".pairwise-profile-*")
	if err != nil {
		return err
	}
	_, err = f.Write(append(data, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("tune: saving the profile: %w", err)
	}
	return nil
}

// Load reads the profile at path. It checks that the profile can be
// followed here (intersect.ErrProfile otherwise) and that it was measured on
// this CPU (ErrOtherCPU otherwise, with the profile read).
func Load(path string) (intersect.Profile, error) {
	var p intersect.Profile
	data, err := os.ReadFile(path)
	if err != nil {
		return p, err
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return p, fmt.Errorf("%s: %w: %v", path, intersect.ErrProfile, err)
	}
	if p.CPU != intersect.CPU() {
		return p, fmt.Errorf("%s: %w (%q; this one is %q)", path, ErrOtherCPU, p.CPU, intersect.CPU())
	}
	if err := intersect.CheckProfile(p); err != nil {
		return p, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}
