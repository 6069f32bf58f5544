package httpx

import (
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// WantsJSONErrors reports whether a request to the ClickHouse HTTP interface asks for the
// gateway's JSON error form (with per-row details) instead of ClickHouse's: its Accept header's
// first media type is application/json.
func WantsJSONErrors(r *http.Request) bool {
	first, _, _ := strings.Cut(r.Header.Get("Accept"), ",")
	mt, _, err := mime.ParseMediaType(strings.TrimSpace(first))
	return err == nil && mt == "application/json"
}

// WriteClickHouseForm answers an error of the ClickHouse HTTP interface: in ClickHouse's form
// (WriteClickHouseError, the exception mapped from e.Code), or as the gateway's JSON when the
// request asks for it (WantsJSONErrors), with the ClickHouse exception code in its header either
// way.
func WriteClickHouseForm(w http.ResponseWriter, r *http.Request, e Error) {
	WriteClickHouseAnswer(w, WantsJSONErrors(r), e, Exception{})
}

// WriteClickHouseAnswer is WriteClickHouseForm for a caller that decided the form already
// (asJSON: WantsJSONErrors of the request) and may name the ClickHouse error itself (exc, when
// its Code is not zero, overrides the mapping of e.Code), in the body and the header alike.
func WriteClickHouseAnswer(w http.ResponseWriter, asJSON bool, e Error, exc Exception) {
	if exc.Code == 0 {
		exc = ExceptionFor(e.Code)
	}
	if asJSON {
		w.Header().Set(ExceptionHeader, strconv.Itoa(exc.Code))
		WriteError(w, e)
		return
	}
	WriteClickHouseError(w, e, exc)
}
