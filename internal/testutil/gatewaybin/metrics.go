package gatewaybin

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// MetricSum scrapes ops (the base URL of an ops listener) and returns the sum of every sample of
// the metric family name (all label sets); 0 when the family has no sample yet.
func MetricSum(t testing.TB, ops, name string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ops+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scraping %s/metrics: %v", ops, err)
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || rest[0] != ' ' && rest[0] != '{' {
			continue // another family sharing the prefix
		}
		f := strings.Fields(line[strings.LastIndexByte(line, '}')+1:])
		if rest[0] == ' ' {
			f = strings.Fields(rest)
		}
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum += v
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s/metrics: %v", ops, err)
	}
	return sum
}
