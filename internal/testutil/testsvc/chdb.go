package testsvc

import (
	"os"
	"path/filepath"
	"testing"
)

// chdbVersion is the chDB engine library version the project pins.
const chdbVersion = "26.5.3"

// CHDBLib returns the path of libchdb.so: CHDB_LIB_PATH when set, else
// ${WH_CACHE_DIR:-~/.cache/wavehouse}/chdb/26.5.3/libchdb.so, where
// tests/deps/install.sh puts it. A missing or empty file is reported with
// Missing. The install script renames the library into place only once it
// is complete, so an existing file is a whole one.
func CHDBLib(t testing.TB) string {
	t.Helper()
	path := os.Getenv("CHDB_LIB_PATH")
	if path == "" {
		path = filepath.Join(cacheDir(), "chdb", chdbVersion, "libchdb.so")
	}
	st, err := os.Stat(path)
	if err != nil {
		Missing(t, "libchdb.so not found: run tests/deps/install.sh chdb (%v)", err)
	}
	if !st.Mode().IsRegular() || st.Size() == 0 {
		Missing(t, "libchdb.so at %s is not a non-empty regular file: run tests/deps/install.sh chdb", path)
	}
	return path
}
