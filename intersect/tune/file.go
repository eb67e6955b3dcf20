package tune

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
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

// Env names the variable that says which profile UseSaved installs: a
// file, or "off" for the built-in dispatch. Unset or empty: the one at
// DefaultPath, where `xsect tune` saves.
const Env = "XSECT_PROFILE"

// builtin is the dispatch compiled in for this CPU, before any profile
// replaced it.
var builtin = intersect.ActiveProfile()

// BuiltIn returns the dispatch compiled into package intersect for this
// CPU, whatever profile is in use.
func BuiltIn() intersect.Profile { return builtin }

// UseSaved installs the profile Env names, or else the one at DefaultPath,
// and says where the dispatch in use now comes from: the profile's file,
// or why the built-in dispatch serves. A file Env names that cannot be used
// is an error, and so is a broken file at DefaultPath; a missing one there,
// or one measured on another CPU, is not. After an error the built-in
// dispatch serves. The xsect command and the Python package call it as
// they start.
func UseSaved() (string, error) {
	path := os.Getenv(Env)
	named := path != ""
	if path == "off" {
		return "built-in (" + Env + "=off)", intersect.UseProfile(builtin)
	}
	if !named {
		var err error
		if path, err = DefaultPath(); err != nil {
			return "built-in (" + err.Error() + ")", intersect.UseProfile(builtin)
		}
	}
	p, err := Load(path)
	switch {
	case err == nil:
		return "measured on this CPU (" + path + ")", intersect.UseProfile(p)
	case !named && errors.Is(err, fs.ErrNotExist):
		return "built-in (no profile at " + path + "; `xsect tune` measures one)", intersect.UseProfile(builtin)
	case !named && errors.Is(err, ErrOtherCPU):
		return "built-in (" + path + " was measured on another CPU: " + p.CPU + ")", intersect.UseProfile(builtin)
	}
	intersect.UseProfile(builtin)
	if named {
		return "built-in", fmt.Errorf("%s: %w", Env, err)
	}
	return "built-in (" + path + " is broken)", err
}
