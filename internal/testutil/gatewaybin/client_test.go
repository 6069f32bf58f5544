package gatewaybin

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/tbtest"
)

// TestClient sends through Client to a server that echoes what it received: path, query,
// headers and body arrive unchanged, and the whole answer (status, headers, body) comes back,
// with the error-body helpers reading the gateway's JSON error shape.
func TestClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Echo-Path", r.URL.RequestURI())
		w.Header().Set("X-Echo-Method", r.Method)
		w.Header().Set("X-Echo-Type", r.Header.Get("Content-Type"))
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"code":"x.conflict","error":"busy","retryable":true,"details":{"n":3}}` + "\n"))
			return
		}
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	c := Client{Base: srv.URL, HTTP: srv.Client()}

	r := c.Do(t, http.MethodPost, "/v1/ingest/t?wait=committed", http.Header{"Content-Type": {"application/x-ndjson"}}, []byte(`{"n":1}`))
	if r.Status != http.StatusOK || !r.OK() || string(r.Body) != `{"n":1}` {
		t.Fatalf("echo: %s", r)
	}
	if got := r.Header.Get("X-Echo-Path"); got != "/v1/ingest/t?wait=committed" {
		t.Errorf("path arrived as %q", got)
	}
	if got := r.Header.Get("X-Echo-Method"); got != http.MethodPost {
		t.Errorf("method arrived as %q", got)
	}
	if got := r.Header.Get("X-Echo-Type"); got != "application/x-ndjson" {
		t.Errorf("Content-Type arrived as %q", got)
	}
	var v struct{ N json.Number }
	r.JSON(t, &v)
	if v.N != "1" {
		t.Errorf("JSON decoded n as %q", v.N)
	}
	if r.Code() != "" {
		t.Errorf("Code of a success body: %q, want empty", r.Code())
	}

	f, err := c.Try(t.Context(), http.MethodGet, "/fail", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.OK() || f.Status != http.StatusConflict {
		t.Fatalf("error answer: %s", f)
	}
	if got, want := f.String(), `409 {"code":"x.conflict","error":"busy","retryable":true,"details":{"n":3}}`; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	e := f.APIError()
	if f.Code() != "x.conflict" || e.Error != "busy" || !e.Retryable || string(e.Details) != `{"n":3}` {
		t.Errorf("APIError() = %+v", e)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Try(ctx, http.MethodGet, "/", nil, nil); err == nil {
		t.Error("Try with a cancelled context succeeded")
	}
	down := Client{Base: "http://127.0.0.1:1", HTTP: srv.Client()}
	if _, err := down.Try(t.Context(), http.MethodGet, "/x", nil, nil); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("Try to a closed port: %v, want an error naming the address", err)
	}
	if msg := tbtest.FatalOf(t, func(tb testing.TB) { down.Do(tb, http.MethodPut, "/v1/x", nil, nil) }); !strings.Contains(msg, "PUT http://127.0.0.1:1/v1/x: ") {
		t.Errorf("Do to a closed port failed the test with %q, want the method and URL", msg)
	}
}
