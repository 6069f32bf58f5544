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
	s, err := clickhousestore.New(clickhousestore.Config{
		Endpoint: clickhousestore.Endpoint{Addr: []string{addr}},
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

func TestConformance(t *testing.T) {
	ch := testsvc.ClickHouseServer(t)
	s := newStore(t, ch.NativeAddr)
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
			NewStore: func(t *testing.T) store.Store { return newStore(t, ch.NativeAddr) },
		}
	}, storetest.Caps{ModernTypes: caps.ModernTypes})
}
