package bench

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// Columns is the explicit column list of the standard benchmark table, in insert order.
var Columns = []string{"ts", "id", "user", "kind", "value", "tags", "note"}

// CreateTableSQL returns the DDL of the standard seven-column benchmark table. kind is a plain
// String so the DDL also runs on ClickHouse 18.16, where LowCardinality is experimental.
func CreateTableSQL(table string) string {
	return "CREATE TABLE IF NOT EXISTS " + table + " (ts DateTime, id UInt64, user String, kind String, " +
		"value Float64, tags Array(String), note Nullable(String)) ENGINE = MergeTree ORDER BY (kind, ts)"
}

// Row is one generated row of the standard table.
type Row struct {
	TS    time.Time
	ID    uint64
	User  string
	Kind  string
	Value float64
	Tags  []string
	Note  *string
}

var kinds = []string{"click", "view", "purchase", "signup", "logout"}

// genRows returns n rows whose ids start at firstID; the content is deterministic for a seed.
func genRows(seed uint64, firstID uint64, n int, now time.Time) []Row {
	r := rand.New(rand.NewPCG(seed, firstID))
	rows := make([]Row, n)
	for i := range rows {
		row := Row{
			TS:    now.Add(-time.Duration(r.IntN(3600)) * time.Second).UTC().Truncate(time.Second),
			ID:    firstID + uint64(i),
			User:  "user_" + strconv.Itoa(r.IntN(10000)),
			Kind:  kinds[r.IntN(len(kinds))],
			Value: float64(r.IntN(1_000_000)) / 100,
			Tags:  []string{"t" + strconv.Itoa(r.IntN(20)), "t" + strconv.Itoa(r.IntN(20))},
		}
		if r.IntN(4) == 0 {
			note := fmt.Sprintf("note %d ✓", r.IntN(1000))
			row.Note = &note
		}
		rows[i] = row
	}
	return rows
}

// appendJSON appends one row as a JSON object. The timestamp uses ClickHouse's own
// "YYYY-MM-DD hh:mm:ss" form, which both the gateway and JSONEachRow on any server version parse.
func appendJSON(b []byte, row Row) []byte {
	b = append(b, `{"ts":"`...)
	b = row.TS.AppendFormat(b, time.DateTime)
	b = append(b, `","id":`...)
	b = strconv.AppendUint(b, row.ID, 10)
	b = append(b, `,"user":`...)
	b = strconv.AppendQuote(b, row.User)
	b = append(b, `,"kind":`...)
	b = strconv.AppendQuote(b, row.Kind)
	b = append(b, `,"value":`...)
	b = strconv.AppendFloat(b, row.Value, 'f', -1, 64)
	b = append(b, `,"tags":[`...)
	for i, t := range row.Tags {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, t)
	}
	b = append(b, `],"note":`...)
	if row.Note == nil {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, *row.Note)
	}
	return append(b, '}')
}

// appendJSONString quotes s as JSON, keeping non-ASCII UTF-8 as is (strconv.Quote would write Go
// escapes such as \u2713 that are valid JSON too, but this keeps unicode exercised in bodies).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, fmt.Sprintf(`\u%04x`, c)...)
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// encodeBody encodes rows as NDJSON (one object per line) or as a JSON array.
func encodeBody(rows []Row, format string) []byte {
	var b []byte
	if format == FormatJSON {
		b = append(b, '[')
	}
	for i, row := range rows {
		if i > 0 {
			if format == FormatJSON {
				b = append(b, ',')
			} else {
				b = append(b, '\n')
			}
		}
		b = appendJSON(b, row)
	}
	if format == FormatJSON {
		b = append(b, ']')
	} else {
		b = append(b, '\n')
	}
	return b
}

func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Batch is one pre-generated request: the rows, and their encoded (maybe compressed) body.
type Batch struct {
	Rows []Row
	Body []byte
}

// genBatches pre-generates count batches of rowsPerBatch rows each.
func genBatches(count, rowsPerBatch int, format string, gz bool, now time.Time) ([]Batch, error) {
	out := make([]Batch, count)
	for i := range out {
		rows := genRows(1, uint64(i*rowsPerBatch)+1, rowsPerBatch, now)
		body := encodeBody(rows, format)
		if gz {
			var err error
			if body, err = gzipBytes(body); err != nil {
				return nil, err
			}
		}
		out[i] = Batch{Rows: rows, Body: body}
	}
	return out, nil
}
