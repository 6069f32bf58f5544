package config

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServerReadsNoToolingVariable: no Go file of the server (every non-test file under cmd/
// and internal/ but the test helpers of internal/testutil) names a WH_TEST_ variable. Load
// accepts them only because they belong to the test tooling; a test hook read from one in
// production code (as the writer's crash hook once was) fails here.
func TestServerReadsNoToolingVariable(t *testing.T) {
	for _, root := range []string{"../../cmd", "../../internal"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && filepath.Base(path) == "testutil" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if strings.Contains(string(b), "WH_TEST_") && !strings.HasSuffix(filepath.ToSlash(path), "internal/config/load.go") {
				t.Errorf("%s names a WH_TEST_ variable: pass a test hook as a dependency instead", path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
