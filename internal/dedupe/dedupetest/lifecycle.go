package dedupetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/dedupe"
)

func testBodyCopied(t *testing.T, e *env) {
	s := e.h.Open(t)
	k := key("req-copy")
	c := claim(t, s, k, fpA, lease)
	body := []byte("original body")
	commit(t, s, k, c.Token, dedupe.Response{Status: 200, Body: body}, retention)
	copy(body, "XXXXXXXX")

	res := reserve(t, s, k, fpA, lease)
	wantOutcome(t, res, dedupe.OutcomeDuplicate)
	wantResponse(t, res.Record.Response, dedupe.Response{Status: 200, Body: []byte("original body")})
	// Mutating the returned body does not change the stored one.
	copy(res.Record.Response.Body, "YYYYYYYY")
	res = reserve(t, s, k, fpA, lease)
	wantResponse(t, res.Record.Response, dedupe.Response{Status: 200, Body: []byte("original body")})

	// Error responses and empty bodies are recorded as well.
	k2 := key("req-empty")
	c2 := claim(t, s, k2, fpA, lease)
	commit(t, s, k2, c2.Token, dedupe.Response{Status: 400}, retention)
	res = reserve(t, s, k2, fpA, lease)
	wantOutcome(t, res, dedupe.OutcomeDuplicate)
	if res.Record.Response.Status != 400 || len(res.Record.Response.Body) != 0 {
		t.Fatalf("empty response = %+v", res.Record.Response)
	}
}

func testGetMissing(t *testing.T, e *env) {
	s := e.h.Open(t)
	_, err := s.Get(ctxFor(t), key("never-written"))
	wantErr(t, "Get missing", err, dedupe.ErrNotFound)
}

func testInvalidArguments(t *testing.T, e *env) {
	s := e.h.Open(t)
	ctx := ctxFor(t)
	bad := []dedupe.Key{
		{Table: "t", ID: "i"},
		{Tenant: "x", ID: "i"},
		{Tenant: "x", Table: "t"},
		{Tenant: strings.Repeat("x", 2048), Table: "t", ID: "i"},
	}
	for _, k := range bad {
		_, err := s.Reserve(ctx, k, fpA, lease)
		wantErr(t, "Reserve with bad key", err, dedupe.ErrInvalid)
		_, err = s.Get(ctx, k)
		wantErr(t, "Get with bad key", err, dedupe.ErrInvalid)
	}
	_, err := s.Reserve(ctx, key("k"), fpA, 0)
	wantErr(t, "Reserve with zero lease", err, dedupe.ErrInvalid)
	c := claim(t, s, key("k"), fpA, lease)
	wantErr(t, "Commit with zero retention", s.Commit(ctx, key("k"), c.Token, resp("x"), 0), dedupe.ErrInvalid)
	wantErr(t, "Commit with empty token", s.Commit(ctx, key("k"), "", resp("x"), retention), dedupe.ErrInvalid)
	wantErr(t, "Release with empty token", s.Release(ctx, key("k"), ""), dedupe.ErrInvalid)
	// Invalid calls changed nothing: the claim is still live and ours.
	commit(t, s, key("k"), c.Token, resp("x"), retention)
}

func testCanceledContext(t *testing.T, e *env) {
	s := e.h.Open(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := s.Reserve(ctx, key("req-canceled"), fpA, lease)
	wantErr(t, "Reserve with canceled context", err, context.Canceled)
	_, err = s.Get(ctx, key("req-canceled"))
	wantErr(t, "Get with canceled context", err, context.Canceled)
}

func testReopen(t *testing.T, e *env) {
	s := e.h.Open(t)
	k := key("req-durable")
	c := claim(t, s, k, fpA, lease)
	commit(t, s, k, c.Token, resp("durable"), retention)
	if err := s.Close(ctxFor(t)); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s2 := e.h.Open(t)
	res := reserve(t, s2, k, fpA, lease)
	wantOutcome(t, res, dedupe.OutcomeDuplicate)
	wantResponse(t, res.Record.Response, resp("durable"))
}

func testClosed(t *testing.T, e *env) {
	s := e.h.Open(t)
	ctx := ctxFor(t)
	c := claim(t, s, key("req-closed"), fpA, lease)
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, err := s.Reserve(ctx, key("req-closed-2"), fpA, lease)
	wantErr(t, "Reserve after Close", err, dedupe.ErrClosed)
	wantErr(t, "Commit after Close", s.Commit(ctx, key("req-closed"), c.Token, resp("x"), retention), dedupe.ErrClosed)
	wantErr(t, "Release after Close", s.Release(ctx, key("req-closed"), c.Token), dedupe.ErrClosed)
	_, err = s.Get(ctx, key("req-closed"))
	wantErr(t, "Get after Close", err, dedupe.ErrClosed)
	if !dedupe.IsUnavailable(err) {
		t.Fatalf("IsUnavailable(%v) = false for a closed store", err)
	}
	if sw, ok := s.(dedupe.Sweeper); ok {
		_, err := sw.Sweep(ctx, e.clock.Now())
		wantErr(t, "Sweep after Close", err, dedupe.ErrClosed)
	}
}

func testSweep(t *testing.T, e *env) {
	s := e.h.Open(t)
	sw, ok := s.(dedupe.Sweeper)
	if !ok {
		t.Fatalf("%T does not implement dedupe.Sweeper but Caps.Sweeper is set", s)
	}
	// Two records that will be expired and two that will still be live at the sweep.
	claim(t, s, key("pending-expired"), fpA, time.Minute)
	c := claim(t, s, key("committed-expired"), fpA, lease)
	commit(t, s, key("committed-expired"), c.Token, resp("old"), time.Minute)
	live := claim(t, s, key("pending-live"), fpA, time.Hour)
	c = claim(t, s, key("committed-live"), fpA, lease)
	commit(t, s, key("committed-live"), c.Token, resp("new"), time.Hour)

	e.clock.Advance(time.Minute)
	removed, err := sw.Sweep(ctxFor(t), e.clock.Now())
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if removed != 2 {
		t.Fatalf("Sweep removed %d records, want 2", removed)
	}
	for _, id := range []string{"pending-live", "committed-live"} {
		if _, err := s.Get(ctxFor(t), key(id)); err != nil {
			t.Fatalf("Get %s after Sweep: %v", id, err)
		}
	}
	// The live claim is untouched: its token still commits.
	commit(t, s, key("pending-live"), live.Token, resp("done"), time.Hour)
	removed, err = sw.Sweep(ctxFor(t), e.clock.Now())
	if err != nil || removed != 0 {
		t.Fatalf("second Sweep = %d, %v; want 0, nil", removed, err)
	}
	// Swept keys are new.
	wantOutcome(t, reserve(t, s, key("committed-expired"), fpB, lease), dedupe.OutcomeClaimed)
}

func testBackendDown(t *testing.T, e *env) {
	s := e.h.Open(t)
	k := key("req-down")
	c := claim(t, s, k, fpA, lease)
	e.h.StopBackend(t)

	ctx := ctxFor(t)
	_, err := s.Reserve(ctx, key("req-down-2"), fpA, lease)
	wantUnavailable(t, "Reserve", err)
	wantUnavailable(t, "Commit", s.Commit(ctx, k, c.Token, resp("x"), retention))
	wantUnavailable(t, "Release", s.Release(ctx, k, c.Token))
	_, err = s.Get(ctx, k)
	wantUnavailable(t, "Get", err)
}

func wantUnavailable(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, dedupe.ErrUnavailable) {
		t.Fatalf("%s with the backend down: error = %v, want %v", what, err, dedupe.ErrUnavailable)
	}
}
