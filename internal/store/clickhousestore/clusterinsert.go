package clickhousestore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/wavehouse/wavehouse/internal/breaker"
	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/clickhousestore/sharding"
)

// distributedSync makes an INSERT into a Distributed table write every shard's part before it
// returns, and fail when a shard cannot be written: the rows stay in the gateway's queue
// instead of in a spool directory of the node that took the insert.
var distributedSync = clickhouse.Settings{"insert_distributed_sync": 1}

// insertCluster inserts b into the cluster by the table's route: a table that is not
// Distributed as is on any node; a Distributed table through itself (insert mode distributed,
// or a key the gateway cannot evaluate), or row by row to its shards' local tables.
func (s *Store) insertCluster(ctx context.Context, c *cluster, b store.Batch) error {
	rt, err := s.route(ctx, c, b.Target, b.Table)
	if err != nil {
		return err
	}
	var settings clickhouse.Settings
	if rt.distributed {
		settings = distributedSync
	}
	if rt.key == nil {
		p, err := s.pool(ctx, b.Target)
		if err != nil {
			return err
		}
		err = s.insertInto(ctx, p, b, settings)
		if store.SchemaChanged(err) {
			c.forget(b.Target, b.Table)
		}
		return err
	}
	parts, err := s.split(rt, b)
	if err != nil {
		return err
	}
	if parts == nil {
		// A key column is not in the batch (the server computes it): the Distributed table routes.
		p, err := s.pool(ctx, b.Target)
		if err != nil {
			return err
		}
		return s.insertInto(ctx, p, b, distributedSync)
	}
	err = s.insertShards(ctx, c, rt, b, parts)
	if store.SchemaChanged(err) {
		c.forget(b.Target, b.Table)
	}
	return err
}

// rowKeys yields, for each row of b, the values of the columns at idx (positions in b.Columns,
// in the order of key.Columns) for the sharding key. It is where routing reads the bytes of a
// row: here, canonical JSON arrays; another row encoding replaces this function and nothing else.
type rowKeys func(b store.Batch, idx []int, key *sharding.Key, each func(row int, vals []sharding.Value) error) error

// canonicalRowKeys is rowKeys over canonical JSON rows: an integer is a JSON number, a String a
// JSON string.
func canonicalRowKeys(b store.Batch, idx []int, key *sharding.Key, each func(row int, vals []sharding.Value) error) error {
	vals := make([]sharding.Value, len(idx))
	var buf []byte
	for ri, row := range b.Rows {
		buf = buf[:0]
		found := 0
		_, err := chtype.SplitArray(row, func(ci int, elem []byte) error {
			k := slices.Index(idx, ci)
			if k < 0 {
				return nil
			}
			found++
			quoted := len(elem) > 0 && elem[0] == '"'
			if quoted != key.IsString(k) {
				return fmt.Errorf("column %s: %s is not a value of the key column's type", b.Columns[ci], elem)
			}
			if quoted {
				start := len(buf)
				var ok bool
				if buf, ok = chtype.AppendUnquote(buf, elem); !ok {
					return fmt.Errorf("column %s: malformed string", b.Columns[ci])
				}
				vals[k] = sharding.Value{Bytes: buf[start:len(buf):len(buf)]}
				return nil
			}
			v, err := parseKeyInt(elem)
			if err != nil {
				return fmt.Errorf("column %s: %w", b.Columns[ci], err)
			}
			vals[k] = sharding.Value{Int: v}
			return nil
		})
		if err == nil && found != len(idx) {
			err = errors.New("row has fewer values than columns")
		}
		if err != nil {
			return &store.RowError{Row: ri, Err: fmt.Errorf("%w: sharding key: %w", store.ErrRejected, err)}
		}
		if err := each(ri, vals); err != nil {
			return err
		}
	}
	return nil
}

// parseKeyInt reads a JSON integer as 64-bit two's complement.
func parseKeyInt(b []byte) (uint64, error) {
	if len(b) > 0 && b[0] == '-' {
		v, err := strconv.ParseInt(string(b), 10, 64)
		return uint64(v), err
	}
	return strconv.ParseUint(string(b), 10, 64)
}

// split returns the row indexes of b going to each shard, nil when a key column is missing.
func (s *Store) split(rt *route, b store.Batch) ([][]int, error) {
	cols := rt.key.Columns()
	idx := make([]int, len(cols))
	for i, name := range cols {
		if idx[i] = slices.Index(b.Columns, name); idx[i] < 0 {
			return nil, nil
		}
	}
	parts := make([][]int, rt.sel.Shards())
	err := s.rowKeys(b, idx, rt.key, func(row int, vals []sharding.Value) error {
		sh := rt.sel.Shard(rt.key.Eval(vals))
		parts[sh] = append(parts[sh], row)
		return nil
	})
	return parts, err
}

// insertShards inserts each shard's rows into its local table, the shards in parallel. A row
// error names the row of b.
func (s *Store) insertShards(ctx context.Context, c *cluster, rt *route, b store.Batch, parts [][]int) error {
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for sh, rows := range parts {
		if len(rows) == 0 {
			continue
		}
		sub := b
		sub.Target.Database, sub.Table = rt.dist.Database, rt.dist.Table
		sub.Rows = make([][]byte, len(rows))
		for i, r := range rows {
			sub.Rows[i] = b.Rows[r]
		}
		wg.Go(func() {
			err := s.insertShard(ctx, c, sh, sub)
			var re *store.RowError
			if errors.As(err, &re) && re.Row >= 0 && re.Row < len(rows) {
				mapped := *re
				mapped.Row = rows[re.Row]
				err = &mapped
			}
			if err != nil {
				err = fmt.Errorf("shard %d: %w", sh+1, err)
			}
			errs[sh] = err
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// insertShard inserts b on the first replica of the shard that takes it, skipping replicas
// whose breaker is open. A transient failure fails over to the next replica: an insert that may
// have reached the first one is dropped by the second if the table is Replicated (same block,
// same shard log). A permanent error is the same on every replica and is returned at once.
func (s *Store) insertShard(ctx context.Context, c *cluster, shard int, b store.Batch) error {
	var errs []error
	for _, r := range c.shards[shard] {
		err := r.br.Do(func() (breaker.Outcome, error) {
			p, err := s.poolFor(ctx, "r:"+r.addr+"\x00"+b.Target.Database, s.replicaEndpoint(r.addr), b.Target.Database)
			if err == nil {
				err = s.insertInto(ctx, p, b, nil)
			}
			return replicaOutcome(ctx, err), err
		})
		var open *breaker.OpenError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &open):
			errs = append(errs, fmt.Errorf("replica %s: breaker open for %s", r.addr, open.RetryIn))
			continue
		case ctx.Err() != nil || !store.IsTransient(err):
			return err
		}
		s.log.Warn("insert into a replica failed; trying the shard's next replica", "shard", shard+1, "replica", r.addr, "error", err)
		errs = append(errs, fmt.Errorf("replica %s: %w", r.addr, err))
	}
	return fmt.Errorf("%w: no replica of the shard took the insert: %w", store.ErrUnavailable, errors.Join(errs...))
}

// replicaOutcome is what an insert error says about a replica.
func replicaOutcome(ctx context.Context, err error) breaker.Outcome {
	switch {
	case err == nil:
		return breaker.Success
	case ctx.Err() != nil || store.Classify(err) == store.ClassCanceled:
		return breaker.Neutral
	case store.IsTransient(err):
		return breaker.Failure
	}
	return breaker.Success
}

// replicaEndpoint is the default endpoint's credentials and TLS at one replica's address.
func (s *Store) replicaEndpoint(addr string) Endpoint {
	e := s.cfg.Endpoint
	e.Addr = []string{addr}
	return e
}
