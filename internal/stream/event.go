package stream

import (
	"bytes"
	"encoding/json"
	"sync"
	"time"

	"github.com/wavehouse/wavehouse/internal/ingest/payload"
	"github.com/wavehouse/wavehouse/internal/mq"
)

// event is one record read from the queue, decoded once and shared by every
// subscriber of the table; each subscriber renders it through its own view.
type event struct {
	// epoch names the queue history pos indexes (see id.go).
	epoch    string
	pos      mq.Position
	accepted time.Time
	segs     []segment
	rows     int
	// malformed is set when the payload could not be decoded; such an
	// event renders no rows (subscribers only advance their id past it).
	malformed bool
	// skipped is set on the event of a stored message the queue could not
	// decode (mq.Gap): it renders as an `event: gap` that every view gets,
	// and pos is the message's last possible position, so a resume from
	// its id starts after the message.
	skipped *mq.Gap

	fullOnce sync.Once
	full     []byte
	fullRows int
}

// segment is rows sharing one column list, split into canonical values.
type segment struct {
	columns []string
	// keys are the JSON-encoded column names followed by a colon.
	keys [][]byte
	rows [][]json.RawMessage
}

// newEvent decodes rec's payload (a record of history epoch). The returned
// event does not alias rec.
func newEvent(epoch string, rec *mq.Record) *event {
	ev := &event{epoch: epoch, pos: rec.Position, accepted: rec.AcceptedAt}
	segs, err := payload.Decode(bytes.Clone(rec.Payload))
	if err != nil {
		ev.malformed = true
		return ev
	}
	for _, s := range segs {
		seg := segment{columns: s.Columns, keys: make([][]byte, len(s.Columns))}
		for i, c := range s.Columns {
			k, err := json.Marshal(c)
			if err != nil {
				ev.malformed = true
				return ev
			}
			seg.keys[i] = append(k, ':')
		}
		// Binary rows are rendered as canonical JSON here, once per event; every subscriber's
		// view reads these values.
		rows, err := s.Canonical()
		if err != nil {
			ev.malformed = true
			return ev
		}
		seg.rows = rows
		ev.rows += len(seg.rows)
		ev.segs = append(ev.segs, seg)
	}
	return ev
}

// newGapEvent is the event of a skipped, undecodable queue message.
func newGapEvent(epoch string, g *mq.Gap) *event {
	gg := *g
	return &event{epoch: epoch, pos: mq.Position{Seq: g.Position.Seq, Index: ^uint32(0)}, skipped: &gg}
}

// view is one subscriber's projection and filter.
type view struct {
	// columns, when not empty, lists the columns to send, in this order.
	columns []string
	// where lists equality conditions that must all hold.
	where []cond
	// rows, when not nil, is the caller's row policy: only its readable columns are sent, and
	// only rows it matches.
	rows RowPolicy
}

// RowPolicy is an end user's policy on a table (a *policy.Bound): which columns it reads and
// which rows it sees. A stream applies it to every row before sending.
type RowPolicy interface {
	// Readable reports whether the caller reads column col.
	Readable(col string) bool
	// Match reports whether the caller sees a row; get returns a column's canonical value and
	// false when the row lacks the column.
	Match(get func(col string) (json.RawMessage, bool)) bool
}

// cond is one ?where.col=value condition.
type cond struct {
	column string
	value  string
}

func (v view) plain() bool { return len(v.columns) == 0 && len(v.where) == 0 && v.rows == nil }

// render returns the SSE frame of ev under v and how many rows it carries;
// it returns nil when no row is left (the subscriber then only remembers
// the id). The frame of the plain view is rendered once per event.
func (ev *event) render(v view) ([]byte, int) {
	if ev.skipped != nil {
		ev.fullOnce.Do(func() { ev.full = ev.renderSkipped() })
		return ev.full, 0
	}
	if ev.malformed {
		return nil, 0
	}
	if v.plain() {
		ev.fullOnce.Do(func() { ev.full, ev.fullRows = ev.renderView(v) })
		return ev.full, ev.fullRows
	}
	return ev.renderView(v)
}

// renderSkipped renders a skipped message as `event: gap` whose id moves the
// subscriber's Last-Event-ID past the message.
func (ev *event) renderSkipped() []byte {
	data, _ := json.Marshal(map[string]string{
		"reason": ev.skipped.Reason, "from": formatID(ev.epoch, ev.skipped.Position), "to": formatID(ev.epoch, ev.pos),
	})
	out := appendID([]byte("id: "), ev.epoch, ev.pos)
	out = append(out, "\nevent: gap\ndata: "...)
	out = append(out, data...)
	return append(out, "\n\n"...)
}

func (ev *event) renderView(v view) ([]byte, int) {
	out := make([]byte, 0, 64+ev.rows*64)
	out = append(out, "id: "...)
	out = appendID(out, ev.epoch, ev.pos)
	out = append(out, "\nevent: rows\ndata: ["...)
	n := 0
	for si := range ev.segs {
		seg := &ev.segs[si]
		idx, whereIdx, ok := seg.plan(v)
		if !ok {
			continue
		}
		for _, row := range seg.rows {
			if !matches(row, whereIdx, v.where) || v.rows != nil && !v.rows.Match(seg.getter(row)) {
				continue
			}
			if n > 0 {
				out = append(out, ',')
			}
			n++
			out = append(out, '{')
			for j, ci := range idx {
				if j > 0 {
					out = append(out, ',')
				}
				out = append(out, seg.keys[ci]...)
				out = append(out, row[ci]...)
			}
			out = append(out, '}')
		}
	}
	if n == 0 {
		return nil, 0
	}
	out = append(out, "]\n\n"...)
	return out, n
}

// plan resolves v against the segment's columns: the indexes to send, the
// index of each where column, and false when a where column is absent (no
// row of the segment can match).
func (s *segment) plan(v view) (idx, whereIdx []int, ok bool) {
	find := func(c string) int {
		for i, sc := range s.columns {
			if sc == c {
				return i
			}
		}
		return -1
	}
	for _, w := range v.where {
		i := find(w.column)
		if i < 0 {
			return nil, nil, false
		}
		whereIdx = append(whereIdx, i)
	}
	if len(v.columns) == 0 {
		idx = make([]int, 0, len(s.columns))
		for i, c := range s.columns {
			if v.rows == nil || v.rows.Readable(c) {
				idx = append(idx, i)
			}
		}
		return idx, whereIdx, true
	}
	for _, c := range v.columns {
		if i := find(c); i >= 0 {
			idx = append(idx, i)
		}
	}
	return idx, whereIdx, true
}

// getter returns the column lookup of one of the segment's rows.
func (s *segment) getter(row []json.RawMessage) func(string) (json.RawMessage, bool) {
	return func(col string) (json.RawMessage, bool) {
		for i, c := range s.columns {
			if c == col {
				return row[i], true
			}
		}
		return nil, false
	}
}

// matches reports whether row satisfies every condition. A JSON string
// matches its unquoted text; any other canonical value matches its JSON
// text (numbers, true, false, null).
func matches(row []json.RawMessage, whereIdx []int, where []cond) bool {
	for k, i := range whereIdx {
		raw := row[i]
		if len(raw) > 0 && raw[0] == '"' {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil || s != where[k].value {
				return false
			}
			continue
		}
		if string(raw) != where[k].value {
			return false
		}
	}
	return true
}
