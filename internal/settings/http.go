package settings

import (
	"errors"
	"net/http"

	"github.com/wavehouse/wavehouse/internal/httpx"
)

// ReloadHandler serves POST /v1/ops/settings/reload: 200 with the ReloadResult, or 422 with code
// settings.invalid and every finding when the directory is refused (the previous settings stay in
// force). It must be mounted behind the operator-key check.
func (m *Manager) ReloadHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, err := m.Reload(r.Context())
		var ie *InvalidError
		switch {
		case err == nil:
			httpx.WriteJSON(w, http.StatusOK, res)
		case errors.As(err, &ie):
			httpx.WriteError(w, httpx.Error{Status: http.StatusUnprocessableEntity, Code: "settings.invalid",
				Message: "settings refused; the previous settings stay in force", Details: ie.Findings})
		case errors.Is(err, ErrClosed):
			httpx.WriteError(w, httpx.Error{Status: http.StatusServiceUnavailable, Code: "settings.closed", Message: err.Error(), Retryable: true})
		default:
			httpx.WriteError(w, httpx.Error{Status: http.StatusInternalServerError, Code: "settings.unreadable", Message: err.Error(), Retryable: true})
		}
	})
}
