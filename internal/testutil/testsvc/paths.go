package testsvc

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
)

// repoRoot walks up from the working directory to the directory holding
// go.mod and returns it, or "" when there is none.
func repoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if st, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && !st.IsDir() {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// cacheDir returns the dependency cache directory: WH_CACHE_DIR, else
// ~/.cache/wavehouse.
func cacheDir() string {
	if d := os.Getenv("WH_CACHE_DIR"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "wavehouse-cache")
	}
	return filepath.Join(home, ".cache", "wavehouse")
}

// isExecutable reports whether path is a regular file with an execute bit.
func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// findBinary returns the first executable among the value of envVar, the
// candidate paths and name looked up in PATH; the error says what to set
// or install.
func findBinary(envVar, name string, candidates ...string) (string, error) {
	if v := os.Getenv(envVar); v != "" {
		if isExecutable(v) {
			return v, nil
		}
		return "", errors.New(envVar + "=" + v + " is not an executable file")
	}
	for _, c := range candidates {
		if c != "" && isExecutable(c) {
			return c, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", errors.New(name + " not found (set " + envVar + " or install it)")
}
