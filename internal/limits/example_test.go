package limits_test

import (
	"log/slog"
	"net/http"

	"github.com/wavehouse/wavehouse/internal/auth"
	"github.com/wavehouse/wavehouse/internal/limits"
	"github.com/wavehouse/wavehouse/internal/settings"
)

// Example shows the wiring of the API: settings feed auth and limits; every route is registered
// through auth.Handle (scope and table rules from auth.Routes) with the request limit inside it.
func Example() {
	mgr, err := settings.New(settings.Config{Dir: ""}, settings.Deps{Log: slog.Default()})
	if err != nil {
		return
	}
	authn, err := auth.New(auth.Config{AllowAnonymous: true}, auth.Deps{Settings: mgr, Log: slog.Default()})
	if err != nil {
		return
	}
	lim, err := limits.New(limits.Config{}, limits.Deps{Settings: mgr})
	if err != nil {
		return
	}
	mux := http.NewServeMux()
	ingest := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := auth.FromContext(r.Context())
		rows := 100 // counted while decoding the body
		if d := lim.AllowRows(r.Context(), p.Tenant, p.KeyID, rows); !d.Allowed {
			limits.Reject(w, d)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	_ = authn.Handle(mux, "POST /v1/ingest/{table}", lim.Requests(ingest))
	_ = authn.Handle(mux, "POST /v1/ops/settings/reload", mgr.ReloadHandler())
}
