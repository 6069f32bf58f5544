package clickhousestore_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/clickhousestore"
	"github.com/wavehouse/wavehouse/internal/store/storetest"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

func newStore(t testing.TB, addr string) *clickhousestore.Store {
	t.Helper()
	return newStoreHTTP(t, addr, "")
}

// newStoreHTTP is a store that inserts RowBinary over HTTP at httpAddr (none when empty).
func newStoreHTTP(t testing.TB, addr, httpAddr string) *clickhousestore.Store {
	t.Helper()
	e := clickhousestore.Endpoint{Addr: []string{addr}}
	if httpAddr != "" {
		e.HTTPAddr = []string{httpAddr}
	}
	s, err := clickhousestore.New(clickhousestore.Config{
		Endpoint: e,
		// LowCardinality DDL is experimental on 18.16; the setting is harmless on newer servers.
		Settings: map[string]int{"allow_experimental_low_cardinality_type": 1},
	}, clickhousestore.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// closedAddr returns a loopback address nobody listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// TestConformance runs the suite with RowBinary inserts over HTTP (the configured path) and
// over the native protocol (no http_addrs: RowBinary rendered for the driver).
func TestConformance(t *testing.T) {
	ch := testsvc.ClickHouseServer(t)
	if ch.HTTPAddr == "" {
		t.Fatal("the shared ClickHouse has no HTTP address (set WH_TEST_CLICKHOUSE_HTTP_ADDR)")
	}
	t.Run("HTTP", func(t *testing.T) { conformance(t, ch, ch.HTTPAddr) })
	t.Run("Native", func(t *testing.T) { conformance(t, ch, "") })
}

func conformance(t *testing.T, ch *testsvc.ClickHouse, httpAddr string) {
	s := newStoreHTTP(t, ch.NativeAddr, httpAddr)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	caps, err := s.Capabilities(t.Context(), store.Target{Database: "default"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("server capabilities: %+v", caps)
	storetest.Run(t, func(t *testing.T) *storetest.Harness {
		return &storetest.Harness{
			Store: s,
			Unreachable: func(t *testing.T) store.Store {
				u, err := clickhousestore.New(clickhousestore.Config{
					Endpoint:    clickhousestore.Endpoint{Addr: []string{closedAddr(t)}},
					DialTimeout: 500 * time.Millisecond,
				}, clickhousestore.Deps{})
				if err != nil {
					t.Fatal(err)
				}
				return u
			},
			NewStore: func(t *testing.T) store.Store { return newStoreHTTP(t, ch.NativeAddr, httpAddr) },
		}
	}, storetest.Caps{ModernTypes: caps.ModernTypes})
}
