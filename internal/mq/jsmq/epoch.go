package jsmq

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// A table's epoch (mq.Event.Epoch) names the history its positions index: the partition stream
// the table maps to, that stream's creation time (a recreated stream or a new data directory is
// a new history), the partition count, and the layout token. The layout token is a random value
// kept in the schema bucket under layoutKey with the partition count it was drawn for; a process
// that boots with another count draws a new one. So the epoch changes whenever the partition
// count changes, also back to a count used before (4 → 1 → 4: the rows written while it was 1
// are in another stream, and an id from the first period must not resume silently).

// layoutKey is the schema-bucket key of the layout record (schema keys start with "s.").
const layoutKey = "layout"

type layoutRecord struct {
	Partitions int    `json:"partitions"`
	Token      string `json:"token"`
}

// ReconcileLayout reads the layout record and draws a new layout token when none is recorded
// or it was drawn for another partition count. Backends call it at Start, before serving.
func (q *Queue) ReconcileLayout(ctx context.Context) error {
	kv, err := q.schemas(ctx)
	if err != nil {
		return fmt.Errorf("layout record: %w", err)
	}
	n := q.opts.Topology.Partitions
	for attempt := 0; ; attempt++ {
		var cur layoutRecord
		var rev uint64
		err := q.rpc(ctx, func(ctx context.Context) error {
			e, err := kv.Get(ctx, layoutKey)
			if errors.Is(err, jetstream.ErrKeyNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			rev = e.Revision()
			if json.Unmarshal(e.Value(), &cur) != nil {
				cur = layoutRecord{}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("layout record: %w", err)
		}
		if cur.Partitions == n && cur.Token != "" {
			q.setLayoutToken(cur.Token)
			return nil
		}
		var b [8]byte
		_, _ = rand.Read(b[:])
		next := layoutRecord{Partitions: n, Token: hex.EncodeToString(b[:])}
		val, _ := json.Marshal(next)
		err = q.rpc(ctx, func(ctx context.Context) error {
			if rev == 0 {
				_, err := kv.Create(ctx, layoutKey, val)
				return err
			}
			_, err := kv.Update(ctx, layoutKey, val, rev)
			return err
		})
		if err == nil {
			q.log.Info("mq: partition layout changed, stream ids start a new epoch", "partitions", n, "previous_partitions", cur.Partitions)
			q.setLayoutToken(next.Token)
			return nil
		}
		// Another process wrote the record meanwhile: read it again.
		if attempt >= 4 || ctx.Err() != nil {
			return fmt.Errorf("layout record: %w", err)
		}
	}
}

func (q *Queue) setLayoutToken(token string) {
	q.mu.Lock()
	q.layoutToken = token
	q.mu.Unlock()
}

// epoch returns the epoch of the history of partition stream info (see above).
func (q *Queue) epoch(info *jetstream.StreamInfo) string {
	q.mu.Lock()
	token := q.layoutToken
	q.mu.Unlock()
	h := sha256.New()
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(info.Created.UnixNano()))
	binary.BigEndian.PutUint64(b[8:], uint64(q.opts.Topology.Partitions))
	h.Write([]byte(token))
	h.Write([]byte{0})
	h.Write([]byte(info.Config.Name))
	h.Write([]byte{0})
	h.Write(b[:])
	return hex.EncodeToString(h.Sum(nil)[:6])
}

// Epoch returns the current epoch of tenant/table's history (the Event.Epoch a Replay would
// report now).
func (q *Queue) Epoch(ctx context.Context, tenant, table string) (string, error) {
	info, err := q.streamInfo(ctx, q.names.Stream(q.names.Partition(tenant, table)))
	if err != nil {
		return "", err
	}
	return q.epoch(info), nil
}

// Epoch implements Queue.Epoch on the installed queue.
func (h *Handle) Epoch(ctx context.Context, tenant, table string) (string, error) {
	q, err := h.Queue()
	if err != nil {
		return "", err
	}
	return q.Epoch(ctx, tenant, table)
}

// streamInfo fetches the current info of stream.
func (q *Queue) streamInfo(ctx context.Context, stream string) (*jetstream.StreamInfo, error) {
	var info *jetstream.StreamInfo
	err := q.rpc(ctx, func(ctx context.Context) error {
		s, err := q.js.Stream(ctx, stream)
		if err != nil {
			return err
		}
		info = s.CachedInfo() // fetched by Stream just now
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", stream, err)
	}
	return info, nil
}
