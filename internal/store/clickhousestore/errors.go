package clickhousestore

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/wavehouse/wavehouse/internal/store"
)

// translate maps a clickhouse-go error to the store sentinels, keeping the cause.
func translate(err error, op store.Op) error {
	if err == nil {
		return nil
	}
	var exc *clickhouse.Exception
	if errors.As(err, &exc) {
		return store.FromException(exc.Code, exc.Message, op)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var nerr net.Error
	if errors.As(err, &nerr) && nerr.Timeout() {
		if op == store.OpInsert {
			return fmt.Errorf("%w: %w", store.ErrTimeout, err)
		}
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	if errors.As(err, &nerr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, clickhouse.ErrAcquireConnTimeout) || errors.Is(err, sqldriver.ErrBadConn) {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return err
}
