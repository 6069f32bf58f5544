package dynamodedupe_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/breaker"
	"github.com/wavehouse/wavehouse/internal/dedupe"
	"github.com/wavehouse/wavehouse/internal/dedupe/dedupetest"
	"github.com/wavehouse/wavehouse/internal/dedupe/dynamodedupe"
	"github.com/wavehouse/wavehouse/internal/testutil/metrictest"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

func TestConfigValidate(t *testing.T) {
	valid := dynamodedupe.Config{Table: "wavehouse-dedupe"}
	if err := valid.Validate(); err != nil {
		t.Fatalf("Validate(%+v) = %v", valid, err)
	}
	bad := dynamodedupe.Config{
		Table:           "x",
		Endpoint:        "127.0.0.1:8000",
		AccessKeyIDFile: "/run/secrets/id",
		Timeout:         -time.Second,
		MaxAttempts:     11,
	}
	err := bad.Validate()
	if err == nil {
		t.Fatalf("Validate(%+v) = nil", bad)
	}
	for _, want := range []string{
		"dedupe.dynamodb.table", "dedupe.dynamodb.endpoint", "dedupe.dynamodb.access_key_id_file",
		"Timeout", "MaxAttempts",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error does not name %s: %v", want, err)
		}
	}
	createOnAWS := dynamodedupe.Config{Table: "wavehouse-dedupe", CreateTable: true}
	if err := createOnAWS.Validate(); err == nil || !strings.Contains(err.Error(), "create_table") {
		t.Fatalf("create_table without endpoint: Validate = %v, want an error naming create_table", err)
	}
}

func TestEnsureTableRefusesMissingTableWithoutCreate(t *testing.T) {
	srv := testsvc.DynamoDBServer(t)
	cfg := testConfig(t, srv.Endpoint)
	cfg.CreateTable = false
	s, err := dynamodedupe.New(cfg, dynamodedupe.Deps{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close(t.Context()) })
	err = s.EnsureTable(t.Context())
	if !errors.Is(err, dedupe.ErrUnavailable) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("EnsureTable on a missing table = %v, want unavailable naming the missing table", err)
	}
}

// TestBreaker stops the server, checks that BreakerFailures failed calls open the breaker
// (later calls fail without reaching the network) and wavehouse_breaker_state reads open, and
// that after the cooldown a call goes through again, succeeds once the server is back, and
// closes the breaker.
func TestBreaker(t *testing.T) {
	proc := testsvc.StartDynamoDB(t)
	clock := dedupetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	cfg := testConfig(t, proc.Endpoint)
	cfg.BreakerFailures = 3
	cfg.BreakerCooldown = 10 * time.Second
	cfg.MaxAttempts = 1
	reg := prometheus.NewPedanticRegistry()
	m, err := breaker.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	state := func() float64 {
		return metrictest.Value(t, reg, "wavehouse_breaker_state", map[string]string{"component": "dynamodb", "target": cfg.Table})
	}
	s, err := dynamodedupe.New(cfg, dynamodedupe.Deps{Clock: clock, Breakers: m})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close(t.Context()) })
	if err := s.EnsureTable(t.Context()); err != nil {
		t.Fatalf("EnsureTable: %v", err)
	}
	k := dedupe.Key{Tenant: "acme", Table: "events", ID: "breaker"}
	if _, err := s.Reserve(t.Context(), k, "fp", time.Minute); err != nil {
		t.Fatalf("Reserve with the server up: %v", err)
	}

	proc.Stop(t)
	for i := range cfg.BreakerFailures {
		_, err := s.Get(t.Context(), k)
		if !errors.Is(err, dedupe.ErrUnavailable) || strings.Contains(err.Error(), "breaker open") {
			t.Fatalf("call %d with the server down = %v, want a network failure", i, err)
		}
	}
	_, err = s.Get(t.Context(), k)
	if !errors.Is(err, dedupe.ErrUnavailable) || !strings.Contains(err.Error(), "breaker open") {
		t.Fatalf("call after %d failures = %v, want the breaker open", cfg.BreakerFailures, err)
	}
	if v := state(); v != 2 {
		t.Fatalf("wavehouse_breaker_state with the server down = %v, want 2 (open)", v)
	}

	proc.Start(t)
	_, err = s.Get(t.Context(), k)
	if !strings.Contains(fmtErr(err), "breaker open") {
		t.Fatalf("call during the cooldown = %v, want the breaker still open", err)
	}
	clock.Advance(cfg.BreakerCooldown)
	rec, err := s.Get(t.Context(), k)
	if err != nil {
		t.Fatalf("Get after the cooldown with the server back: %v", err)
	}
	if rec.State != dedupe.StatePending {
		t.Fatalf("record after restart = %+v, want the pending claim", rec)
	}
	if v := state(); v != 0 {
		t.Fatalf("wavehouse_breaker_state after a successful trial = %v, want 0 (closed)", v)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestOversizedResponseIsInvalid checks that a response over DynamoDB's 400 KB item limit is
// refused as invalid (not as an outage) and leaves the claim pending and owned.
func TestOversizedResponseIsInvalid(t *testing.T) {
	srv := testsvc.DynamoDBServer(t)
	s, err := dynamodedupe.New(testConfig(t, srv.Endpoint), dynamodedupe.Deps{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close(t.Context()) })
	if err := s.EnsureTable(t.Context()); err != nil {
		t.Fatalf("EnsureTable: %v", err)
	}
	k := dedupe.Key{Tenant: "acme", Table: "events", ID: "big"}
	res, err := s.Reserve(t.Context(), k, "fp", time.Minute)
	if err != nil {
		t.Fatalf("Reserve: %v", err)
	}
	big := dedupe.Response{Status: 202, Body: make([]byte, 500<<10)}
	err = s.Commit(t.Context(), k, res.Claim.Token, big, time.Hour)
	if !errors.Is(err, dedupe.ErrInvalid) {
		t.Fatalf("Commit of a 500 KiB body = %v, want %v", err, dedupe.ErrInvalid)
	}
	if err := s.Commit(t.Context(), k, res.Claim.Token, dedupe.Response{Status: 202}, time.Hour); err != nil {
		t.Fatalf("Commit after the refused one: %v", err)
	}
}
