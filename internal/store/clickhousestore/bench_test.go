package clickhousestore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/store/clickhousestore"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// benchDDL is the 7-column table of the insert benchmarks (the same in chdbstore).
const benchDDL = `CREATE TABLE %s.ev (id UInt64, ts DateTime, name String, n UInt32, v Float64, tag Nullable(String), arr Array(String))
ENGINE = MergeTree ORDER BY (ts, id)`

const benchRows = 10000

var benchCols = []string{"id", "ts", "name", "n", "v", "tag", "arr"}

// benchCanonical returns 10k canonical rows for the bench table.
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

type rawRow struct {
	id   uint64
	ts   time.Time
	name string
	n    uint32
	v    float64
	tag  *string
	arr  []string
}

// benchRaw returns the rows of benchCanonical as Go values.
func benchRaw() []rawRow {
	ts := time.Date(2024, 1, 2, 3, 0, 0, 0, time.UTC)
	rows := make([]rawRow, benchRows)
	for i := range rows {
		var tag *string
		if i%3 != 0 {
			t := fmt.Sprintf("tag-%d", i%10)
			tag = &t
		}
		rows[i] = rawRow{uint64(i), ts.Add(time.Duration(i%3600) * time.Second), fmt.Sprintf("event-name-%d", i%100),
			uint32(i * 7), float64(i) + 0.25, tag, []string{"a", fmt.Sprintf("b%d", i%5)}}
	}
	return rows
}

func rawInsert(ctx context.Context, conn clickhouse.Conn, db string, rows []rawRow) error {
	batch, err := conn.PrepareBatch(ctx, "INSERT INTO "+db+".ev (id, ts, name, n, v, tag, arr)")
	if err != nil {
		return err
	}
	for _, r := range rows {
		if err := batch.Append(r.id, r.ts, r.name, r.n, r.v, r.tag, r.arr); err != nil {
			return err
		}
	}
	return batch.Send()
}

// BenchmarkInsertInterleaved alternates raw clickhouse-go and Store.Insert batch by batch, so
// both see the same machine load, and reports both rates and their ratio.
func BenchmarkInsertInterleaved(b *testing.B) {
	ch := testsvc.ClickHouseServer(b)
	s := newStore(b, ch.NativeAddr)
	b.Cleanup(func() { _ = s.Close(context.Background()) })
	db, target := benchTable(b, s)
	ctx := context.Background()
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{ch.NativeAddr}, Auth: clickhouse.Auth{Database: db},
		Compression: &clickhouse.Compression{Method: clickhouse.CompressionLZ4}})
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	raw := benchRaw()
	batch := store.Batch{Target: target, Table: "ev", Columns: benchCols, Rows: benchCanonical()}
	var rawTime, storeTime time.Duration
	for b.Loop() {
		start := time.Now()
		if err := rawInsert(ctx, conn, db, raw); err != nil {
			b.Fatal(err)
		}
		rawTime += time.Since(start)
		start = time.Now()
		if err := s.Insert(ctx, batch); err != nil {
			b.Fatal(err)
		}
		storeTime += time.Since(start)
	}
	b.ReportMetric(float64(benchRows*b.N)/rawTime.Seconds(), "raw-rows/s")
	b.ReportMetric(float64(benchRows*b.N)/storeTime.Seconds(), "store-rows/s")
	b.ReportMetric(rawTime.Seconds()/storeTime.Seconds(), "store/raw")
}

func benchTable(b *testing.B, s *clickhousestore.Store) (string, store.Target) {
	b.Helper()
	db := testsvc.UniqueName(b, "bench")
	ctx := context.Background()
	if err := s.Exec(ctx, store.Target{Database: "default"}, "CREATE DATABASE "+db); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Exec(context.Background(), store.Target{Database: "default"}, "DROP DATABASE "+db) })
	target := store.Target{Database: db}
	if err := s.Exec(ctx, target, fmt.Sprintf(benchDDL, db)); err != nil {
		b.Fatal(err)
	}
	return db, target
}

// BenchmarkInsert compares Store.Insert of 10k canonical rows with raw clickhouse-go
// PrepareBatch/Append/Send of the same rows as Go values, on the same server and compression.
func BenchmarkInsert(b *testing.B) {
	ch := testsvc.ClickHouseServer(b)
	s := newStore(b, ch.NativeAddr)
	b.Cleanup(func() { _ = s.Close(context.Background()) })
	db, target := benchTable(b, s)
	ctx := context.Background()

	b.Run("raw-clickhouse-go", func(b *testing.B) {
		conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{ch.NativeAddr}, Auth: clickhouse.Auth{Database: db},
			Compression: &clickhouse.Compression{Method: clickhouse.CompressionLZ4}})
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		rows := benchRaw()
		b.ResetTimer()
		for b.Loop() {
			if err := rawInsert(ctx, conn, db, rows); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(benchRows*b.N)/b.Elapsed().Seconds(), "rows/s")
	})

	b.Run("store", func(b *testing.B) {
		rows := benchCanonical()
		batch := store.Batch{Target: target, Table: "ev", Columns: benchCols, Rows: rows}
		b.SetBytes(int64(batch.Bytes()))
		b.ResetTimer()
		for b.Loop() {
			if err := s.Insert(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(benchRows*b.N)/b.Elapsed().Seconds(), "rows/s")
	})
}
