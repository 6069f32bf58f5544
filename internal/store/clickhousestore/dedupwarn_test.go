package clickhousestore_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/logbuf"

	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/clickhousestore"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// TestConnectWarnsWithoutDedupTokens: a server without insert_deduplication_token (18.16 here)
// is named at connect as one where inserts are at least once.
func TestConnectWarnsWithoutDedupTokens(t *testing.T) {
	ch := testsvc.ClickHouseServer(t)
	var logs logbuf.Buffer
	s, err := clickhousestore.New(clickhousestore.Config{Endpoint: clickhousestore.Endpoint{Addr: []string{ch.NativeAddr}}},
		clickhousestore.Deps{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	// Any call connects; the suite's server is 18.16, which has no deduplication tokens.
	if _, err := s.Capabilities(t.Context(), store.Target{Database: "default"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "no insert_deduplication_token") || !strings.Contains(logs.String(), "at least once") {
		t.Fatalf("no at-least-once warning at connect; logs:\n%s", logs.String())
	}
}
