package bench

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// sender sends one pre-generated batch and returns the HTTP-like status of the outcome, with the
// start of the response body when the status is not 2xx. A sender is used by one client at a time.
type sender interface {
	send(ctx context.Context, b *Batch) (status int, detail string, err error)
	close()
}

// target hands each client its own sender.
type target interface {
	newConn() sender
}

// newHTTPClient returns a client whose transport keeps one idle connection per client, so the
// run measures requests, not connection set-up.
func newHTTPClient(clients int) *http.Client {
	tr := &http.Transport{
		MaxIdleConns:        clients * 2,
		MaxIdleConnsPerHost: clients,
		MaxConnsPerHost:     clients,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	return &http.Client{Transport: tr, Timeout: 2 * time.Minute}
}

// nativeSender inserts each batch with one clickhouse-go batch (explicit column list).
type nativeSender struct {
	conn driver.Conn
	sql  string
}

func openNative(ctx context.Context, addr, database string, clients int) (driver.Conn, error) {
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr:         []string{addr},
		Auth:         clickhouse.Auth{Database: database, Username: "default"},
		MaxOpenConns: clients,
		MaxIdleConns: clients,
		DialTimeout:  5 * time.Second,
		ReadTimeout:  2 * time.Minute,
	})
	if err != nil {
		return nil, fmt.Errorf("open native %s: %w", addr, err)
	}
	if err := conn.Ping(ctx); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("ping native %s: %w", addr, err)
	}
	return conn, nil
}

func (s *nativeSender) newConn() sender { return s }

func (s *nativeSender) close() {}

func (s *nativeSender) send(ctx context.Context, b *Batch) (int, string, error) {
	batch, err := s.conn.PrepareBatch(ctx, s.sql)
	if err != nil {
		return 0, "", err
	}
	for _, r := range b.Rows {
		if err := batch.Append(r.TS, r.ID, r.User, r.Kind, r.Value, r.Tags, r.Note); err != nil {
			_ = batch.Abort()
			return 0, "", err
		}
	}
	if err := batch.Send(); err != nil {
		return 0, "", err
	}
	return http.StatusOK, "", nil
}

// nativeCounter counts a table's rows over the native protocol.
type nativeCounter struct {
	conn  driver.Conn
	table string
}

func (c nativeCounter) count(ctx context.Context) (int64, error) {
	var n uint64
	if err := c.conn.QueryRow(ctx, "SELECT count() FROM "+c.table).Scan(&n); err != nil {
		return 0, err
	}
	return int64(n), nil
}

func nativeParts(ctx context.Context, conn driver.Conn, database, table string) (int64, error) {
	var n uint64
	err := conn.QueryRow(ctx, "SELECT count() FROM system.parts WHERE database = '"+database+"' AND table = '"+table+"' AND active").Scan(&n)
	return int64(n), err
}
