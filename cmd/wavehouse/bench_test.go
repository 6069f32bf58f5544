package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/bench"
	"github.com/wavehouse/wavehouse/internal/testutil/gatewaybin"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

func TestBenchUsage(t *testing.T) {
	var out, errb bytes.Buffer
	for _, args := range [][]string{{}, {"query"}, {"ingest", "--format", "csv"}, {"ingest", "--url", "http://192.0.2.1:8080"}, {"ingest", "extra"}} {
		if code := runBench(t.Context(), args, &out, &errb); code != 2 {
			t.Errorf("bench %v exit %d, want 2", args, code)
		}
	}
	if code := runBench(t.Context(), []string{"ingest", "-h"}, &out, &errb); code != 0 || !strings.Contains(errb.String(), "--direct") && !strings.Contains(errb.String(), "-direct") {
		t.Errorf("bench ingest -h: exit %d, %q", code, errb.String())
	}
}

// buildGateway builds the wavehouse binary into a temp dir.
func buildGateway(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "wavehouse")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startGateway runs `wavehouse serve` with the given store block, its listeners on port 0, and
// returns the API's and the ops listener's base URLs once it is ready. The process is stopped in
// t.Cleanup.
// startGateway starts the gateway and returns its listeners' URLs and the file of the operator
// key it generated.
func startGateway(t *testing.T, bin, storeYAML string, env ...string) (api, ops, keyFile string) {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf("server:\n  listen: 127.0.0.1:0\nops:\n  listen: 127.0.0.1:0\ndata_dir: %s\nlog:\n  level: warn\n%s", dir, storeYAML)
	p := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	proc := gatewaybin.StartProcess(t, gatewaybin.ProcessConfig{
		Name: "gateway", Binary: bin, Args: []string{"serve", "--config", p}, Env: env, Dir: dir,
		ListenAddrs: true, ReadyTimeout: 60 * time.Second, StopTimeout: 20 * time.Second,
	})
	return proc.APIURL(), proc.OpsURL(), auth.GeneratedOperatorKeyFile(dir)
}

func runBenchJSON(t *testing.T, args ...string) bench.Report {
	t.Helper()
	// The tool must stop everything it started (clients, samplers, connections) before returning.
	before := goleak.IgnoreCurrent()
	defer goleak.VerifyNone(t, before)
	var out, errb bytes.Buffer
	code := runBench(t.Context(), append([]string{"ingest", "--json", "--quiet"}, args...), &out, &errb)
	if code != 0 {
		t.Fatalf("bench exit %d: %s\n%s", code, errb.String(), out.String())
	}
	var rep bench.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out.String())
	}
	return rep
}

// checkPhase asserts the counts a phase reports for requests×rows rows all accepted.
func checkPhase(t *testing.T, p bench.Phase, okStatus, requests, rows int, wantQueryable bool) {
	t.Helper()
	want := int64(requests * rows)
	if p.Requests != int64(requests) || p.OKRequests != int64(requests) || p.Status[okStatus] != int64(requests) || len(p.Status) != 1 || len(p.Errors) != 0 {
		t.Errorf("%s: requests %d ok %d status %v errors %v; want %d × %d", p.Target, p.Requests, p.OKRequests, p.Status, p.Errors, requests, okStatus)
	}
	if p.AcceptedRows != want {
		t.Errorf("%s: accepted rows %d, want %d", p.Target, p.AcceptedRows, want)
	}
	if p.Latency.Count != requests || p.Latency.P50 <= 0 || p.Latency.P50 > p.Latency.P99 || p.Latency.P99 > p.Latency.Max {
		t.Errorf("%s: latency %+v inconsistent", p.Target, p.Latency)
	}
	if !wantQueryable {
		return
	}
	if p.Queryable != want || !p.AllQueryable || p.EndToEndRowsS <= 0 || p.Freshness.Count == 0 {
		t.Errorf("%s: queryable %d all %t e2e %.0f rows/s freshness %+v; want %d rows queryable", p.Target, p.Queryable, p.AllQueryable, p.EndToEndRowsS, p.Freshness, want)
	}
}

func TestBenchIngestAgainstRealGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the gateway")
	}
	bin := buildGateway(t)
	const requests, rows = 8, 40

	t.Run("chdb", func(t *testing.T) {
		lib := testsvc.CHDBLib(t)
		url, ops, key := startGateway(t, bin, "store:\n  backend: chdb\n", "CHDB_LIB_PATH="+lib)
		rep := runBenchJSON(t, "--url", url, "--ops-url", ops, "--table", "bench_chdb", "--create", "--operator-key-file", key, "--clients", "3",
			"--rows", strconv.Itoa(rows), "--requests", strconv.Itoa(requests), "--duration", "30s", "--settle", "30s")
		if len(rep.Phases) != 1 {
			t.Fatalf("phases %+v", rep.Phases)
		}
		p := rep.Phases[0]
		// Counting goes through POST /v1/query; until the gateway serves it the tool says so.
		countable := p.Queryable >= 0
		if !countable {
			t.Logf("gateway rows not counted: %s", p.Note)
		}
		checkPhase(t, p, http.StatusAccepted, requests, rows, countable)
		if rep.GatewayRSSBytes < 1<<20 || len(rep.Failed) != 0 {
			t.Errorf("gateway RSS %d bytes, failed checks %v; want the RSS read from %s/metrics and no failure", rep.GatewayRSSBytes, rep.Failed, ops)
		}
	})

	t.Run("clickhouse", func(t *testing.T) {
		ch := testsvc.ClickHouseServer(t)
		if ch.HTTPAddr == "" {
			testsvc.Missing(t, "ClickHouse HTTP address unknown (set WH_TEST_CLICKHOUSE_HTTP_ADDR)")
		}
		db := testsvc.UniqueName(t, "bench")
		if _, err := ch.Query(t.Context(), "CREATE DATABASE "+db); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = ch.Query(t.Context(), "DROP DATABASE IF EXISTS "+db) })
		url, _, key := startGateway(t, bin, fmt.Sprintf("store:\n  backend: clickhouse\n  clickhouse:\n    addrs: [%s]\n    http_addrs: [%s]\n    database: %s\n", ch.NativeAddr, ch.HTTPAddr, db))
		rep := runBenchJSON(t, "--url", url, "--table", "ev", "--database", db, "--create", "--operator-key-file", key, "--clients", "3",
			"--rows", strconv.Itoa(rows), "--requests", strconv.Itoa(requests), "--format", "json", "--gzip",
			"--duration", "30s", "--settle", "30s", "--clickhouse-http", ch.HTTPAddr,
			"--direct", "clickhouse-http="+ch.HTTPAddr, "--direct", "native="+ch.NativeAddr)
		if len(rep.Phases) != 3 {
			t.Fatalf("want gateway and two direct phases, got %+v", rep.Phases)
		}
		checkPhase(t, rep.Phases[0], http.StatusAccepted, requests, rows, true)
		checkPhase(t, rep.Phases[1], http.StatusOK, requests, rows, true)
		checkPhase(t, rep.Phases[2], http.StatusOK, requests, rows, true)
		// Each direct request is its own insert (its own part); the gateway batches, so it runs
		// between one insert and one per request.
		for i, p := range rep.Phases {
			lo, hi := int64(requests), int64(requests)
			if i == 0 {
				lo = 1
			}
			if p.Inserts < lo || p.Inserts > hi || p.Parts < 1 || p.Parts > hi {
				t.Errorf("%s: %d inserts, %d active parts; want inserts in %d..%d and 1..%d parts", p.Target, p.Inserts, p.Parts, lo, hi, hi)
			}
		}
		// The counts are the server's own: check one directly.
		got, err := ch.Query(t.Context(), "SELECT count() FROM "+db+".ev_direct_native")
		if err != nil || strings.TrimSpace(got) != strconv.Itoa(requests*rows) {
			t.Errorf("direct native table holds %q rows (%v), want %d", got, err, requests*rows)
		}
	})
}

// TestBenchFailsAgainstAClosedPort: every request refused is a failed run (exit 1), reported as
// failed requests with no successful request rate — not thousands of "requests per second".
func TestBenchFailsAgainstAClosedPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	var out, errb bytes.Buffer
	code := runBench(t.Context(), []string{"ingest", "--json", "--quiet", "--url", "http://" + addr, "--ops-url", "",
		"--clients", "2", "--requests", "20", "--duration", "10s", "--settle", "1s"}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "FAILED") {
		t.Fatalf("exit %d, stderr %q; want 1 and FAILED", code, errb.String())
	}
	var rep bench.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out.String())
	}
	p := rep.Phases[0]
	if p.Requests != 20 || p.FailedRequests != 20 || p.OKRequests != 0 || p.RequestsPerS != 0 || len(rep.Failed) == 0 {
		t.Fatalf("requests %d failed %d ok %d ok req/s %.0f checks %v; want 20 failed, 0 req/s and a failed check",
			p.Requests, p.FailedRequests, p.OKRequests, p.RequestsPerS, rep.Failed)
	}
}
