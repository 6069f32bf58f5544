package natsmq_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/natsmq"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// TestFewerPartitionsDrainExtraStreams: after the partition count is lowered on a server that
// keeps the old streams (whoever owns the topology), the queue reports the frames left beyond the
// count (mq.Drainer), delivers them through the old stream's ingest consumer, and counts the
// stream drained once they are acknowledged; a verified (not managed) topology still boots.
func TestFewerPartitionsDrainExtraStreams(t *testing.T) {
	url := testsvc.NATSServer(t).URL
	cfg := natsmq.Config{URLs: []string{url}, ManageTopology: true, Prefix: testsvc.UniqueName(t, "mqx"), Replicas: 1,
		Partitions: 3, AckWait: 5 * time.Second, PublishTimeout: 2 * time.Second}
	wide := open(t, cfg)
	names := cfg.Topology().Names()
	t.Cleanup(func() { deleteTopology(url, names) })
	var table string
	for i := 0; table == ""; i++ {
		if name := fmt.Sprintf("x%d", i); mq.PartitionOf("t", name, 3) == 2 {
			table = name
		}
	}
	for i := range 3 {
		if _, err := wide.Publish(t.Context(), mq.Record{Tenant: "t", Table: table, Payload: fmt.Appendf(nil, "%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	_ = wide.Close(t.Context())

	cfg.Partitions, cfg.ManageTopology = 1, false
	q := open(t, cfg) // the extra streams are no difference: boot is not refused
	extra, err := q.ExtraPartitions(t.Context())
	if err != nil || len(extra) != 2 || extra[1] != 0 || extra[2] != 3 {
		t.Fatalf("extra partitions %v, %v; want {1:0 2:3}", extra, err)
	}
	sub, err := q.Subscribe(t.Context(), 2)
	if err != nil {
		t.Fatalf("subscribe to the extra partition: %v", err)
	}
	defer sub.Close()
	var got int
	deadline := time.Now().Add(10 * time.Second)
	for got < 3 && time.Now().Before(deadline) {
		ds, err := sub.Fetch(t.Context(), 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if d.Meta().Partition != 2 {
				t.Fatalf("delivery of partition %d, want 2", d.Meta().Partition)
			}
			got += len(d.Records())
			if err := d.Ack(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got != 3 {
		t.Fatalf("delivered %d records from the extra partition, want 3", got)
	}
	if extra, err := q.ExtraPartitions(t.Context()); err != nil || extra[2] != 0 {
		t.Fatalf("after the acks: %v, %v; want partition 2 drained", extra, err)
	}
}
