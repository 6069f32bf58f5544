package chdbstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/chdbstore"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// The same 7-column table and rows as clickhousestore's BenchmarkInsert.
const benchDDL = `CREATE TABLE %s.ev (id UInt64, ts DateTime, name String, n UInt32, v Float64, tag Nullable(String), arr Array(String))
ENGINE = MergeTree ORDER BY (ts, id)`

const benchRows = 10000

func benchCanonical() [][]byte {
	rows := make([][]byte, benchRows)
	for i := range rows {
		tag := "null"
		if i%3 != 0 {
			tag = fmt.Sprintf(`"tag-%d"`, i%10)
		}
		rows[i] = fmt.Appendf(nil, `[%d,"2024-01-02 03:%02d:%02d","event-name-%d",%d,%d.25,%s,["a","b%d"]]`,
			i, i/60%60, i%60, i%100, i*7, i, tag, i%5)
	}
	return rows
}

// BenchmarkInsert measures Store.Insert of 10k canonical rows into the embedded engine.
func BenchmarkInsert(b *testing.B) {
	s, err := chdbstore.New(chdbstore.Config{Path: b.TempDir(), LibPath: testsvc.CHDBLib(b)}, chdbstore.Deps{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	ctx := context.Background()
	if err := s.Exec(ctx, store.Target{Database: "default"}, "CREATE DATABASE bench"); err != nil {
		b.Fatal(err)
	}
	target := store.Target{Database: "bench"}
	if err := s.Exec(ctx, target, fmt.Sprintf(benchDDL, "bench")); err != nil {
		b.Fatal(err)
	}
	batch := store.Batch{Target: target, Table: "ev", Columns: []string{"id", "ts", "name", "n", "v", "tag", "arr"}, Rows: benchCanonical()}
	b.Run("store", func(b *testing.B) {
		b.SetBytes(int64(batch.Bytes()))
		for b.Loop() {
			if err := s.Insert(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(benchRows*b.N)/b.Elapsed().Seconds(), "rows/s")
	})
}
