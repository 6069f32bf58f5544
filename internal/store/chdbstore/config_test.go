package chdbstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidateRequiresPath(t *testing.T) {
	err := Config{}.Validate()
	if err == nil || !strings.Contains(err.Error(), "store.chdb.path") {
		t.Fatalf("got %v, want an error naming store.chdb.path", err)
	}
}

func TestLibPathOrder(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "libchdb.so")
	if err := os.WriteFile(lib, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CHDB_LIB_PATH", lib)
	if p, err := (Config{Path: dir}).libPath(); err != nil || p != lib {
		t.Fatalf("CHDB_LIB_PATH: got %q, %v", p, err)
	}
	if _, err := (Config{Path: dir, LibPath: filepath.Join(dir, "missing.so")}).libPath(); err == nil ||
		!strings.Contains(err.Error(), "missing.so") || !strings.Contains(err.Error(), "make run") {
		t.Fatalf("explicit missing lib_path: %v", err)
	}
}
