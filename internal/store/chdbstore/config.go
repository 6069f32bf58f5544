package chdbstore

import (
	"errors"
	"os"
	"path/filepath"
)

// Config configures the embedded engine (store.backend: chdb).
type Config struct {
	// Path is the directory the engine keeps its databases in. Required; the application passes
	// <data_dir>/chdb.
	Path string
	// LibPath is the path of libchdb.so. Default: the CHDB_LIB_PATH environment variable, else
	// libchdb.so next to the executable, else /usr/local/lib/libchdb.so.
	LibPath string
}

// Validate reports every problem of the configuration at once, naming the key.
func (c Config) Validate() error {
	var errs []error
	if c.Path == "" {
		errs = append(errs, errors.New("store.chdb.path: required (the engine's data directory)"))
	}
	return errors.Join(errs...)
}

// errLibMissing explains how to get the library; it is the boot error when none is found.
var errLibMissing = errors.New("libchdb.so not found: set store.chdb.lib_path or CHDB_LIB_PATH, or put libchdb.so next to the wavehouse binary; `make run` and `tests/deps/install.sh chdb` download it")

// libPath resolves the library location: the configured path, CHDB_LIB_PATH, next to the
// executable, then /usr/local/lib.
func (c Config) libPath() (string, error) {
	var candidates []string
	if c.LibPath != "" {
		candidates = append(candidates, c.LibPath)
	} else {
		if p := os.Getenv("CHDB_LIB_PATH"); p != "" {
			candidates = append(candidates, p)
		}
		if exe, err := os.Executable(); err == nil {
			candidates = append(candidates, filepath.Join(filepath.Dir(exe), "libchdb.so"))
		}
		candidates = append(candidates, "/usr/local/lib/libchdb.so")
	}
	for _, p := range candidates {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
			return p, nil
		}
	}
	return "", errors.Join(errLibMissing, errors.New("looked in: "+joinPaths(candidates)))
}

func joinPaths(ps []string) string {
	out := ""
	for i, p := range ps {
		if i > 0 {
			out += ", "
		}
		out += p
	}
	return out
}
