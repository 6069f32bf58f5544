package clickhousestore

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/sqlbind"
)

// httpInserter sends RowBinary batches to a server's HTTP interface as
// INSERT … FORMAT RowBinary: the body is the batch's bytes as they are, so neither the gateway
// nor the server parses text. The native protocol has no RowBinary input, which is why inserts
// take HTTP when the endpoint names HTTP addresses (ADR 0013).
type httpInserter struct {
	client   *http.Client
	base     []string // scheme://host:port/ of each address, tried in order
	user     string
	password string
	database string
	settings map[string]int
}

func newHTTPInserter(e Endpoint, password, database string, tc *tls.Config, cfg Config) *httpInserter {
	scheme := "http://"
	if tc != nil {
		scheme = "https://"
	}
	h := &httpInserter{user: e.Username, password: password, database: database, settings: cfg.Settings}
	for _, a := range e.HTTPAddr {
		h.base = append(h.base, scheme+a+"/")
	}
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: cfg.DialTimeout}).DialContext,
		TLSClientConfig:     tc,
		MaxIdleConnsPerHost: cfg.MaxIdleConns,
		MaxConnsPerHost:     cfg.MaxOpenConns,
		IdleConnTimeout:     cfg.ConnMaxLifetime,
	}
	h.client = &http.Client{Transport: tr, Timeout: cfg.ReadTimeout}
	return h
}

func (h *httpInserter) close() { h.client.CloseIdleConnections() }

// insert sends b. A connection failure to one address tries the next; the last failure is
// store.ErrUnavailable. A server exception is translated like a native one.
func (h *httpInserter) insert(ctx context.Context, b store.Batch, dedupToken bool) error {
	var q strings.Builder
	sqlbind.InsertInto(&q, b.Target.Database, b.Table, b.Columns)
	q.WriteString(" FORMAT RowBinary")
	params := url.Values{"query": {q.String()}, "database": {h.database}, "input_format_allow_errors_num": {"0"}}
	for k, v := range h.settings {
		params.Set(k, strconv.Itoa(v))
	}
	if dedupToken && b.DedupToken != "" {
		params.Set("insert_deduplication_token", b.DedupToken)
	}
	if hasJSON(b.Types) {
		params.Set("input_format_binary_read_json_as_string", "1")
	}
	var last error
	for _, base := range h.base {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"?"+params.Encode(), bytes.NewReader(b.RowBinary))
		if err != nil {
			return fmt.Errorf("%w: %w", store.ErrRejected, err)
		}
		req.SetBasicAuth(h.user, h.password)
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err := h.client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			last = translate(err, store.OpInsert)
			if !errors.Is(last, store.ErrUnavailable) {
				return last
			}
			continue
		}
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		if rerr != nil {
			return translate(rerr, store.OpInsert)
		}
		return httpError(resp, body)
	}
	return last
}

var exceptionCode = regexp.MustCompile(`^Code: (\d+)`)

// httpError turns a non-200 answer into the store sentinel of its exception code (the
// X-ClickHouse-Exception-Code header of newer servers, else the "Code: N" the body starts with).
func httpError(resp *http.Response, body []byte) error {
	msg := strings.TrimSpace(string(body))
	code := resp.Header.Get("X-ClickHouse-Exception-Code")
	if code == "" {
		if m := exceptionCode.FindStringSubmatch(msg); m != nil {
			code = m[1]
		}
	}
	if n, err := strconv.ParseInt(code, 10, 32); err == nil {
		return store.FromException(int32(n), msg, store.OpInsert)
	}
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		return fmt.Errorf("%w: http %d: %s", store.ErrUnavailable, resp.StatusCode, msg)
	}
	return fmt.Errorf("%w: http %d: %s", store.ErrRejected, resp.StatusCode, msg)
}

func hasJSON(types []string) bool {
	for _, name := range types {
		if t, err := chtype.Parse(name); err == nil && t.HasJSON() {
			return true
		}
	}
	return false
}

// typesMatch reports whether the table's columns named by b have exactly the types b's RowBinary
// was encoded in (one system.columns read per insert). A missing column is left to the insert
// to report.
func (s *Store) typesMatch(ctx context.Context, b store.Batch) (bool, error) {
	cols, err := s.Columns(ctx, b.Target, b.Table)
	if err != nil {
		return false, err
	}
	byName := make(map[string]string, len(cols))
	for _, c := range cols {
		byName[c.Name] = c.TypeName
	}
	for i, name := range b.Columns {
		if i >= len(b.Types) || byName[name] != b.Types[i] {
			return false, nil
		}
	}
	return true, nil
}

// canonicalRows renders RowBinary rows as canonical JSON rows for the native insert, used when
// the endpoint names no HTTP address: correct, but it decodes every value twice.
func (s *Store) canonicalRows(b store.Batch) ([][]byte, error) {
	types := make([]*chtype.Type, len(b.Types))
	for i, name := range b.Types {
		types[i] = s.parseType(name)
	}
	if len(types) != len(b.Columns) {
		return nil, fmt.Errorf("%w: %d types for %d columns", store.ErrRejected, len(types), len(b.Columns))
	}
	rows := make([][]byte, 0, b.Count)
	data := b.RowBinary
	var buf []byte
	for ri := 0; ri < b.Count; ri++ {
		start := len(buf)
		buf = append(buf, '[')
		for ci, t := range types {
			if ci > 0 {
				buf = append(buf, ',')
			}
			var n int
			var err error
			if buf, n, err = t.AppendCanonicalRowBinary(buf, data); err != nil {
				return nil, &store.RowError{Row: ri, Column: b.Columns[ci], Err: fmt.Errorf("%w: %w", store.ErrRejected, err)}
			}
			data = data[n:]
		}
		buf = append(buf, ']')
		rows = append(rows, buf[start:len(buf):len(buf)])
	}
	if len(data) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last of %d RowBinary rows", store.ErrRejected, len(data), b.Count)
	}
	return rows, nil
}
