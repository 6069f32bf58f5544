package app

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/logging"
	"github.com/wavehouse/wavehouse/internal/testutil/logbuf"
)

// TestClusterBootReport boots against the shared 2 × 2 cluster: in insert mode local a
// Distributed table whose sharding key the gateway cannot evaluate (rand()) fails boot, naming
// it and its key; in insert mode distributed the process boots and its log names, per table, how
// inserts reach it and what deduplicates them (block checksums for the Distributed table over
// ReplicatedMergeTree on 18.16).
func TestClusterBootReport(t *testing.T) {
	s := &sharedServers{t: t}
	cfg := testConfig(t)
	c := s.useCluster(t, &cfg)
	db := cfg.Store.ClickHouse.Database
	for _, n := range c.Nodes() {
		for _, q := range []string{
			fmt.Sprintf("CREATE TABLE %[1]s.ev_local (id UInt64) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/%[1]s.ev', '{replica}') ORDER BY id", db),
			fmt.Sprintf("CREATE TABLE %[1]s.ev AS %[1]s.ev_local ENGINE = Distributed(%[2]s, %[1]s, ev_local, intHash64(id))", db, c.Name),
			fmt.Sprintf("CREATE TABLE %[1]s.bad_local (id UInt64) ENGINE = MergeTree ORDER BY id", db),
			fmt.Sprintf("CREATE TABLE %[1]s.bad AS %[1]s.bad_local ENGINE = Distributed(%[2]s, %[1]s, bad_local, rand())", db, c.Name),
		} {
			if _, err := n.Query(t.Context(), q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}

	cfg.Store.ClickHouse.Cluster.Insert = "local"
	a, err := New(cfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err = a.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), db+".bad") || !strings.Contains(err.Error(), "rand()") {
		t.Errorf("boot in insert mode local with a rand() sharding key: Run = %v, want a refusal naming %s.bad and rand()", err, db)
	}

	cfg.Store.ClickHouse.Cluster.Insert = "distributed"
	var out logbuf.Buffer
	log, err := logging.New(&out, logging.Options{Level: "info", Format: "text"})
	if err != nil {
		t.Fatal(err)
	}
	startAppWithLog(t, cfg, log)
	var line string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, "msg=table") && strings.Contains(l, "table=ev ") {
			line = l
		}
	}
	for _, want := range []string{"insert=distributed", "local_table=" + db + ".ev_local", "sharding_key=intHash64(id)", "deduplication=\"replicated block checksum"} {
		if !strings.Contains(line, want) {
			t.Errorf("boot log line of table ev %q lacks %s", line, want)
		}
	}
}
