package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// checks returns the run's own checks that did not hold: every phase got at least one 2xx, no
// more failed requests than Config.MaxErrorRatio allows, and, where rows were counted, every
// accepted row queryable within Config.Settle.
func (r *Report) checks() []string {
	var failed []string
	for _, p := range r.Phases {
		if p.Requests == 0 {
			failed = append(failed, fmt.Sprintf("%s: no request was sent", p.Target))
			continue
		}
		if p.OKRequests == 0 {
			failed = append(failed, fmt.Sprintf("%s: none of %d requests succeeded", p.Target, p.Requests))
			continue
		}
		if ratio := float64(p.FailedRequests) / float64(p.Requests); ratio > r.Config.MaxErrorRatio {
			failed = append(failed, fmt.Sprintf("%s: %d of %d requests failed (%.2f%%, allowed %.2f%%)",
				p.Target, p.FailedRequests, p.Requests, 100*ratio, 100*r.Config.MaxErrorRatio))
		}
		if p.Queryable >= 0 && !p.AllQueryable {
			failed = append(failed, fmt.Sprintf("%s: only %d of %d accepted rows were queryable within %s",
				p.Target, p.Queryable, p.AcceptedRows, r.Config.Settle))
		}
	}
	return failed
}

// gatewayRSS reads process_resident_memory_bytes from the gateway's /metrics; -1 when it
// cannot.
func gatewayRSS(ctx context.Context, client *http.Client, opsURL string) int64 {
	v, ok := opsMetric(ctx, client, opsURL, "process_resident_memory_bytes")
	if !ok {
		return -1
	}
	return int64(v)
}

// gatewayCPU returns a function reading the gateway's process_cpu_seconds_total (-1 when it
// cannot), or nil without an ops listener.
func gatewayCPU(client *http.Client, opsURL string) func(context.Context) float64 {
	if opsURL == "" {
		return nil
	}
	return func(ctx context.Context) float64 {
		v, ok := opsMetric(ctx, client, opsURL, "process_cpu_seconds_total")
		if !ok {
			return -1
		}
		return v
	}
}

// opsMetric reads the unlabelled metric name from the gateway's /metrics.
func opsMetric(ctx context.Context, client *http.Client, opsURL, name string) (float64, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(opsURL, "/")+"/metrics", nil)
	if err != nil {
		return 0, false
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, false
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}
