package chdbstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// DefaultMaxMemoryBytes bounds the engine's memory when Config.MaxMemoryBytes is 0: 1 GiB.
const DefaultMaxMemoryBytes = 1 << 30

// minMaxMemoryBytes is the smallest bound accepted; at it a default flush (ingest.flush.max_bytes,
// 16 MiB) still inserts (TestMemoryBound). A smaller value is most likely meant in another unit.
const minMaxMemoryBytes = 128 << 20

// Config configures the embedded engine (store.backend: chdb).
type Config struct {
	// Path is the directory the engine keeps its databases in. Required; the application passes
	// <data_dir>/chdb.
	Path string
	// LibPath is the path of libchdb.so. Default: the CHDB_LIB_PATH environment variable, else
	// libchdb.so next to the executable, else /usr/local/lib/libchdb.so.
	LibPath string
	// MaxMemoryBytes bounds the memory the engine allocates, all queries and inserts together
	// (its max_server_memory_usage), and sizes its MergeTree caches to an eighth of it each
	// (engineArgs). 0 means DefaultMaxMemoryBytes; -1 leaves the engine's own bound, 90% of
	// the machine's RAM, and caches of up to 5 GiB each.
	MaxMemoryBytes int64
}

// Validate reports every problem of the configuration at once, naming the key.
func (c Config) Validate() error {
	var errs []error
	if c.Path == "" {
		errs = append(errs, errors.New("store.chdb.path: required (the engine's data directory)"))
	}
	if err := ValidateMaxMemory(c.MaxMemoryBytes); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ValidateMaxMemory checks a store.chdb.max_memory_bytes value (Config.MaxMemoryBytes).
func ValidateMaxMemory(m int64) error {
	if m != 0 && m != -1 && m < minMaxMemoryBytes {
		return fmt.Errorf("store.chdb.max_memory_bytes: %d is below the minimum %d (128 MiB); 0 is the default (1 GiB), -1 the engine's own bound", m, minMaxMemoryBytes)
	}
	return nil
}

// maxMemory is the engine's memory bound in bytes, 0 for the engine's own.
func (c Config) maxMemory() int64 {
	switch c.MaxMemoryBytes {
	case 0:
		return DefaultMaxMemoryBytes
	case -1:
		return 0
	}
	return c.MaxMemoryBytes
}

// engineArgs is the engine's command line: its data directory, and with a memory bound, the
// bound and the MergeTree caches that would otherwise fill up to 5 GiB each (mark, index mark,
// primary index) at an eighth of it each, so that caches alone never reach the bound.
func (c Config) engineArgs() []string {
	args := []string{"clickhouse", "--path=" + c.Path}
	if m := c.maxMemory(); m > 0 {
		cache := strconv.FormatInt(m/8, 10)
		args = append(args, "--max_server_memory_usage="+strconv.FormatInt(m, 10),
			"--mark_cache_size="+cache, "--index_mark_cache_size="+cache, "--primary_index_cache_size="+cache)
	}
	return args
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
