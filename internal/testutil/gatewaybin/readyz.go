package gatewaybin

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// Readiness is the ops listener's /readyz answer.
type Readiness struct {
	Code     int               `json:"-"`
	Ready    bool              `json:"ready"`
	Status   string            `json:"status"`
	Reasons  []string          `json:"reasons"`
	Degraded map[string]string `json:"degraded"`
}

// Readyz fetches the process's /readyz; a transport or decoding error fails the test.
func (p *Process) Readyz(t testing.TB) Readiness {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(p.OpsURL() + "/readyz")
	if err != nil {
		t.Fatalf("GET /readyz: %v", err)
	}
	defer resp.Body.Close()
	var r Readiness
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("/readyz body: %v", err)
	}
	r.Code = resp.StatusCode
	return r
}
