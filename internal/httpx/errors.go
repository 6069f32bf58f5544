// Package httpx holds the HTTP conventions every WaveHouse handler shares: JSON error bodies with
// a stable machine code, request ids, and panic recovery.
package httpx

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// Error is the JSON body of every error response.
type Error struct {
	// Code is stable and machine-readable, e.g. "ingest.invalid_rows".
	Code string `json:"code"`
	// Message is for humans; it names the field, row or key at fault.
	Message string `json:"error"`
	// Retryable tells clients whether sending the same request again may succeed.
	Retryable bool `json:"retryable"`
	// Limit names the limit a request ran into (e.g. "max_result_rows"), with its Value.
	Limit string `json:"limit,omitempty"`
	// Value is the value of Limit in force (a count, bytes or seconds).
	Value any `json:"value,omitempty"`
	// Details carries structured specifics such as per-row errors.
	Details any `json:"details,omitempty"`
	// RetryAfter, when positive, is sent as the Retry-After header.
	RetryAfter time.Duration `json:"-"`
	// Status is the HTTP status code.
	Status int `json:"-"`
}

// WriteError writes e as JSON with its status and, when set, a Retry-After header.
func WriteError(w http.ResponseWriter, e Error) {
	if e.RetryAfter > 0 {
		secs := int((e.RetryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	WriteJSON(w, e.Status, e)
}

// WriteJSON writes v as a JSON response with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// NotFound answers unknown routes with a JSON error.
func NotFound(w http.ResponseWriter, r *http.Request) {
	WriteError(w, Error{Status: http.StatusNotFound, Code: "not_found", Message: "no route for " + r.Method + " " + r.URL.Path})
}
