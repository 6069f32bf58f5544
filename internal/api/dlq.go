package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/ingest/payload"
	"github.com/wavehouse/wavehouse/internal/ingest/request"
	"github.com/wavehouse/wavehouse/internal/mq"
)

const maxDLQPage = 1000

type dlqEntry struct {
	ID           uint64            `json:"id"`
	Position     string            `json:"position"`
	Code         string            `json:"code"`
	Error        string            `json:"error"`
	Attempts     int               `json:"attempts"`
	FirstFailure time.Time         `json:"first_failure"`
	LastFailure  time.Time         `json:"last_failure"`
	DeadAt       time.Time         `json:"dead_at"`
	AcceptedAt   time.Time         `json:"accepted_at"`
	Traceparent  string            `json:"traceparent,omitempty"`
	Rows         []json.RawMessage `json:"rows"`
	// Raw is the stored message of an undecodable entry (code undecodable), byte for byte.
	Raw *rawMessage `json:"raw,omitempty"`
}

type rawMessage struct {
	Subject   string            `json:"subject"`
	Partition int               `json:"partition"`
	Seq       uint64            `json:"seq"`
	Data      []byte            `json:"data_base64"`
	Headers   map[string]string `json:"headers,omitempty"`
}

func (a *API) dlqAvailable(w http.ResponseWriter) bool {
	if a.deps.DLQ == nil {
		httpx.WriteError(w, httpx.Error{Status: http.StatusNotImplemented, Code: "dlq.unavailable", Message: "this process has no dead-letter queue"})
		return false
	}
	return true
}

func (a *API) dlqCounts(w http.ResponseWriter, r *http.Request) {
	if !a.dlqAvailable(w) {
		return
	}
	tenant := a.tenant(r)
	counts, err := a.deps.DLQ.Counts(r.Context(), tenant)
	if err != nil {
		a.mqError(w, err)
		return
	}
	type row struct {
		Table string `json:"table"`
		Count uint64 `json:"count"`
	}
	out := []row{}
	for k, n := range counts {
		if k.Tenant == tenant {
			out = append(out, row{Table: k.Table, Count: n})
		}
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"tables": out})
}

func (a *API) dlqList(w http.ResponseWriter, r *http.Request) {
	if !a.dlqAvailable(w) {
		return
	}
	table := r.PathValue("table")
	after, limit, ok := pageParams(w, r)
	if !ok {
		return
	}
	entries, err := a.deps.DLQ.List(r.Context(), a.tenant(r), table, after, limit)
	if err != nil {
		a.mqError(w, err)
		return
	}
	out := make([]dlqEntry, 0, len(entries))
	for _, e := range entries {
		out = append(out, viewEntry(e))
	}
	resp := map[string]any{"entries": out}
	if len(entries) == limit {
		resp["next_after"] = entries[len(entries)-1].ID
	}
	httpx.WriteJSON(w, http.StatusOK, resp)
}

// dlqReplay re-validates dead-lettered records against the table's current columns and, unless
// ?dry_run=true, republishes them to the ingest queue. Nothing is republished while any record
// would still be invalid, unless ?force=true.
func (a *API) dlqReplay(w http.ResponseWriter, r *http.Request) {
	if !a.dlqAvailable(w) {
		return
	}
	tenant, table := a.tenant(r), r.PathValue("table")
	_, limit, ok := pageParams(w, r)
	if !ok {
		return
	}
	target, ok := a.target(w, tenant)
	if !ok {
		return
	}
	cols, err := a.deps.Schema.Refresh(r.Context(), target, table)
	if err != nil {
		a.storeError(w, err, table)
		return
	}
	entries, err := a.deps.DLQ.List(r.Context(), tenant, table, 0, limit)
	if err != nil {
		a.mqError(w, err)
		return
	}
	type problem struct {
		ID     uint64             `json:"id"`
		Error  string             `json:"error,omitempty"`
		Errors []request.RowError `json:"errors,omitempty"`
	}
	var problems []problem
	rows := 0
	skipped := 0
	for _, e := range entries {
		if e.Raw != nil {
			skipped++ // undecodable: kept for inspection, never replayed
			continue
		}
		ndjson, n, err := entryNDJSON(e)
		if err != nil {
			problems = append(problems, problem{ID: e.ID, Error: err.Error()})
			continue
		}
		rows += n
		res, herr := request.Parse("application/x-ndjson", "", bytes.NewReader(ndjson), cols, a.cfg.Limits, request.Options{Partial: true})
		switch {
		case herr != nil:
			problems = append(problems, problem{ID: e.ID, Error: herr.Message})
		case res.Rejected > 0:
			problems = append(problems, problem{ID: e.ID, Errors: res.Errors})
		}
	}
	report := map[string]any{"entries": len(entries) - skipped, "undecodable": skipped, "rows": rows, "invalid": problems, "dry_run": r.URL.Query().Get("dry_run") == "true"}
	if report["dry_run"] == true {
		httpx.WriteJSON(w, http.StatusOK, report)
		return
	}
	if len(problems) > 0 && r.URL.Query().Get("force") != "true" {
		httpx.WriteError(w, httpx.Error{Status: http.StatusConflict, Code: "dlq.still_invalid",
			Message: "some dead-lettered records are still invalid for the table; fix the table or pass force=true", Details: report})
		return
	}
	n, err := a.deps.DLQ.Replay(r.Context(), tenant, table, len(entries)-skipped)
	if err != nil {
		a.mqError(w, err)
		return
	}
	a.deps.Log.InfoContext(r.Context(), "audit: dead letters replayed", "tenant", tenant, "table", table, "entries", n)
	report["replayed"] = n
	httpx.WriteJSON(w, http.StatusOK, report)
}

func (a *API) dlqPurge(w http.ResponseWriter, r *http.Request) {
	if !a.dlqAvailable(w) {
		return
	}
	tenant, table := a.tenant(r), r.PathValue("table")
	n, err := a.deps.DLQ.Purge(r.Context(), tenant, table)
	if err != nil {
		a.mqError(w, err)
		return
	}
	a.deps.Log.InfoContext(r.Context(), "audit: dead letters purged", "tenant", tenant, "table", table, "entries", n)
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"purged": n})
}

func (a *API) mqError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, mq.ErrInvalid):
		httpx.WriteError(w, httpx.Error{Status: http.StatusBadRequest, Code: "dlq.invalid", Message: err.Error()})
	case errors.Is(err, mq.ErrNotFound):
		httpx.WriteError(w, httpx.Error{Status: http.StatusNotFound, Code: "dlq.not_found", Message: err.Error()})
	default:
		httpx.WriteError(w, httpx.Error{Status: http.StatusServiceUnavailable, Code: "queue.unavailable", Message: err.Error(), Retryable: true, RetryAfter: a.cfg.RetryAfter})
	}
}

func pageParams(w http.ResponseWriter, r *http.Request) (after uint64, limit int, ok bool) {
	q := r.URL.Query()
	limit = 100
	var err error
	if s := q.Get("after"); s != "" {
		if after, err = strconv.ParseUint(s, 10, 64); err != nil {
			httpx.WriteError(w, httpx.Error{Status: http.StatusBadRequest, Code: "dlq.invalid", Message: "after must be an entry id"})
			return 0, 0, false
		}
	}
	if s := q.Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 || limit > maxDLQPage {
			httpx.WriteError(w, httpx.Error{Status: http.StatusBadRequest, Code: "dlq.invalid", Message: "limit must be between 1 and 1000"})
			return 0, 0, false
		}
	}
	return after, limit, true
}

func viewEntry(e mq.DeadEntry) dlqEntry {
	v := dlqEntry{ID: e.ID, Position: e.Record.Position.String(), Code: e.Reason.Code, Error: e.Reason.Message,
		Attempts: e.Reason.Attempts, FirstFailure: e.Reason.FirstFailure, LastFailure: e.Reason.LastFailure,
		DeadAt: e.DeadAt, AcceptedAt: e.Record.AcceptedAt, Traceparent: e.Record.Headers[mq.HeaderTraceparent], Rows: []json.RawMessage{}}
	if r := e.Raw; r != nil {
		v.Raw = &rawMessage{Subject: r.Subject, Partition: r.Partition, Seq: r.Seq, Data: r.Data, Headers: r.Headers}
		return v
	}
	if ndjson, _, err := entryNDJSON(e); err == nil {
		for _, line := range bytes.Split(bytes.TrimSpace(ndjson), []byte{'\n'}) {
			if len(line) > 0 {
				v.Rows = append(v.Rows, line)
			}
		}
	}
	return v
}

// entryNDJSON turns a record's rows (RowBinary or canonical JSON) into JSON objects keyed by column.
func entryNDJSON(e mq.DeadEntry) ([]byte, int, error) {
	segs, err := payload.Decode(e.Record.Payload)
	if err != nil {
		return nil, 0, err
	}
	var out bytes.Buffer
	n := 0
	for _, s := range segs {
		rows, err := s.Canonical()
		if err != nil {
			return nil, 0, err
		}
		for _, vals := range rows {
			out.WriteByte('{')
			for i, c := range s.Columns {
				if i > 0 {
					out.WriteByte(',')
				}
				k, _ := json.Marshal(c)
				out.Write(k)
				out.WriteByte(':')
				out.Write(vals[i])
			}
			out.WriteString("}\n")
			n++
		}
	}
	return out.Bytes(), n, nil
}
