package limits

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/settings"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clock is an injected clock safe for concurrent use.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type fixture struct {
	dir   string
	mgr   *settings.Manager
	lim   *Limiter
	clock *clock
}

func writeTenant(t testing.TB, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, "tenants", name+".yaml")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

const (
	hashA = "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
	hashB = "fcde2b2edba56bf408601fb721fe9b5c338d10ee429ea04fae5511b68fbf8fb9"
)

func newFixture(t testing.TB, cfg Config, tenants map[string]string) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), clock: &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}}
	for n, c := range tenants {
		writeTenant(t, f.dir, n, c)
	}
	mgr, err := settings.New(settings.Config{Dir: f.dir}, settings.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	f.mgr = mgr
	f.lim, err = New(cfg, Deps{Settings: mgr, Now: f.clock.now, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) reload(t *testing.T) {
	t.Helper()
	if _, err := f.mgr.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// serve runs one request through the Requests middleware as principal p.
func (f *fixture) serve(p auth.Principal) *httptest.ResponseRecorder {
	h := f.lim.Requests(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	r := httptest.NewRequest("POST", "/v1/ingest/events", nil)
	r = r.WithContext(auth.WithPrincipal(r.Context(), p))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestOverRateGets429WithHeaders(t *testing.T) {
	f := newFixture(t, Config{}, map[string]string{"acme": "database: acme\nlimits: {requests_per_second: 2, burst: 3}\n"})
	p := auth.Principal{Tenant: "acme"}
	for i := range 3 {
		w := f.serve(p)
		if w.Code != http.StatusNoContent {
			t.Fatalf("request %d: %d", i, w.Code)
		}
		if got := w.Header().Get("RateLimit-Remaining"); got != strconv.Itoa(2-i) {
			t.Fatalf("request %d: RateLimit-Remaining %q, want %d", i, got, 2-i)
		}
		if w.Header().Get("RateLimit-Limit") != "3" {
			t.Fatalf("RateLimit-Limit %q", w.Header().Get("RateLimit-Limit"))
		}
	}
	w := f.serve(p)
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("over the burst: %d", w.Code)
	}
	var body map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body["code"] != "limits.requests" || body["retryable"] != true {
		t.Fatalf("body %s", w.Body.String())
	}
	h := w.Header()
	if h.Get("Retry-After") != "1" || h.Get("RateLimit-Limit") != "3" || h.Get("RateLimit-Remaining") != "0" || h.Get("RateLimit-Reset") != "2" {
		t.Fatalf("headers %v", h)
	}
	// Half a second later one token (rate 2/s) has been earned.
	f.clock.advance(500 * time.Millisecond)
	if w := f.serve(p); w.Code != http.StatusNoContent {
		t.Fatalf("after refill: %d", w.Code)
	}
	if w := f.serve(p); w.Code != http.StatusTooManyRequests {
		t.Fatalf("after spending the refill: %d", w.Code)
	}
	if n := counterValue(f.lim.refused.WithLabelValues("requests")); n != 2 {
		t.Fatalf("wavehouse_limits_refused_total{kind=requests} = %v, want 2", n)
	}
}

func TestTenantsDoNotShareBuckets(t *testing.T) {
	f := newFixture(t, Config{}, map[string]string{
		"acme":   "database: acme\nlimits: {requests_per_second: 1, rows_per_second: 10}\n",
		"globex": "database: globex\nlimits: {requests_per_second: 1, rows_per_second: 10}\n",
	})
	ctx := t.Context()
	if !f.lim.AllowRequest(ctx, "acme", "").Allowed || f.lim.AllowRequest(ctx, "acme", "").Allowed {
		t.Fatal("acme: want one request then a refusal")
	}
	for range 5 {
		f.lim.AllowRequest(ctx, "acme", "") // keep hammering
	}
	if !f.lim.AllowRequest(ctx, "globex", "").Allowed {
		t.Fatal("globex refused because acme is over its rate")
	}
	if !f.lim.AllowRows(ctx, "acme", "", 10).Allowed || f.lim.AllowRows(ctx, "acme", "", 1).Allowed {
		t.Fatal("acme rows: want 10 then a refusal")
	}
	if !f.lim.AllowRows(ctx, "globex", "", 10).Allowed {
		t.Fatal("globex rows refused because of acme")
	}
	// A tenant without limits (or unknown) is never limited and gets no headers.
	if d := f.lim.AllowRequest(ctx, "nobody", ""); !d.Allowed || d.Limited {
		t.Fatalf("unknown tenant: %+v", d)
	}
}

func TestPerKeyLimitRefundsTenant(t *testing.T) {
	f := newFixture(t, Config{}, map[string]string{
		"acme": "database: acme\nlimits: {requests_per_second: 3}\nkeys:\n" +
			"  - {id: aaaaaaaaaaaa, hash: " + hashA + ", scopes: [ingest], limits: {requests_per_second: 1}}\n" +
			"  - {id: bbbbbbbbbbbb, hash: " + hashB + ", scopes: [ingest]}\n",
	})
	ctx := t.Context()
	if !f.lim.AllowRequest(ctx, "acme", "aaaaaaaaaaaa").Allowed {
		t.Fatal("first request of the limited key refused")
	}
	for range 3 {
		if d := f.lim.AllowRequest(ctx, "acme", "aaaaaaaaaaaa"); d.Allowed || d.Limit != 1 {
			t.Fatalf("limited key over its own rate: %+v", d)
		}
	}
	// The key's refusals gave the tenant's tokens back: the other key still has 2 of 3.
	for i := range 2 {
		if !f.lim.AllowRequest(ctx, "acme", "bbbbbbbbbbbb").Allowed {
			t.Fatalf("other key refused at request %d: refused requests drained the tenant", i)
		}
	}
	if f.lim.AllowRequest(ctx, "acme", "bbbbbbbbbbbb").Allowed {
		t.Fatal("tenant limit not applied to the second key")
	}
}

func TestLimitChangeAppliesOnReload(t *testing.T) {
	f := newFixture(t, Config{}, map[string]string{"acme": "database: acme\nlimits: {requests_per_second: 1}\n"})
	ctx := t.Context()
	f.lim.AllowRequest(ctx, "acme", "")
	if f.lim.AllowRequest(ctx, "acme", "").Allowed {
		t.Fatal("want refusal at 1/s")
	}
	writeTenant(t, f.dir, "acme", "database: acme\nlimits: {requests_per_second: 100, burst: 100}\n")
	f.reload(t)
	// The new limit applies from the next check on; time before it accrued at the old rate.
	if d := f.lim.AllowRequest(ctx, "acme", ""); d.Limit != 100 {
		t.Fatalf("first check after reload: %+v", d)
	}
	f.clock.advance(100 * time.Millisecond) // earns 10 tokens at the new rate
	for i := range 10 {
		if d := f.lim.AllowRequest(ctx, "acme", ""); !d.Allowed || d.Limit != 100 {
			t.Fatalf("request %d after raising the limit: %+v", i, d)
		}
	}
	writeTenant(t, f.dir, "acme", "database: acme\n")
	f.reload(t)
	for range 200 {
		if d := f.lim.AllowRequest(ctx, "acme", ""); !d.Allowed || d.Limited {
			t.Fatalf("limit removed but still limited: %+v", d)
		}
	}
}

func TestRowsOverBurstNeverPass(t *testing.T) {
	f := newFixture(t, Config{}, map[string]string{"acme": "database: acme\nlimits: {rows_per_second: 100, rows_burst: 500}\n"})
	d := f.lim.AllowRows(t.Context(), "acme", "", 501)
	if d.Allowed || !d.Never {
		t.Fatalf("501 rows over a burst of 500: %+v", d)
	}
	w := httptest.NewRecorder()
	Reject(w, d)
	var body map[string]any
	_ = json.Unmarshal(w.Body.Bytes(), &body)
	if w.Code != http.StatusTooManyRequests || body["retryable"] != false || body["code"] != "limits.rows" || w.Header().Get("Retry-After") != "" {
		t.Fatalf("reject: %d %v %v", w.Code, body, w.Header())
	}
	if !f.lim.AllowRows(t.Context(), "acme", "", 500).Allowed {
		t.Fatal("the refused request consumed tokens")
	}
	d = f.lim.AllowRows(t.Context(), "acme", "", 100)
	if d.Allowed || d.RetryAfter != time.Second {
		t.Fatalf("100 rows with an empty bucket at 100/s: %+v", d)
	}
}

func TestWaitBoundedByDeadline(t *testing.T) {
	f := newFixture(t, Config{MaxWait: time.Hour}, map[string]string{"acme": "database: acme\nlimits: {requests_per_second: 1}\n"})
	f.lim.AllowRequest(t.Context(), "acme", "")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	d := f.lim.AllowRequest(ctx, "acme", "")
	if d.Allowed || d.RetryAfter != time.Second || time.Since(start) > 10*time.Second {
		t.Fatalf("decision %+v after %v: want an immediate refusal (the wait exceeds the deadline)", d, time.Since(start))
	}
}

func TestShortWaitIsTaken(t *testing.T) {
	// A real clock: the second request needs 1ms, well within MaxWait.
	dir := t.TempDir()
	writeTenant(t, dir, "acme", "database: acme\nlimits: {requests_per_second: 1000}\n")
	mgr, err := settings.New(settings.Config{Dir: dir}, settings.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := New(Config{MaxWait: time.Minute}, Deps{Settings: mgr})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1100 {
		if !lim.AllowRequest(t.Context(), "acme", "").Allowed {
			t.Fatalf("request %d refused although waiting was allowed", i)
		}
	}
}

func TestConcurrentQueries(t *testing.T) {
	f := newFixture(t, Config{}, map[string]string{
		"acme":   "database: acme\nlimits: {max_concurrent_queries: 2}\n",
		"globex": "database: globex\nlimits: {max_concurrent_queries: 1}\n",
	})
	ctx := t.Context()
	r1, d1 := f.lim.AcquireQuery(ctx, "acme")
	r2, d2 := f.lim.AcquireQuery(ctx, "acme")
	if !d1.Allowed || !d2.Allowed || d2.Remaining != 0 {
		t.Fatalf("two slots: %+v %+v", d1, d2)
	}
	_, d3 := f.lim.AcquireQuery(ctx, "acme")
	if d3.Allowed || d3.Kind != KindQueries || d3.RetryAfter <= 0 {
		t.Fatalf("third query: %+v", d3)
	}
	rg, dg := f.lim.AcquireQuery(ctx, "globex")
	if !dg.Allowed {
		t.Fatal("globex refused because acme is full")
	}
	rg()
	r1()
	r1() // a second release does nothing
	r4, d4 := f.lim.AcquireQuery(ctx, "acme")
	if !d4.Allowed {
		t.Fatal("slot not freed by release")
	}
	if _, d := f.lim.AcquireQuery(ctx, "acme"); d.Allowed {
		t.Fatal("double release freed two slots")
	}
	r2()
	r4()
}

func TestQueryWaitBoundedByDeadline(t *testing.T) {
	f := newFixture(t, Config{QueryWait: time.Hour}, map[string]string{"acme": "database: acme\nlimits: {max_concurrent_queries: 1}\n"})
	release, _ := f.lim.AcquireQuery(t.Context(), "acme")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, d := f.lim.AcquireQuery(ctx, "acme"); d.Allowed {
		t.Fatal("acquired a slot that is held")
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("waited %v past a 30ms deadline", el)
	}
	// A waiting query gets the slot as soon as it is released.
	got := make(chan Decision, 1)
	go func() {
		r, d := f.lim.AcquireQuery(t.Context(), "acme")
		r()
		got <- d
	}()
	release()
	if d := <-got; !d.Allowed {
		t.Fatalf("waiter refused: %+v", d)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{MaxWait: -1, QueryWait: -1}).Validate(); err == nil {
		t.Fatal("negative waits accepted")
	}
	if _, err := New(Config{}, Deps{}); err == nil {
		t.Fatal("missing settings accepted")
	}
}

// counterValue reads a counter's current value.
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

// TestQueryDefaults checks the boot defaults of the query limits: a tenant that sets none gets
// the default concurrency gate, a tenant absent from the settings (the anonymous one) too, -1
// lifts it, a tenant's own value wins, and a reload applies a changed value to the next query.
func TestQueryDefaults(t *testing.T) {
	defaults := settings.Limits{MaxConcurrentQueries: 1, MaxResultRows: 100, MaxExecutionTime: settings.Duration(time.Second)}
	f := newFixture(t, Config{Defaults: defaults}, map[string]string{
		"plain": "database: plain\n",
		"free":  "database: free\nlimits: {max_concurrent_queries: -1, max_result_rows: -1}\n",
		"own":   "database: own\nlimits: {max_concurrent_queries: 2, max_result_rows: 7, max_execution_time: 90s}\n",
	})
	ctx := t.Context()
	for _, tenant := range []string{"plain", "default"} {
		r, d := f.lim.AcquireQuery(ctx, tenant)
		if !d.Allowed || d.Limit != 1 {
			t.Fatalf("%s: first query: %+v, want the default gate of 1", tenant, d)
		}
		if _, d := f.lim.AcquireQuery(ctx, tenant); d.Allowed {
			t.Fatalf("%s: a second concurrent query passed the default gate of 1", tenant)
		}
		r()
	}
	for range 3 {
		if _, d := f.lim.AcquireQuery(ctx, "free"); !d.Allowed || d.Limited {
			t.Fatalf("free: %+v, want no gate with max_concurrent_queries: -1", d)
		}
	}
	if got := f.lim.Limits("free"); got.MaxResultRows != 0 || got.MaxExecutionTime != settings.Duration(time.Second) {
		t.Fatalf("free: %+v, want no row limit and the default time limit", got)
	}
	if got := f.lim.Limits("own"); got.MaxResultRows != 7 || got.MaxExecutionTime != settings.Duration(90*time.Second) || got.MaxConcurrentQueries != 2 {
		t.Fatalf("own: %+v", got)
	}
	if got := f.lim.Limits("default"); got.MaxResultRows != 100 {
		t.Fatalf("anonymous tenant: %+v, want the defaults", got)
	}
	held, _ := f.lim.AcquireQuery(ctx, "default") // held across the reload
	writeTenant(t, f.dir, "plain", "database: plain\nlimits: {max_concurrent_queries: 3, max_result_rows: 5}\n")
	f.reload(t)
	if got := f.lim.Limits("plain"); got.MaxResultRows != 5 {
		t.Fatalf("after reload: %+v, want max_result_rows 5", got)
	}
	if _, d := f.lim.AcquireQuery(ctx, "plain"); d.Limit != 3 {
		t.Fatalf("after reload: %+v, want a gate of 3", d)
	}
	if _, d := f.lim.AcquireQuery(ctx, "default"); d.Allowed {
		t.Fatal("the anonymous tenant's gate was reset by a reload: a second query passed while one held its slot")
	}
	held()
	if _, d := f.lim.AcquireQuery(ctx, "default"); !d.Allowed {
		t.Fatalf("anonymous tenant after its query ended: %+v", d)
	}
}

func TestRejectNamesTheConcurrencyLimit(t *testing.T) {
	w := httptest.NewRecorder()
	Reject(w, Decision{Kind: KindQueries, Limited: true, Limit: 3, RetryAfter: time.Second})
	var body map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if w.Code != 429 || body["code"] != "limits.queries" || body["limit"] != "max_concurrent_queries" || body["value"] != 3.0 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
}
