package writer

import (
	"context"
	"sync"
	"time"

	"github.com/wavehouse/wavehouse/internal/ingest/payload"
	"github.com/wavehouse/wavehouse/internal/mq"
)

// tableQueue buffers the frames of one table between the partition reader (push) and the
// table's flusher (take). It is unbounded on purpose: the queue's max-ack-pending bounds how many
// frames can be outstanding, and a bounded channel here would let one slow table stall its
// whole partition.
type tableQueue struct {
	mu     sync.Mutex
	frames []queued
	rows   int
	bytes  int
	oldest time.Time
	signal chan struct{}
}

type queued struct {
	d           mq.Delivery
	rows, bytes int
}

func newTableQueue() *tableQueue { return &tableQueue{signal: make(chan struct{}, 1)} }

func (q *tableQueue) push(d mq.Delivery, rows, bytes int, now time.Time) {
	q.mu.Lock()
	if len(q.frames) == 0 {
		q.oldest = now
	}
	q.frames = append(q.frames, queued{d, rows, bytes})
	q.rows += rows
	q.bytes += bytes
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// state reports what is buffered.
func (q *tableQueue) state() (frames, rows, bytes int, oldest time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.frames), q.rows, q.bytes, q.oldest
}

// take removes frames from the front until maxRows or maxBytes would be passed (always at
// least one frame).
func (q *tableQueue) take(maxRows, maxBytes int, now time.Time) []mq.Delivery {
	q.mu.Lock()
	defer q.mu.Unlock()
	n, rows, bytes := 0, 0, 0
	for n < len(q.frames) {
		f := q.frames[n]
		if n > 0 && (rows+f.rows > maxRows || bytes+f.bytes > maxBytes) {
			break
		}
		rows, bytes, n = rows+f.rows, bytes+f.bytes, n+1
	}
	out := make([]mq.Delivery, n)
	for i := range out {
		out[i] = q.frames[i].d
	}
	q.frames = append(q.frames[:0:0], q.frames[n:]...)
	q.rows -= rows
	q.bytes -= bytes
	if len(q.frames) > 0 {
		q.oldest = now // the remainder waits at most MaxWait from now
	}
	return out
}

// maxBatchRows bounds the rows of one batch (ClickHouse's max_insert_block_size, so a batch is
// one block). MaxRows only triggers a flush: the batch then takes everything buffered up to
// MaxBytes and this many rows, so frames that piled up behind an insert in flight — a backlog
// draining after an outage — go in few large inserts instead of many MaxRows-sized ones (a
// 128 MiB backlog drained at 217k rows/s in 10k-row batches, 590k rows/s in 100k-row ones).
const maxBatchRows = 1 << 20

// flushLoop is the one goroutine that inserts this table's rows, so at most one insert per table
// is in flight while other tables flush independently.
func (w *Writer) flushLoop(ctx context.Context, k tableKey, q *tableQueue) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		frames, rows, bytes, oldest := q.state()
		if frames > 0 {
			due := oldest.Add(w.cfg.MaxWait)
			now := w.deps.Now()
			if rows >= w.cfg.MaxRows || bytes >= w.cfg.MaxBytes || !now.Before(due) {
				batch := q.take(max(w.cfg.MaxRows, maxBatchRows), w.cfg.MaxBytes, now)
				w.flush(ctx, k, batch)
				if ctx.Err() != nil {
					return
				}
				continue
			}
			timer.Reset(due.Sub(now))
		}
		select {
		case <-ctx.Done():
			return
		case <-q.signal:
		case <-timer.C:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

func frameRows(recs []mq.Record) int {
	n := 0
	for _, r := range recs {
		n += payload.Rows(r.Payload)
	}
	return n
}
