package cache_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/wavehouse/wavehouse/internal/cache"
)

func TestNewKeyFoldsEveryInput(t *testing.T) {
	base := cache.Versions{Epoch: 1, Tables: map[string]uint64{"a": 1, "b": 2}}
	ref := cache.NewKey("t1", "SELECT 1", map[string]string{"x": "1", "y": "2"}, base)
	same := cache.NewKey("t1", "SELECT 1", map[string]string{"y": "2", "x": "1"}, cache.Versions{Epoch: 1, Tables: map[string]uint64{"b": 2, "a": 1}})
	if ref != same {
		t.Fatalf("key depends on map order: %v != %v", ref, same)
	}
	differ := map[string]cache.Key{
		"tenant":      cache.NewKey("t2", "SELECT 1", map[string]string{"x": "1", "y": "2"}, base),
		"sql":         cache.NewKey("t1", "SELECT 2", map[string]string{"x": "1", "y": "2"}, base),
		"param value": cache.NewKey("t1", "SELECT 1", map[string]string{"x": "1", "y": "3"}, base),
		"param name":  cache.NewKey("t1", "SELECT 1", map[string]string{"x": "1", "z": "2"}, base),
		"concat":      cache.NewKey("t1", "SELECT 1", map[string]string{"x": "1y", "": "2"}, base),
		"epoch":       cache.NewKey("t1", "SELECT 1", map[string]string{"x": "1", "y": "2"}, cache.Versions{Epoch: 2, Tables: base.Tables}),
		"table":       cache.NewKey("t1", "SELECT 1", map[string]string{"x": "1", "y": "2"}, cache.Versions{Epoch: 1, Tables: map[string]uint64{"a": 1, "b": 3}}),
		"all tables":  cache.NewKey("t1", "SELECT 1", map[string]string{"x": "1", "y": "2"}, cache.Versions{Epoch: 1, AllTables: true, Tables: base.Tables}),
	}
	for name, k := range differ {
		if k == ref || k.Hash == ref.Hash {
			t.Errorf("changing the %s does not change the key", name)
		}
	}
	w1 := cache.NewKey("t1", "q", nil, cache.Versions{AllTables: true, Writes: 1})
	w2 := cache.NewKey("t1", "q", nil, cache.Versions{AllTables: true, Writes: 2})
	if w1 == w2 {
		t.Error("the write counter is not folded into an all-tables key")
	}
	t1 := cache.NewKey("t1", "q", nil, cache.Versions{Writes: 1})
	t2 := cache.NewKey("t1", "q", nil, cache.Versions{Writes: 2})
	if t1 != t2 {
		t.Error("the write counter is folded into a key with known tables")
	}
}

func TestEscapeTenantIsInjective(t *testing.T) {
	inputs := []string{"", "%", "a", "a:b", "a%3Ab", "{a}", "a/b", "A", "a_b-c", "é", "%25"}
	seen := map[string]string{}
	for _, in := range inputs {
		out := cache.EscapeTenant(in)
		for _, c := range out {
			if c == ':' || c == '/' || c == '{' || c == '}' {
				t.Errorf("EscapeTenant(%q) = %q contains a separator", in, out)
			}
		}
		if prev, ok := seen[out]; ok {
			t.Errorf("EscapeTenant(%q) = EscapeTenant(%q) = %q", in, prev, out)
		}
		seen[out] = in
	}
	if got := cache.EscapeTenant("acme_01"); got != "acme_01" {
		t.Errorf("EscapeTenant(acme_01) = %q, want it unchanged", got)
	}
}

func TestBypass(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{cache.ErrMiss, false},
		{fmt.Errorf("x: %w", cache.ErrMiss), false},
		{cache.ErrTooLarge, false},
		{fmt.Errorf("x: %w", cache.ErrUnavailable), true},
		{cache.ErrClosed, true},
		{context.DeadlineExceeded, true},
		{errors.New("other"), true},
	}
	for _, c := range cases {
		if got := cache.Bypass(c.err); got != c.want {
			t.Errorf("Bypass(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
