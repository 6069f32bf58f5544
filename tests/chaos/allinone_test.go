package chaos

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// dedupDDL is a table that keeps an insert deduplication log, so a batch the writer inserts
// again with the same token is dropped: where the gateway promises exactly once.
const dedupDDL = "CREATE TABLE %s (id UInt64, k UInt8) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 1000"

// chdbStoreYAML is the store section (the lines under store:) of the embedded default.
func chdbStoreYAML(lib string) string {
	return fmt.Sprintf("  backend: chdb\n  chdb:\n    lib_path: %q\n", lib)
}

// allInOneConfig is the all-in-one process over the embedded queue (fsynced on every publish)
// and local dedupe with idempotency on, with the given store section (chdbStoreYAML: the
// embedded default).
func allInOneConfig(dir, storeYAML string) string {
	return fmt.Sprintf(`server:
  listen: 127.0.0.1:0
ops:
  listen: 127.0.0.1:0
data_dir: %s
shutdown_timeout: 15s
log:
  level: warn
ingest:
  wait_timeout: 20s
  flush:
    max_wait: 200ms
idempotency:
  enabled: true
store:
%smq:
  backend: embedded
  embedded:
    sync: always
dedupe:
  backend: local
`, filepath.Join(dir, "data"), storeYAML)
}

// TestChaosAllInOneSIGKILL kills the all-in-one process (embedded default) with SIGKILL at
// random moments under sustained unkeyed and keyed ingest and restarts it on the same data dir.
// The table deduplicates: every acknowledged row must be stored exactly once.
func TestChaosAllInOneSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: skipped under -short")
	}
	lib := testsvc.CHDBLib(t)
	p, tg := startAllInOne(t, chdbStoreYAML(lib))
	tg.ddl, tg.read = dedupDDL, readThroughGateway(tg.api)
	runScenario(t, "all-in-one (chDB, embedded queue): SIGKILL the process", "chaos_allinone", tg, fault{
		name: "SIGKILL all-in-one",
		inject: func(t *testing.T, _ *rand.Rand) {
			tg.writer.bank(t.Context())
			tg.reserves.bank(t.Context())
			p.Kill(t)
			p.Start(t)
		},
	})
}

// startAllInOne starts the all-in-one process with the store section storeYAML and returns
// it with a target that deduplicates, reads nothing yet and watches the process's writer; the
// caller sets how the table is created and read.
func startAllInOne(t *testing.T, storeYAML string) (*gatewaybin.Process, target) {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(allInOneConfig(dir, storeYAML)), 0o600); err != nil {
		t.Fatal(err)
	}
	p := gatewaybin.StartProcess(t, gatewaybin.ProcessConfig{
		Name: "all-in-one", Binary: binaryPath, Args: []string{"serve", "--config", cfg}, Dir: dir, ListenAddrs: true,
	})
	api := loadClient(p.APIURL())
	t.Cleanup(api.HTTP.CloseIdleConnections)
	return p, target{api: api, ops: p.OpsURL(), dedupes: true, writer: newInDoubt(t.Context(), p.OpsURL()),
		reserves:  newOutcomes(t.Context(), p.OpsURL(), metricReserve),
		opKey:     gatewaybin.OperatorKey(t, filepath.Join(dir, "data")),
		writerLog: func() string { return p.Tail(6000) }, logs: p.Output}
}
