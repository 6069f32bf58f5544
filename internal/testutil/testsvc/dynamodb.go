package testsvc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// DynamoDB is a reachable DynamoDB-compatible endpoint.
type DynamoDB struct {
	// Endpoint is the base URL, http://127.0.0.1:PORT. Any static
	// credentials and region are accepted by dynalite.
	Endpoint string
}

// DynamoDBProcess is a private dynalite process owned by one test. Its
// tables live on disk in Dir/data, so they survive Stop/Kill and Start.
type DynamoDBProcess struct {
	DynamoDB
	// Dir holds the table data and the log.
	Dir string
	server
}

// DynamoDBServer returns the shared endpoint named by
// WH_TEST_DYNAMODB_ENDPOINT when it is set, and otherwise a private
// in-memory dynalite started for this test and stopped in t.Cleanup. Tests
// on a shared endpoint isolate themselves with unique table names.
func DynamoDBServer(t testing.TB) *DynamoDB {
	t.Helper()
	if ep := os.Getenv("WH_TEST_DYNAMODB_ENDPOINT"); ep != "" {
		checkShared(t, "WH_TEST_DYNAMODB_ENDPOINT", hostOfURL(ep))
		return &DynamoDB{Endpoint: ep}
	}
	return &startDynalite(t, false).DynamoDB
}

// StartDynamoDB starts a fresh private dynalite with its tables on disk in
// a temporary directory (so they survive a restart), on a free loopback
// port, waits until it answers HTTP 200 on /, and stops it in t.Cleanup.
func StartDynamoDB(t testing.TB) *DynamoDBProcess {
	t.Helper()
	return startDynalite(t, true)
}

// dynaliteBinary locates dynalite: WH_DYNALITE_BIN, else the npm install
// made by tests/deps/install.sh under the cache directory, else PATH.
func dynaliteBinary() (string, error) {
	return findBinary("WH_DYNALITE_BIN", "dynalite", filepath.Join(cacheDir(), "dynalite", "node_modules", ".bin", "dynalite"))
}

// dynaliteGuard returns the path of tests/deps/dynalite-guard.cjs, which keeps dynalite serving
// when a client aborts a request (TestDynaliteSurvivesAnAbortedRequest).
func dynaliteGuard() (string, error) {
	root := repoRoot()
	if root == "" {
		return "", errors.New("dynalite: no go.mod above the working directory, so tests/deps/dynalite-guard.cjs cannot be found")
	}
	p := filepath.Join(root, "tests", "deps", "dynalite-guard.cjs")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("dynalite: %w", err)
	}
	return p, nil
}

// startDynalite starts dynalite, persisting to disk when persist is true.
func startDynalite(t testing.TB, persist bool) *DynamoDBProcess {
	t.Helper()
	bin, err := dynaliteBinary()
	if err != nil {
		Missing(t, "dynalite not installed: run tests/deps/install.sh dynalite (%v)", err)
	}
	dir := t.TempDir()
	dp := &DynamoDBProcess{Dir: dir}
	dp.p = launch(t, "dynalite", 1, func(ports []int) (*process, error) {
		dp.Endpoint = "http://" + hostPort(ports[0])
		args := []string{
			"--host", "127.0.0.1", "--port", fmt.Sprint(ports[0]),
			"--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0",
		}
		if persist {
			args = append(args, "--path", filepath.Join(dir, "data"))
		}
		guard, err := dynaliteGuard()
		if err != nil {
			return nil, err
		}
		return &process{
			name:    "dynalite",
			bin:     bin,
			args:    args,
			env:     []string{"NODE_OPTIONS=--require=" + guard},
			dir:     dir,
			logPath: filepath.Join(dir, "dynalite.log"),
			ready:   probeHTTP(dp.Endpoint+"/", ""),
		}, nil
	})
	dp.register(t)
	return dp
}

// Stop stops the server gracefully: SIGTERM, then SIGKILL after ten seconds.
func (d *DynamoDBProcess) Stop(t testing.TB) { t.Helper(); d.stopT(t) }

// Kill kills the server with SIGKILL and waits until it has exited.
func (d *DynamoDBProcess) Kill(t testing.TB) { t.Helper(); d.killT(t) }

// Start starts the server again on the same data directory and port and
// waits until it answers. It does nothing when the server is running.
func (d *DynamoDBProcess) Start(t testing.TB) { t.Helper(); d.startT(t) }
