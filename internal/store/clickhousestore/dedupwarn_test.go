package clickhousestore_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/clickhousestore"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// syncBuffer is a bytes.Buffer safe for the store's concurrent log writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestConnectWarnsWithoutDedupTokens: a server without insert_deduplication_token (18.16 here)
// is named at connect as one where inserts are at least once.
func TestConnectWarnsWithoutDedupTokens(t *testing.T) {
	ch := testsvc.ClickHouseServer(t)
	var logs syncBuffer
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
