package app

import (
	"regexp"
	"strings"
	"testing"
)

// TestHTTPMetricsLabelRoutesOnBothListeners: through the process's own listeners, requests are
// counted under the pattern they matched (never the table in the path), unknown paths share the
// unmatched route, and the ops listener is counted too.
func TestHTTPMetricsLabelRoutesOnBothListeners(t *testing.T) {
	a := startApp(t, testConfig(t))
	api, ops := "http://"+a.APIAddr(), "http://"+a.OpsAddr()
	const js = "application/json"
	for _, table := range []string{"route_a", "route_b"} {
		if r := opsCall(t, a, "POST", "/v1/ops/sql", `{"sql":"CREATE TABLE `+table+` (id UInt64) ENGINE = MergeTree ORDER BY id"}`); r.code != 200 {
			t.Fatalf("create: %d %s", r.code, r.raw)
		}
		if r := call(t, "POST", api+"/v1/ingest/"+table, js, `{"id":1}`); r.code != 202 {
			t.Fatalf("ingest: %d %s", r.code, r.raw)
		}
	}
	if r := call(t, "POST", api+"/v1/ingest/route_a", js, `{"id":"x"}`); r.code != 400 {
		t.Fatalf("bad row: %d %s", r.code, r.raw)
	}
	for _, p := range []string{"/nope/1", "/nope/2", "/v1/ingest"} {
		if r := call(t, "GET", api+p, "", ""); r.code != 404 && r.code != 405 {
			t.Fatalf("GET %s: %d", p, r.code)
		}
	}
	if code, _ := get(t, ops+"/readyz"); code != 200 {
		t.Fatalf("/readyz: %d", code)
	}
	_, metrics := get(t, ops+"/metrics")
	for series, want := range map[string]string{
		`listener="api",method="POST",route="/v1/ingest/{table}",status_class="2xx"`: "2",
		`listener="api",method="POST",route="/v1/ingest/{table}",status_class="4xx"`: "1",
		`listener="api",method="POST",route="/v1/ops/sql",status_class="2xx"`:        "2",
		`listener="api",method="GET",route="unmatched",status_class="4xx"`:           "3",
		`listener="ops",method="GET",route="/readyz",status_class="2xx"`:             "1",
	} {
		m := regexp.MustCompile(`(?m)^wavehouse_http_requests_total\{` + regexp.QuoteMeta(series) + `\} (\d+)$`).FindStringSubmatch(metrics)
		if m == nil || m[1] != want {
			t.Errorf("wavehouse_http_requests_total{%s} = %v, want %s", series, m, want)
		}
	}
	for _, leak := range []string{"route_a", "route_b", "/nope"} {
		for _, line := range strings.Split(metrics, "\n") {
			if strings.HasPrefix(line, "wavehouse_http_") && strings.Contains(line, leak) {
				t.Errorf("a request path reached a label: %s", line)
			}
		}
	}
}
