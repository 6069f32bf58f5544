package clickhousestore_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/clickhousestore"
	"github.com/wavehouse/wavehouse/internal/testutil/poll"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// TestLocalInsertSurvivesReplicaAndShardLoss runs on a private 2 × 2 cluster (it kills nodes),
// inserting in mode local into a ReplicatedMergeTree table behind a Distributed one.
//
// replica_sigkill: replica 1 of shard 1 is SIGKILLed during sustained ingest; every insert
// still succeeds (the shard's rows fail over to replica 2), and after the replica returns the
// Distributed table holds every acknowledged row exactly once.
//
// shard_down: both replicas of shard 2 are killed; an insert fails with a transient
// store.ErrUnavailable (so the writer keeps the rows in the queue, never in the DLQ) — and so
// does an insert through the Distributed table in mode distributed — the same
// batch retried after the shard returns succeeds, and shard 1 — which took its rows on the
// failed attempt — drops the repeat (same block, same shard log): each row once.
func TestLocalInsertSurvivesReplicaAndShardLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private cluster")
	}
	cp := testsvc.StartClickHouseCluster(t)
	c := &cp.ClickHouseCluster
	db := clusterDB(t, c)
	s := clusterStore(t, c, clickhousestore.InsertLocal)
	tgt := store.Target{Database: db}
	batch := func(lo int) store.Batch {
		return store.Batch{Target: tgt, Table: "t_all", Columns: []string{"id", "s"}, Rows: rows(lo, lo+50, "")}
	}

	t.Run("replica_sigkill", func(t *testing.T) {
		var (
			acked, failed atomic.Int64
			stop          = make(chan struct{})
			wg            sync.WaitGroup
		)
		wg.Go(func() {
			for lo := 0; ; lo += 50 {
				select {
				case <-stop:
					return
				default:
				}
				if err := s.Insert(t.Context(), batch(lo)); err != nil {
					failed.Add(1)
					t.Errorf("insert of ids %d…%d: %v", lo, lo+49, err)
					continue
				}
				acked.Add(50)
			}
		})
		poll.Until(t, 30*time.Second, "20 batches acknowledged", func() bool { return acked.Load() >= 1000 })
		cp.Servers[0][0].Kill(t)
		before := acked.Load()
		poll.Until(t, 60*time.Second, "40 more batches acknowledged with shard 1 replica 1 dead", func() bool { return acked.Load() >= before+2000 })
		close(stop)
		wg.Wait()
		cp.Servers[0][0].Start(t)
		syncReplicas(t, c, db)
		want := itoa(acked.Load())
		if got := scalar(t, &c.Shards[1][0], "SELECT count(), uniqExact(id), max(id) + 1 FROM "+db+".t_all FORMAT TabSeparated"); got != want+"\t"+want+"\t"+want {
			t.Errorf("after the replica's loss: count, distinct ids, max+1 = %q, want %s of each (%d failed inserts)", got, want, failed.Load())
		}
		if got := scalar(t, &c.Shards[0][0], "SELECT count() FROM "+db+".t"); got != scalar(t, &c.Shards[0][1], "SELECT count() FROM "+db+".t") {
			t.Errorf("shard 1 replicas disagree after SYNC REPLICA")
		}
	})

	t.Run("shard_down", func(t *testing.T) {
		base := atoi(scalar(t, &c.Shards[0][0], "SELECT count() FROM "+db+".t_all"))
		lo := 1_000_000
		cp.Servers[1][0].Kill(t)
		cp.Servers[1][1].Kill(t)
		err := s.Insert(t.Context(), batch(lo))
		if !errors.Is(err, store.ErrUnavailable) || !store.IsTransient(err) || store.Classify(err) != store.ClassTransient {
			t.Fatalf("insert with shard 2 down = %v, want a transient store.ErrUnavailable", err)
		}
		// Mode distributed: the synchronous Distributed insert fails too, and transiently.
		dist := clusterStore(t, c, clickhousestore.InsertDistributed)
		if err := dist.Insert(t.Context(), batch(lo)); store.Classify(err) != store.ClassTransient {
			t.Errorf("insert through the Distributed table with shard 2 down = %v (class %s), want a transient error", err, store.Classify(err))
		}
		cp.Servers[1][0].Start(t)
		cp.Servers[1][1].Start(t)
		poll.Until(t, 30*time.Second, "the retried insert succeeds once shard 2 is back", func() bool {
			return s.Insert(t.Context(), batch(lo)) == nil
		})
		syncReplicas(t, c, db)
		if got := scalar(t, &c.Shards[0][0], "SELECT count() - "+itoa(int64(base))+", uniqExact(id) FROM "+db+".t_all WHERE id >= 1000000 OR 1 FORMAT TabSeparated"); got != "50\t"+itoa(int64(base+50)) {
			t.Errorf("after shard 2 returned: new rows, distinct ids = %q, want 50 new rows, %d ids", got, base+50)
		}
	})
}
