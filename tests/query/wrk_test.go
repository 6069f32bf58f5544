package query_test

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// runWrk drives url with wrk (a C load generator, one thread, c connections) for the
// benchmark's -benchtime when it is a duration (else 3s), and reports wrk's own p50, p99 and
// requests per second. It is the cross-check that the Go load generator measures the gateway
// and not itself; it is skipped when wrk is not installed. Every answer must be 2xx.
func runWrk(b *testing.B, url, body string, c int) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		b.Skip("wrk is not installed (apt-get install -y wrk)")
	}
	d := 3 * time.Second
	if f := flag.Lookup("test.benchtime"); f != nil {
		if v, err := time.ParseDuration(f.Value.String()); err == nil {
			d = v
		}
	}
	script := filepath.Join(b.TempDir(), "post.lua")
	lua := fmt.Sprintf("wrk.method = \"POST\"\nwrk.body = %q\nwrk.headers[\"Content-Type\"] = \"application/json\"\n", body)
	if err := os.WriteFile(script, []byte(lua), 0o600); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	out, err := exec.CommandContext(b.Context(), wrk, "-t1", "-c"+strconv.Itoa(c), "-d"+strconv.Itoa(int(d.Seconds()))+"s",
		"--latency", "-s", script, url).CombinedOutput()
	b.StopTimer()
	if err != nil {
		b.Fatalf("wrk: %v\n%s", err, out)
	}
	res, err := parseWrk(out)
	if err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	if res.non2xx > 0 {
		b.Fatalf("wrk: %d answers were not 2xx\n%s", res.non2xx, out)
	}
	b.ReportMetric(res.p50.Seconds()*1000, "p50-ms")
	b.ReportMetric(res.p99.Seconds()*1000, "p99-ms")
	b.ReportMetric(res.rps, "req/s")
}

type wrkResult struct {
	p50, p99 time.Duration
	rps      float64
	non2xx   int
}

// parseWrk reads the "Latency Distribution" percentiles, "Requests/sec" and "Non-2xx or 3xx
// responses" of wrk --latency's report.
func parseWrk(out []byte) (wrkResult, error) {
	var r wrkResult
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && (f[0] == "50%" || f[0] == "99%"):
			d, err := time.ParseDuration(strings.Replace(f[1], "us", "µs", 1))
			if err != nil {
				return r, fmt.Errorf("wrk percentile %q: %w", f[1], err)
			}
			if f[0] == "50%" {
				r.p50 = d
			} else {
				r.p99 = d
			}
		case len(f) == 2 && f[0] == "Requests/sec:":
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return r, fmt.Errorf("wrk rate %q: %w", f[1], err)
			}
			r.rps = v
		case len(f) == 5 && f[0] == "Non-2xx":
			r.non2xx, _ = strconv.Atoi(f[4])
		}
	}
	if r.p50 == 0 || r.rps == 0 {
		return r, fmt.Errorf("wrk: no latency distribution or rate in its report")
	}
	return r, nil
}
