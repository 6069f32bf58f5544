package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// rawTarget posts batches over plain HTTP/1.1 keep-alive connections, one per client, with the
// request head prepared once. It costs a fraction of net/http's client (no transport goroutines,
// no per-request header maps), which matters when the tool shares two cores with the gateway
// and ClickHouse at ten thousand requests a second.
type rawTarget struct {
	addr string // host:port
	head string // request line and fixed headers, up to (not including) Content-Length
	// keys, when set, prefixes a new Idempotency-Key on every request: keys-<conn>-<n>.
	keys  string
	conns atomic.Int64
}

// newRawTarget prepares a POST of the given path and query to addr with fixed headers.
func newRawTarget(addr, pathAndQuery string, headers map[string]string) *rawTarget {
	var b strings.Builder
	b.WriteString("POST " + pathAndQuery + " HTTP/1.1\r\nHost: " + addr + "\r\nUser-Agent: wavehouse-bench\r\n")
	for k, v := range headers {
		b.WriteString(k + ": " + v + "\r\n")
	}
	return &rawTarget{addr: addr, head: b.String()}
}

// gatewayTarget posts to the gateway's ingest endpoint; keyed sends a new Idempotency-Key with
// every request, unique to this run.
func gatewayTarget(cfg Config, keyed bool) (*rawTarget, error) {
	u, err := url.Parse(strings.TrimRight(cfg.URL, "/") + "/v1/ingest/" + url.PathEscape(cfg.Table))
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("url: only http:// is supported for load, got %q", cfg.URL)
	}
	path := u.EscapedPath()
	if cfg.WaitCommitted {
		path += "?wait=committed"
	}
	h := map[string]string{"Content-Type": "application/json"}
	if cfg.Format == FormatNDJSON {
		h["Content-Type"] = "application/x-ndjson"
	}
	if cfg.Gzip {
		h["Content-Encoding"] = "gzip"
	}
	t := newRawTarget(u.Host, path, h)
	if keyed {
		t.keys = "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	return t, nil
}

// gatewayClickHouseTarget posts the same NDJSON bodies to the gateway's ClickHouse HTTP
// interface as INSERT INTO table FORMAT JSONEachRow (the tenant's database is the gateway's to
// choose, as for /v1/ingest).
func gatewayClickHouseTarget(cfg Config) (*rawTarget, error) {
	u, err := url.Parse(strings.TrimRight(cfg.URL, "/") + "/")
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("url: only http:// is supported for load, got %q", cfg.URL)
	}
	q := url.Values{"query": {"INSERT INTO " + cfg.Table + " FORMAT JSONEachRow"}}
	h := map[string]string{"Content-Type": "application/x-ndjson"}
	if cfg.Gzip {
		h["Content-Encoding"] = "gzip"
	}
	return newRawTarget(u.Host, "/?"+q.Encode(), h), nil
}

func clickHouseHTTPTarget(addr, database, table string, gz bool) *rawTarget {
	q := url.Values{}
	q.Set("query", "INSERT INTO "+database+"."+table+" FORMAT JSONEachRow")
	h := map[string]string{"Content-Type": "application/x-ndjson"}
	if gz {
		q.Set("enable_http_compression", "1")
		h["Content-Encoding"] = "gzip"
	}
	return newRawTarget(addr, "/?"+q.Encode(), h)
}

func (t *rawTarget) newConn() sender { return &rawConn{t: t, id: t.conns.Add(1)} }

// rawConn is one client's connection; it reconnects after any error or a "Connection: close".
type rawConn struct {
	t    *rawTarget
	conn net.Conn
	br   *bufio.Reader
	hdr  []byte
	id   int64 // this connection's number within its target
	sent int64 // requests sent on it, for the idempotency keys
}

func (c *rawConn) send(ctx context.Context, b *Batch) (int, string, error) {
	if c.conn == nil {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", c.t.addr)
		if err != nil {
			return 0, "", err
		}
		c.conn = conn
		c.br = bufio.NewReaderSize(conn, 4096)
	}
	deadline := time.Now().Add(2 * time.Minute)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = c.conn.SetDeadline(deadline)
	c.hdr = append(c.hdr[:0], c.t.head...)
	if c.t.keys != "" {
		c.sent++
		c.hdr = append(c.hdr, "Idempotency-Key: "+c.t.keys+"-"...)
		c.hdr = strconv.AppendInt(c.hdr, c.id, 10)
		c.hdr = append(c.hdr, '-')
		c.hdr = strconv.AppendInt(c.hdr, c.sent, 10)
		c.hdr = append(c.hdr, "\r\n"...)
	}
	c.hdr = append(c.hdr, "Content-Length: "...)
	c.hdr = strconv.AppendInt(c.hdr, int64(len(b.Body)), 10)
	c.hdr = append(c.hdr, "\r\n\r\n"...)
	bufs := net.Buffers{c.hdr, b.Body}
	if _, err := bufs.WriteTo(c.conn); err != nil {
		c.close()
		return 0, "", err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		c.close()
		return 0, "", err
	}
	var detail string
	if resp.StatusCode >= 300 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		detail = strings.TrimSpace(string(msg))
	}
	_, err = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.Close {
		c.close()
	}
	return resp.StatusCode, detail, nil
}

func (c *rawConn) close() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn, c.br = nil, nil
	}
}
