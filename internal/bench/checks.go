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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(opsURL, "/")+"/metrics", nil)
	if err != nil {
		return -1
	}
	resp, err := client.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return -1
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "process_resident_memory_bytes "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return -1
			}
			return int64(f)
		}
	}
	return -1
}
