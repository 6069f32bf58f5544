package dynamodedupe_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wavehouse/wavehouse/internal/dedupe"
	"github.com/wavehouse/wavehouse/internal/dedupe/dedupetest"
	"github.com/wavehouse/wavehouse/internal/dedupe/dynamodedupe"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// harness opens independent clients over one table, unique to the test, on a dynalite
// endpoint: the shared one, or a private process when the test will stop it.
type harness struct {
	cfg    dynamodedupe.Config
	clock  dedupe.Clock
	proc   *testsvc.DynamoDBProcess
	opened bool
}

func (h *harness) Open(t *testing.T) dedupe.Store {
	t.Helper()
	s, err := dynamodedupe.New(h.cfg, dynamodedupe.Deps{Clock: h.clock})
	if err != nil {
		t.Fatalf("dynamodedupe.New: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(t.Context()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if !h.opened {
		if err := s.EnsureTable(t.Context()); err != nil {
			t.Fatalf("EnsureTable: %v", err)
		}
		h.opened = true
	}
	return s
}

func (h *harness) StopBackend(t *testing.T) {
	t.Helper()
	h.proc.Stop(t)
}

// testConfig returns a config for a fresh table on endpoint, with static credentials given as
// files the way an operator would.
func testConfig(t testing.TB, endpoint string) dynamodedupe.Config {
	t.Helper()
	dir := t.TempDir()
	idFile, secretFile := filepath.Join(dir, "id"), filepath.Join(dir, "secret")
	for path, v := range map[string]string{idFile: "test\n", secretFile: "test\n"} {
		if err := os.WriteFile(path, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dynamodedupe.Config{
		Table:               testsvc.UniqueName(t, "dedupe"),
		Region:              "us-east-1",
		Endpoint:            endpoint,
		CreateTable:         true,
		AccessKeyIDFile:     idFile,
		SecretAccessKeyFile: secretFile,
		// dynalite serialises writes to a table and this box is shared; the default 3s is
		// for production DynamoDB.
		Timeout: 20 * time.Second,
	}
}

func TestConformance(t *testing.T) {
	shared := testsvc.DynamoDBServer(t)
	dedupetest.Run(t, func(t *testing.T, clock dedupe.Clock, opts dedupetest.HarnessOptions) dedupetest.Harness {
		h := &harness{clock: clock}
		endpoint := shared.Endpoint
		if opts.Private {
			h.proc = testsvc.StartDynamoDB(t)
			endpoint = h.proc.Endpoint
		}
		h.cfg = testConfig(t, endpoint)
		return h
	}, dedupetest.Caps{IndependentClients: true, Outage: true, Sweeper: true})
}
