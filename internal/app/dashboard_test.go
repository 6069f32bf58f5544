package app

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const dashboardPath = "../../deployments/grafana/wavehouse.json"

// referenceTypes reads the family names and types from the generated list in docs/metrics.md.
func referenceTypes(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(metricsDocPath)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_:][a-z0-9_:]*)` \\| ([a-z]+) \\|").FindAllStringSubmatch(string(raw), -1) {
		out[m[1]] = m[2]
	}
	if len(out) == 0 {
		t.Fatalf("%s lists no metric", metricsDocPath)
	}
	return out
}

var (
	promString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promMatchers = regexp.MustCompile(`\{[^{}]*\}`)
	promRange    = regexp.MustCompile(`\[[^\[\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promToken    = regexp.MustCompile(`\$?[a-zA-Z_:][a-zA-Z0-9_:]*|[0-9][0-9a-zA-Z_.]*`)
	promKeywords = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan", "atan2"}
)

// promMetricNames returns the metric names a PromQL expression selects: label matchers, strings,
// ranges and grouping labels are removed first; of the identifiers left, those followed by "("
// (functions, aggregations), keywords, numbers and $variables are not metrics.
func promMetricNames(expr string) []string {
	s := promString.ReplaceAllString(expr, `""`)
	s = promMatchers.ReplaceAllString(s, " ")
	s = promRange.ReplaceAllString(s, " ")
	s = promGrouping.ReplaceAllString(s, " ")
	var names []string
	for _, loc := range promToken.FindAllStringIndex(s, -1) {
		tok := s[loc[0]:loc[1]]
		if tok[0] == '$' || tok[0] >= '0' && tok[0] <= '9' || slices.Contains(promKeywords, strings.ToLower(tok)) {
			continue
		}
		if rest := strings.TrimLeft(s[loc[1]:], " \t\n"); strings.HasPrefix(rest, "(") {
			continue
		}
		names = append(names, tok)
	}
	return names
}

// known reports whether name is a family of the reference, or a histogram's or summary's
// _bucket, _sum or _count series.
func known(ref map[string]string, name string) bool {
	if _, ok := ref[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			switch ref[base] {
			case "histogram":
				return true
			case "summary":
				return suffix != "_bucket"
			}
		}
	}
	return false
}

// exprs returns every "expr" string anywhere in the dashboard JSON.
func exprs(v any, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "expr" {
				*out = append(*out, s)
				continue
			}
			exprs(x, out)
		}
	case []any:
		for _, x := range v {
			exprs(x, out)
		}
	}
}

// TestDashboardQueriesNameDocumentedMetrics: every query of the Grafana dashboard selects at
// least one metric, and every metric it selects is a family of docs/metrics.md (itself checked
// against the registries by TestMetricsReference).
func TestDashboardQueriesNameDocumentedMetrics(t *testing.T) {
	ref := referenceTypes(t)
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	var all []string
	exprs(dash, &all)
	if len(all) < 10 {
		t.Fatalf("%s has %d queries", dashboardPath, len(all))
	}
	for _, e := range all {
		names := promMetricNames(e)
		if len(names) == 0 {
			t.Errorf("query selects no metric: %s", e)
		}
		for _, n := range names {
			if !known(ref, n) {
				t.Errorf("query names %s, which docs/metrics.md does not list: %s", n, e)
			}
		}
	}
}

func TestPromMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`sum by (route, status_class) (rate(wavehouse_http_requests_total{listener="api",route!="/v1/x {y}"}[$__rate_interval]))`: {"wavehouse_http_requests_total"},
		`histogram_quantile(0.99, sum by (le) (rate(a_bucket[5m]))) > 0.5 and on (job) b offset 5m`:                               {"a_bucket", "b"},
		`max by (tenant) (q / (budget > 0))`:                   {"q", "budget"},
		`sum(rate(x[1m])) / ignoring(code) group_left sum (y)`: {"x", "y"},
	} {
		if got := promMetricNames(expr); !slices.Equal(got, want) {
			t.Errorf("promMetricNames(%s) = %q, want %q", expr, got, want)
		}
	}
	ref := map[string]string{"h": "histogram", "s": "summary", "c": "counter"}
	for name, want := range map[string]bool{"h": true, "h_bucket": true, "h_count": true, "s_sum": true, "s_bucket": false, "c": true, "c_count": false, "nope": false} {
		if got := known(ref, name); got != want {
			t.Errorf("known(%s) = %v, want %v", name, got, want)
		}
	}
}
