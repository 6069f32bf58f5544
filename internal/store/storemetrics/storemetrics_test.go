package storemetrics_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/chdbstore"
	"github.com/wavehouse/wavehouse/internal/store/storemetrics"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

func TestMetricsCountOutcomes(t *testing.T) {
	inner, err := chdbstore.New(chdbstore.Config{Path: filepath.Join(t.TempDir(), "chdb"), LibPath: testsvc.CHDBLib(t)}, chdbstore.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	s, err := storemetrics.Wrap(inner, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	ctx := t.Context()
	def := store.Target{Database: "default"}
	if err := s.Exec(ctx, def, "CREATE DATABASE m"); err != nil {
		t.Fatal(err)
	}
	target := store.Target{Database: "m"}
	if err := s.Exec(ctx, target, "CREATE TABLE m.t (id UInt64) ENGINE = MergeTree ORDER BY id"); err != nil {
		t.Fatal(err)
	}
	ok := store.Batch{Target: target, Table: "t", Columns: []string{"id"}, Rows: [][]byte{[]byte(`[1]`), []byte(`[2]`)}}
	if err := s.Insert(ctx, ok); err != nil {
		t.Fatal(err)
	}
	bad := store.Batch{Target: target, Table: "t", Columns: []string{"id"}, Rows: [][]byte{[]byte(`["x"]`)}}
	if err := s.Insert(ctx, bad); err == nil {
		t.Fatal("bad insert succeeded")
	}
	rows, err := s.Query(ctx, target, store.Query{SQL: "SELECT count() FROM m.t"})
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	_ = rows.Close()

	if got := value(t, reg, "wavehouse_store_insert_rows_total", "t", "ok"); got != 2 {
		t.Errorf("ok rows = %v, want 2", got)
	}
	if got := value(t, reg, "wavehouse_store_insert_rows_total", "t", "permanent"); got != 1 {
		t.Errorf("rejected rows = %v, want 1", got)
	}
	if n := series(t, reg, "wavehouse_store_query_duration_seconds"); n != 1 {
		t.Errorf("query duration series = %d, want 1", n)
	}
	if n := series(t, reg, "wavehouse_store_errors_total"); n != 1 {
		t.Errorf("error series = %d, want 1 (insert/permanent)", n)
	}
}

func series(t *testing.T, reg *prometheus.Registry, name string) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return len(mf.GetMetric())
		}
	}
	return 0
}

// value returns the counter with the given table and outcome labels.
func value(t *testing.T, reg *prometheus.Registry, name, table, outcome string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var tb, oc string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "table":
					tb = l.GetValue()
				case "outcome":
					oc = l.GetValue()
				}
			}
			if tb == table && oc == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
