package clickhousestore

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/sqlbind"
)

// Query runs q with its limits as integer settings of the query (the only kind 18.16 accepts
// over the native protocol) and streams the rows as canonical JSON.
func (s *Store) Query(ctx context.Context, target store.Target, q store.Query) (store.Rows, error) {
	p, err := s.pool(ctx, target)
	if err != nil {
		return nil, err
	}
	sql := q.SQL
	var opts []clickhouse.QueryOption
	if p.nativeParams {
		params, err := sqlbind.Native(sql, q.Params)
		if err != nil {
			return nil, err
		}
		if len(params) > 0 {
			opts = append(opts, clickhouse.WithParameters(params))
		}
	} else if sql, err = sqlbind.Bind(sql, q.Params); err != nil {
		return nil, err
	}
	settings := clickhouse.Settings{}
	if q.Limits.ReadOnly {
		settings["readonly"] = 1
	}
	// A limit throws instead of truncating the result. Where only integer settings travel
	// (18.16), throw is the server's default, which a settings profile could change.
	if d := q.Limits.MaxExecutionTime; d > 0 {
		settings["max_execution_time"] = int((d + time.Second - 1) / time.Second)
		if p.stringSettings {
			settings["timeout_overflow_mode"] = "throw"
		}
	}
	if n := q.Limits.MaxResultRows; n > 0 {
		settings["max_result_rows"] = int(n)
	}
	if n := q.Limits.MaxResultBytes; n > 0 {
		settings["max_result_bytes"] = int(n)
	}
	if p.stringSettings && (q.Limits.MaxResultRows > 0 || q.Limits.MaxResultBytes > 0) {
		settings["result_overflow_mode"] = "throw"
	}
	if n := q.Limits.MaxMemoryUsage; n > 0 {
		settings["max_memory_usage"] = int(n)
	}
	r := &rows{start: time.Now()}
	opts = append(opts, clickhouse.WithSettings(settings), clickhouse.WithProgress(r.progress))
	if q.QueryID != "" {
		opts = append(opts, clickhouse.WithQueryID(q.QueryID))
	}
	// clickhouse-go replaces max_execution_time with the context's deadline plus 5s, so a
	// query with its own time limit runs under a context without the deadline whose
	// cancellation follows the caller's.
	qctx, cancel := ctx, context.CancelFunc(func() {})
	if q.Limits.MaxExecutionTime > 0 {
		if _, ok := ctx.Deadline(); ok {
			qctx, cancel = context.WithCancel(context.WithoutCancel(ctx))
			stop := context.AfterFunc(ctx, cancel)
			r.release = func() { stop(); cancel() }
		}
	}
	res, err := p.conn.Query(clickhouse.Context(qctx, opts...), sql)
	if err != nil {
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, translate(err, store.OpQuery)
	}
	r.res = res
	r.ctx = ctx
	for _, ct := range res.ColumnTypes() {
		r.cols = append(r.cols, store.ResultColumn{Name: ct.Name(), TypeName: ct.DatabaseTypeName(), Type: s.parseType(ct.DatabaseTypeName())})
		r.dest = append(r.dest, reflect.New(ct.ScanType()).Interface())
	}
	return r, nil
}

// rows adapts clickhouse-go's streamed rows to store.Rows.
type rows struct {
	ctx   context.Context
	res   driver.Rows
	cols  []store.ResultColumn
	dest  []any
	buf   []byte
	err   error
	start time.Time
	done  bool
	// release frees the query's derived context, if any.
	release func()

	mu    sync.Mutex // progress arrives on the driver's goroutine
	stats store.Stats
}

func (r *rows) progress(p *clickhouse.Progress) {
	r.mu.Lock()
	r.stats.RowsRead += p.Rows
	r.stats.BytesRead += p.Bytes
	r.mu.Unlock()
}

func (r *rows) Columns() []store.ResultColumn { return r.cols }

func (r *rows) Next() bool {
	if r.done {
		return false
	}
	if !r.res.Next() {
		r.finish(r.res.Err())
		return false
	}
	if err := r.res.Scan(r.dest...); err != nil {
		r.finish(err)
		return false
	}
	r.buf = append(r.buf[:0], '[')
	for i, d := range r.dest {
		if i > 0 {
			r.buf = append(r.buf, ',')
		}
		var err error
		if r.buf, err = r.cols[i].Type.AppendDriver(r.buf, reflect.ValueOf(d).Elem().Interface()); err != nil {
			r.finish(fmt.Errorf("store: render column %s: %w", r.cols[i].Name, err))
			return false
		}
	}
	r.buf = append(r.buf, ']')
	r.mu.Lock()
	r.stats.Rows++
	r.mu.Unlock()
	return true
}

func (r *rows) finish(err error) {
	r.done = true
	if r.ctx.Err() != nil {
		err = r.ctx.Err()
	}
	r.err = translate(err, store.OpQuery)
	r.mu.Lock()
	r.stats.Elapsed = time.Since(r.start)
	r.mu.Unlock()
	_ = r.res.Close()
	if r.release != nil {
		r.release()
	}
}

func (r *rows) Row() []byte { return r.buf }

func (r *rows) Err() error { return r.err }

func (r *rows) Stats() store.Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

func (r *rows) Close() error {
	if r.done {
		return nil
	}
	r.done = true
	r.mu.Lock()
	r.stats.Elapsed = time.Since(r.start)
	r.mu.Unlock()
	err := r.res.Close()
	if r.release != nil {
		r.release()
	}
	return translate(err, store.OpQuery)
}
