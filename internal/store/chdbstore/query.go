package chdbstore

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/sqlbind"
)

// outputFormat carries the column names and types before the rows of every chunk.
const outputFormat = "JSONCompactEachRowWithNamesAndTypes"

// Query binds the parameters on the client, appends the limits as a SETTINGS clause (readonly
// last, so the others can still be set) and streams the result chunk by chunk. The engine turn
// is held until the rows are read or closed.
func (s *Store) Query(ctx context.Context, target store.Target, q store.Query) (store.Rows, error) {
	sql, err := sqlbind.Bind(q.SQL, q.Params)
	if err != nil {
		return nil, err
	}
	settings := []sqlbind.Setting{sqlbind.String("session_timezone", "UTC")}
	if d := q.Limits.MaxExecutionTime; d > 0 {
		settings = append(settings, sqlbind.Float("max_execution_time", d.Seconds()), sqlbind.String("timeout_overflow_mode", "throw"))
	}
	if n := q.Limits.MaxResultRows; n > 0 {
		settings = append(settings, sqlbind.Int("max_result_rows", n))
	}
	if n := q.Limits.MaxResultBytes; n > 0 {
		settings = append(settings, sqlbind.Int("max_result_bytes", n))
	}
	if q.Limits.MaxResultRows > 0 || q.Limits.MaxResultBytes > 0 {
		settings = append(settings, sqlbind.String("result_overflow_mode", "throw"))
	}
	if n := q.Limits.MaxMemoryUsage; n > 0 {
		settings = append(settings, sqlbind.Int("max_memory_usage", n))
	}
	if q.Limits.ReadOnly {
		settings = append(settings, sqlbind.Int("readonly", 1))
	}
	sql = sqlbind.AppendSettings(sql, settings...)

	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		s.release()
		return nil, err
	}
	if err := s.use(target.Database, store.OpQuery); err != nil {
		s.release()
		return nil, err
	}
	r := &rows{s: s, ctx: ctx, start: time.Now(), types: map[string]*chtype.Type{}}
	r.stream = s.l.streamQuery(s.c.c, sql, outputFormat)
	msg := (result{l: s.l, p: r.stream}).err()
	switch {
	case strings.Contains(msg, "Streaming query is not supported") || r.stream == nil && msg == "":
		// Statements other than SELECT (refused in read-only mode) run unstreamed.
		if r.stream != nil {
			s.l.destroyResult(r.stream)
			r.stream = nil
		}
		return r.unstreamed(sql)
	case msg != "":
		r.finish(engineError(msg, store.OpQuery))
		return nil, r.err
	}
	// Fetch the first chunk so Columns is known before Next; errors found here are Query's.
	if !r.fetch() {
		if r.err != nil {
			return nil, r.err
		}
		if r.cols == nil {
			// An empty result streams no chunk and so no header; run it unstreamed for the
			// column names and types.
			r.done = false
			if err := r.s.acquire(ctx); err != nil {
				return nil, err
			}
			if err := r.s.use(target.Database, store.OpQuery); err != nil {
				r.s.release()
				return nil, err
			}
			return r.unstreamed(sql)
		}
	}
	return r, nil
}

// unstreamed runs sql in one call, keeping its whole output; the turn is held on entry and
// released here.
func (r *rows) unstreamed(sql string) (store.Rows, error) {
	out, err := r.s.run(sql, outputFormat, store.OpQuery)
	if err != nil {
		r.finish(err)
		return nil, err
	}
	names, rest := nextLine(out)
	typs, rest := nextLine(rest)
	if len(names) > 0 {
		r.setColumns(names, typs)
	}
	r.data = rest
	r.unstreamedOnly = true
	return r, nil
}

// rows streams a chDB result. It holds the engine turn until done.
type rows struct {
	s      *Store
	ctx    context.Context
	stream unsafe.Pointer
	chunk  result
	data   []byte // unread lines of the current chunk
	cols   []store.ResultColumn
	types  map[string]*chtype.Type
	buf    []byte
	err    error
	done   bool
	start  time.Time
	// unstreamedOnly: data holds the whole result; there is nothing to fetch.
	unstreamedOnly bool

	mu    sync.Mutex
	stats store.Stats
}

// fetch frees the current chunk and loads the next; false at the end or on error.
func (r *rows) fetch() bool {
	if r.unstreamedOnly {
		r.finish(nil)
		return false
	}
	for {
		r.chunk.free()
		r.chunk = result{}
		if err := r.ctx.Err(); err != nil {
			r.finish(err)
			return false
		}
		p := r.s.l.streamFetch(r.s.c.c, r.stream)
		r.chunk = result{l: r.s.l, p: p}
		if msg := r.chunk.err(); msg != "" {
			if msg == "No active streaming query" {
				// The engine already ended the stream.
				r.finish(nil)
				return false
			}
			r.finish(engineError(msg, store.OpQuery))
			return false
		}
		b := r.chunk.buf()
		if p == nil || len(b) == 0 {
			if msg := (result{l: r.s.l, p: r.stream}).err(); msg != "" {
				r.finish(engineError(msg, store.OpQuery))
			} else {
				r.finish(nil)
			}
			return false
		}
		r.mu.Lock()
		r.stats.RowsRead += r.s.l.resultRows(p)
		r.stats.BytesRead += r.s.l.resultBytes(p)
		r.mu.Unlock()
		names, rest := nextLine(b)
		typs, rest := nextLine(rest)
		if r.cols == nil {
			r.setColumns(names, typs)
		}
		if len(rest) > 0 {
			r.data = rest
			return true
		}
	}
}

func (r *rows) setColumns(namesLine, typesLine []byte) {
	var names, typs []string
	_ = json.Unmarshal(namesLine, &names)
	_ = json.Unmarshal(typesLine, &typs)
	r.cols = make([]store.ResultColumn, len(names))
	for i, n := range names {
		tn := ""
		if i < len(typs) {
			tn = typs[i]
		}
		t, ok := r.types[tn]
		if !ok {
			var err error
			if t, err = chtype.Parse(tn); err != nil {
				t = &chtype.Type{Kind: chtype.Unsupported, Name: tn}
			}
			r.types[tn] = t
		}
		r.cols[i] = store.ResultColumn{Name: n, TypeName: tn, Type: t}
	}
}

func nextLine(b []byte) (line, rest []byte) {
	for i, c := range b {
		if c == '\n' {
			return b[:i], b[i+1:]
		}
	}
	return b, nil
}

func (r *rows) Columns() []store.ResultColumn { return r.cols }

func (r *rows) Next() bool {
	if r.done {
		return false
	}
	if len(r.data) == 0 && !r.fetch() {
		return false
	}
	var line []byte
	line, r.data = nextLine(r.data)
	r.buf = append(r.buf[:0], '[')
	_, _ = chtype.SplitArray(line, func(i int, elem []byte) error {
		if i > 0 {
			r.buf = append(r.buf, ',')
		}
		if i < len(r.cols) {
			if out, err := r.cols[i].Type.AppendCanonical(r.buf, elem); err == nil {
				r.buf = out
				return nil
			}
		}
		// A value the type system cannot re-read (nan, an unsupported type) passes through
		// as the engine wrote it, kept valid JSON.
		if json.Valid(elem) {
			r.buf = append(r.buf, elem...)
		} else {
			r.buf = strconv.AppendQuote(r.buf, string(elem))
		}
		return nil
	})
	r.buf = append(r.buf, ']')
	r.mu.Lock()
	r.stats.Rows++
	r.mu.Unlock()
	return true
}

// finish ends the stream, frees everything and gives the engine turn back.
func (r *rows) finish(err error) {
	if r.done {
		return
	}
	r.done = true
	r.err = err
	r.chunk.free()
	r.chunk = result{}
	if r.stream != nil {
		if err != nil || r.ctx.Err() != nil {
			r.s.l.streamCancel(r.s.c.c, r.stream)
		}
		r.s.l.destroyResult(r.stream)
		r.stream = nil
	}
	r.data = nil
	r.mu.Lock()
	r.stats.Elapsed = time.Since(r.start)
	r.mu.Unlock()
	r.s.release()
}

func (r *rows) Row() []byte { return r.buf }

func (r *rows) Err() error { return r.err }

func (r *rows) Stats() store.Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Close cancels the stream if it is still running and releases the engine.
func (r *rows) Close() error {
	if !r.done {
		r.cancelAndFinish()
	}
	return nil
}

func (r *rows) cancelAndFinish() {
	if r.stream != nil {
		r.s.l.streamCancel(r.s.c.c, r.stream)
	}
	r.finish(nil)
}
