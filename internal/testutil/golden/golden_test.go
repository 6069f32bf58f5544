package golden

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/tbtest"
)

func TestSectionChecksAndUpdates(t *testing.T) {
	p := filepath.Join(t.TempDir(), "doc.md")
	if err := os.WriteFile(p, []byte("head\n<!-- B -->\nold\n<!-- E -->\ntail\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	msg := tbtest.FatalOf(t, func(tb testing.TB) { Section(tb, p, "<!-- B -->\n", "<!-- E -->", "new\n", "run make docs", false) })
	if msg == "" {
		t.Fatal("a stale section did not fail the test")
	}
	Section(t, p, "<!-- B -->\n", "<!-- E -->", "new\n", "run make docs", true)
	if raw, _ := os.ReadFile(p); string(raw) != "head\n<!-- B -->\nnew\n<!-- E -->\ntail\n" {
		t.Fatalf("updated file %q", raw)
	}
	Section(t, p, "<!-- B -->\n", "<!-- E -->", "new\n", "run make docs", false)
}
