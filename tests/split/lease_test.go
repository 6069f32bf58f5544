package split

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// leaseSample is what every sweeper reported at one moment: instance → token, holders only.
type leaseSample struct {
	At      time.Time
	Holders map[string]int64
}

// leaseMonitor polls every sweeper's /metrics every 100 ms and keeps the samples.
type leaseMonitor struct {
	mu      sync.Mutex
	samples []leaseSample
	stop    func()
}

// watchLeases starts polling the sweepers until the returned monitor is stopped (or the test ends).
func watchLeases(t *testing.T, sweepers []*proc) *leaseMonitor {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	m := &leaseMonitor{}
	client := &http.Client{Timeout: time.Second}
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			// Both sweepers are asked at once, so that a sample is close to one moment.
			s := leaseSample{At: time.Now(), Holders: map[string]int64{}}
			var mu sync.Mutex
			var each sync.WaitGroup
			for _, p := range sweepers {
				each.Go(func() {
					held, token, ok := leaseMetrics(ctx, client, p.Ops)
					if ok && held {
						mu.Lock()
						s.Holders[p.Name] = token
						mu.Unlock()
					}
				})
			}
			each.Wait()
			m.mu.Lock()
			m.samples = append(m.samples, s)
			m.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	var once sync.Once
	m.stop = func() { once.Do(func() { cancel(); wg.Wait(); client.CloseIdleConnections() }) }
	t.Cleanup(m.stop)
	return m
}

// leaseMetrics reads wavehouse_sweeper_lease_held and _token from one ops listener; ok is false
// when the process does not answer (a killed sweeper holds nothing).
func leaseMetrics(ctx context.Context, client *http.Client, ops string) (held bool, token int64, ok bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ops+"/metrics", nil)
	if err != nil {
		return false, 0, false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, 0, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, 0, false
	}
	var sawHeld bool
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, found := strings.Cut(sc.Text(), " ")
		if !found {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name = name[:i] // the lease gauges carry an instance_id label
		}
		switch name {
		case "wavehouse_sweeper_lease_held":
			held, sawHeld = v == 1, true
		case "wavehouse_sweeper_lease_token":
			token = int64(v)
		}
	}
	return held, token, sawHeld && sc.Err() == nil
}

// holder returns the current holder in the latest sample, or "".
func (m *leaseMonitor) holder() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.samples) == 0 {
		return ""
	}
	for name := range m.samples[len(m.samples)-1].Holders {
		return name
	}
	return ""
}

// term is one observed tenure: who held the lease with which token.
type term struct {
	Holder string
	Token  int64
}

// check stops the monitor and requires at most one holder in every sample, and strictly
// increasing tokens across the observed terms; it returns the terms in order.
func (m *leaseMonitor) check(t *testing.T) []term {
	t.Helper()
	m.stop()
	m.mu.Lock()
	defer m.mu.Unlock()
	var terms []term
	var maxGap time.Duration
	for i, s := range m.samples {
		if i > 0 {
			maxGap = max(maxGap, s.At.Sub(m.samples[i-1].At))
		}
		if len(s.Holders) > 1 {
			t.Errorf("%s: %d sweepers report holding the lease at once: %v", s.At.Format(time.RFC3339Nano), len(s.Holders), s.Holders)
		}
		for name, token := range s.Holders {
			if token <= 0 {
				t.Errorf("%s: %s holds the lease with token %d", s.At.Format(time.RFC3339Nano), name, token)
			}
			cur := term{name, token}
			if len(terms) > 0 && terms[len(terms)-1] == cur {
				continue
			}
			if len(terms) > 0 && token <= terms[len(terms)-1].Token {
				t.Errorf("term %+v follows %+v: fencing tokens must increase across takeovers", cur, terms[len(terms)-1])
			}
			terms = append(terms, cur)
		}
	}
	t.Logf("%d lease samples (longest gap %s), terms %+v", len(m.samples), maxGap.Round(time.Millisecond), terms)
	return terms
}
