package query

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/query/sqlscan"
	"github.com/wavehouse/wavehouse/internal/store"
)

// describeLayout is the answer of DESCRIBE TABLE on current ClickHouse servers (and chDB),
// which clients read by position (clickhouse-go's PrepareBatch scans seven columns).
var describeLayout = []string{"name", "type", "default_type", "default_expression", "comment", "codec_expression", "ttl_expression"}

// describeOlder names what older servers call a column of describeLayout: ClickHouse 18.16
// answers name, type, default_type, default_expression, comment_expression.
var describeOlder = map[string]string{"comment_expression": "comment"}

// errDescribeAnswer is a store's DESCRIBE answer the gateway cannot read (no name column, a
// row that is not an array of values).
var errDescribeAnswer = errors.New("query: unreadable DESCRIBE answer")

// describe is how a DESCRIBE statement's answer is shaped on the ClickHouse interface: in
// describeLayout whatever the store's version, and without the columns keep refuses (those a
// token's role may not read).
type describe struct {
	keep func(col string) bool // nil: every column
}

// describeOf returns the shaping of sql when it is a DESCRIBE statement, and the table it
// describes when the scanner is sure of it ("" otherwise).
func describeOf(sql string) (*describe, sqlscan.Table, bool) {
	switch sqlscan.LeadingKeyword(sql) {
	case "DESCRIBE", "DESC":
	default:
		return nil, sqlscan.Table{}, false
	}
	var t sqlscan.Table
	if tables, sure := sqlscan.Tables(sql); sure && len(tables) == 1 {
		t = tables[0]
	}
	return &describe{}, t, true
}

// describeRequest prepares r, the read of sql on the ClickHouse interface, when sql is a
// DESCRIBE: its answer is shaped in describeLayout, it bypasses the cache (a schema change
// bumps no table version), and under a policy it lists the columns the caller may read instead
// of being refused (a DESCRIBE reads no rows; the role's columns are applied by acc.Readable).
// Everything else of the read (statement check, confinement to the tenant's tables, limits) is
// unchanged.
func describeRequest(r *Request, sql, database string, acc Access) error {
	d, table, ok := describeOf(sql)
	if !ok {
		return nil
	}
	r.describe, r.NoCache = d, true
	if r.Policy == nil || acc.Readable == nil || table.Name == "" || (table.Database != "" && table.Database != database) {
		return nil
	}
	keep, err := acc.Readable(table.Name)
	if err != nil {
		return err
	}
	d.keep, r.Policy = keep, nil
	return nil
}

// rows wraps the store's answer to the DESCRIBE.
func (d *describe) rows(r store.Rows) (store.Rows, error) {
	src := r.Columns()
	from := make([]int, len(describeLayout)) // index in src of each layout column, -1: absent
	current := true
	for i, name := range describeLayout {
		from[i] = slices.IndexFunc(src, func(c store.ResultColumn) bool {
			return c.Name == name || describeOlder[c.Name] == name
		})
		current = current && from[i] == i && src[i].Name == name
	}
	if from[0] < 0 {
		return nil, fmt.Errorf("%w: the store's DESCRIBE answer has no name column", errDescribeAnswer)
	}
	dr := &describeRows{Rows: r, keep: d.keep, nameAt: from[0]}
	if current {
		dr.cols = src // a current server's own answer, extra columns (describe_include_subcolumns) included
		return dr, nil
	}
	str, err := chtype.Parse("String")
	if err != nil {
		return nil, err
	}
	dr.from = from
	for _, name := range describeLayout {
		dr.cols = append(dr.cols, store.ResultColumn{Name: name, TypeName: str.Name, Type: str})
	}
	return dr, nil
}

// describeRows is a DESCRIBE answer in describeLayout: the store's rows, their values moved to
// the layout's positions (an absent column is an empty string), the rows of columns keep
// refuses skipped.
type describeRows struct {
	store.Rows
	cols   []store.ResultColumn
	from   []int // nil: the store's rows as they are
	nameAt int   // the store's index of the name column
	keep   func(string) bool
	row    []byte
	err    error
}

func (d *describeRows) Columns() []store.ResultColumn { return d.cols }
func (d *describeRows) Row() []byte                   { return d.row }

func (d *describeRows) Err() error {
	if d.err != nil {
		return d.err
	}
	return d.Rows.Err()
}

func (d *describeRows) Next() bool {
	for d.err == nil && d.Rows.Next() {
		raw := d.Rows.Row()
		if d.keep == nil && d.from == nil {
			d.row = raw
			return true
		}
		var vals []json.RawMessage
		var name string
		if err := json.Unmarshal(raw, &vals); err != nil || d.nameAt >= len(vals) || json.Unmarshal(vals[d.nameAt], &name) != nil {
			d.err = fmt.Errorf("%w: the store's DESCRIBE row %s has no column name", errDescribeAnswer, raw)
			return false
		}
		if d.keep != nil && !d.keep(name) {
			continue
		}
		if d.from == nil {
			d.row = raw
			return true
		}
		b := append(d.row[:0], '[')
		for i, j := range d.from {
			if i > 0 {
				b = append(b, ',')
			}
			if j < 0 || j >= len(vals) {
				b = append(b, `""`...)
				continue
			}
			b = append(b, bytes.TrimSpace(vals[j])...)
		}
		d.row = append(b, ']')
		return true
	}
	return false
}
