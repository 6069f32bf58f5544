package clickhousestore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/store"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// BenchmarkAppendOnly measures the client-side cost of filling a 10k-row batch, without
// sending it: raw clickhouse-go Append of Go values against Store's conversion of canonical
// rows. It isolates WaveHouse's overhead from the server, whose share dominates end-to-end
// numbers on a loaded machine.
func BenchmarkAppendOnly(b *testing.B) {
	ch := testsvc.ClickHouseServer(b)
	ctx := context.Background()
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{ch.NativeAddr}})
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	db := testsvc.UniqueName(b, "bench")
	if err := conn.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		b.Fatal(err)
	}
	defer conn.Exec(context.Background(), "DROP DATABASE "+db)
	if err := conn.Exec(ctx, "CREATE TABLE "+db+".ev (id UInt64, ts DateTime, name String, n UInt32, v Float64, tag Nullable(String), arr Array(String)) ENGINE = MergeTree ORDER BY id"); err != nil {
		b.Fatal(err)
	}
	const n = 10000
	ins := "INSERT INTO " + db + ".ev (id, ts, name, n, v, tag, arr)"
	b.Run("raw", func(b *testing.B) {
		ts := time.Date(2024, 1, 2, 3, 0, 0, 0, time.UTC)
		tags := make([]*string, n)
		for i := range tags {
			if i%3 != 0 {
				t := fmt.Sprintf("tag-%d", i%10)
				tags[i] = &t
			}
		}
		for b.Loop() {
			batch, err := conn.PrepareBatch(ctx, ins)
			if err != nil {
				b.Fatal(err)
			}
			for i := range n {
				if err := batch.Append(uint64(i), ts, "event-name-x", uint32(i), float64(i), tags[i], []string{"a", "b"}); err != nil {
					b.Fatal(err)
				}
			}
			_ = batch.Abort()
		}
	})
	b.Run("store", func(b *testing.B) {
		rows := make([][]byte, n)
		for i := range rows {
			tag := "null"
			if i%3 != 0 {
				tag = fmt.Sprintf(`"tag-%d"`, i%10)
			}
			rows[i] = fmt.Appendf(nil, `[%d,"2024-01-02 03:00:00","event-name-x",%d,%d,%s,["a","b"]]`, i, i, i, tag)
		}
		sb := store.Batch{Table: "ev", Columns: []string{"id", "ts", "name", "n", "v", "tag", "arr"}, Rows: rows}
		var types []*chtype.Type
		for _, s := range []string{"UInt64", "DateTime", "String", "UInt32", "Float64", "Nullable(String)", "Array(String)"} {
			t, _ := chtype.Parse(s)
			types = append(types, t)
		}
		s := &Store{}
		for b.Loop() {
			batch, err := conn.PrepareBatch(ctx, ins)
			if err != nil {
				b.Fatal(err)
			}
			if err := s.appendRows(batch, sb, types); err != nil {
				b.Fatal(err)
			}
			_ = batch.Abort()
		}
	})
}
