package chclients

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// TestClickHouseGoHTTPCompression runs clickhouse-go/v2 in HTTP mode with LZ4 and ZSTD
// compression, which send an INSERT's body as ClickHouse's compressed blocks (?decompress=1) and
// ask for every read's result in them (?compress=1): PrepareBatch/Append/Send lands each row
// once, Query/Scan reads them back (a result of many blocks too), and a bad row and an unknown
// table are still ClickHouse exceptions the client reads.
func TestClickHouseGoHTTPCompression(t *testing.T) {
	t.Parallel()
	tg := gatewayTarget(t)
	for _, m := range []clickhouse.CompressionMethod{clickhouse.CompressionLZ4, clickhouse.CompressionZSTD} {
		t.Run(m.String(), func(t *testing.T) {
			conn := openHTTP(t, tg, &clickhouse.Compression{Method: m})
			ctx := t.Context()
			if err := conn.Ping(ctx); err != nil {
				t.Fatalf("Ping: %v", err)
			}

			table := "go_" + m.String()
			tg.createTable(t, table, goCols)
			want := []goRow{
				{ID: "a", N: 1, Level: "info"},
				{ID: "b", N: 2, Level: "warn", Note: strp("x")},
				{ID: "c", N: 4294967295, Level: "info", Note: strp("comma, \"quoted\"\n")},
			}
			// Enough rows that the result is several blocks (the gateway flushes every 64 KiB).
			long := strings.Repeat("z", 200)
			for i := range 3000 {
				want = append(want, goRow{ID: fmt.Sprintf("d%05d", i), N: uint32(i), Level: "warn", Note: &long})
			}
			if err := sendBatch(ctx, conn, table, "", want); err != nil { // PrepareBatch runs DESCRIBE, compressed too
				t.Fatal(err)
			}
			tg.landed(t, table, len(want))
			got := readBack(t, conn, table)
			if fmt.Sprint(rowsText(got)) != fmt.Sprint(rowsText(want)) {
				t.Fatalf("read back %d rows, want %d (first %v)", len(got), len(want), rowsText(got)[:min(3, len(got))])
			}

			bad := "go_bad_" + m.String()
			tg.createTable(t, bad, goCols)
			err := sendBatch(typedBatch(ctx), conn, bad, " (id, n, level, note, at)", []goRow{{ID: "a", N: 1, Level: "info"}, {ID: "b", N: 2}})
			var exc *clickhouse.Exception
			if !errors.As(err, &exc) || !strings.Contains(exc.Message, "row 2") {
				t.Fatalf("bad row: %v (%T), want a ClickHouse exception naming row 2", err, err)
			}
			if n := tg.count(t, bad); n != 0 {
				t.Fatalf("%d rows of the refused batch landed", n)
			}

			rows, err := conn.Query(ctx, "SELECT id FROM no_such_table")
			if err == nil {
				err = rows.Err()
				rows.Close()
			}
			if !errors.As(err, &exc) || exc.Code != 60 {
				t.Fatalf("unknown table: %v (%T), want exception 60 UNKNOWN_TABLE", err, err)
			}
		})
	}
}
