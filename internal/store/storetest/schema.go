package storetest

import (
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/chtype"
	"github.com/wavehouse/wavehouse/internal/store"
)

// commonDDL is a table with every common type ClickHouse 18.16 has, and computed columns.
const commonDDL = `CREATE TABLE %s.common (
	id UInt64,
	s String,
	fs FixedString(4),
	i8 Int8,
	i64 Int64,
	u64 UInt64,
	f32 Float32,
	f64 Float64,
	d Date,
	dt DateTime,
	dtz DateTime('Asia/Tokyo'),
	ns Nullable(String),
	arr Array(String),
	an Array(Nullable(Int32)),
	lc LowCardinality(String),
	uid UUID,
	dec Decimal(18, 4),
	e Enum8('a' = 1, 'b' = 2),
	tup Tuple(String, UInt8),
	dflt UInt32 DEFAULT 7,
	mat UInt64 MATERIALIZED id * 2,
	al String ALIAS s
) ENGINE = MergeTree ORDER BY id`

const modernDDL = `CREATE TABLE %s.modern (
	id UInt64,
	dt64 DateTime64(3),
	d32 Date32,
	b Bool,
	m Map(String, UInt64),
	ip4 IPv4,
	ip6 IPv6,
	i128 Int128,
	nt Tuple(a String, b Nullable(UInt8)),
	j JSON
) ENGINE = MergeTree ORDER BY id`

type colWant struct {
	name     string
	kind     chtype.Kind
	dk       store.DefaultKind
	writable bool
	required bool
}

func checkColumns(t *testing.T, got []store.Column, want []colWant) {
	t.Helper()
	if len(got) != len(want) {
		names := make([]string, len(got))
		for i, c := range got {
			names[i] = c.Name
		}
		t.Fatalf("got %d columns %v, want %d", len(got), names, len(want))
	}
	for i, w := range want {
		c := got[i]
		if c.Name != w.name || c.Type == nil || c.Type.Kind != w.kind || c.DefaultKind != w.dk ||
			c.Writable() != w.writable || c.Required() != w.required {
			t.Errorf("column %d: got %s %s (kind %v) default %q writable=%v required=%v; want %s kind %v default %q writable=%v required=%v",
				i, c.Name, c.TypeName, c.Type.Kind, c.DefaultKind, c.Writable(), c.Required(),
				w.name, w.kind, w.dk, w.writable, w.required)
		}
	}
}

func testSchemaCommonTypes(t *testing.T, h *Harness, _ Caps) {
	s := h.Store
	target := database(t, s)
	exec(t, s, target, sprintf(commonDDL, target.Database))
	cols, err := s.Columns(t.Context(), target, "common")
	if err != nil {
		t.Fatal(err)
	}
	checkColumns(t, cols, []colWant{
		{"id", chtype.UInt64, "", true, true},
		{"s", chtype.String, "", true, true},
		{"fs", chtype.FixedString, "", true, true},
		{"i8", chtype.Int8, "", true, true},
		{"i64", chtype.Int64, "", true, true},
		{"u64", chtype.UInt64, "", true, true},
		{"f32", chtype.Float32, "", true, true},
		{"f64", chtype.Float64, "", true, true},
		{"d", chtype.Date, "", true, true},
		{"dt", chtype.DateTime, "", true, true},
		{"dtz", chtype.DateTime, "", true, true},
		{"ns", chtype.Nullable, "", true, false},
		{"arr", chtype.Array, "", true, true},
		{"an", chtype.Array, "", true, true},
		{"lc", chtype.LowCardinality, "", true, true},
		{"uid", chtype.UUID, "", true, true},
		{"dec", chtype.Decimal, "", true, true},
		{"e", chtype.Enum8, "", true, true},
		{"tup", chtype.Tuple, "", true, true},
		{"dflt", chtype.UInt32, store.DefaultDefault, true, false},
		{"mat", chtype.UInt64, store.DefaultMaterialized, false, false},
		{"al", chtype.String, store.DefaultAlias, false, false},
	})
	byName := map[string]store.Column{}
	for _, c := range cols {
		byName[c.Name] = c
	}
	if c := byName["fs"]; c.Type.Len != 4 {
		t.Errorf("fs: FixedString length %d, want 4", c.Type.Len)
	}
	if c := byName["dec"]; c.Type.Precision != 18 || c.Type.Scale != 4 {
		t.Errorf("dec: got Decimal(%d, %d), want (18, 4)", c.Type.Precision, c.Type.Scale)
	}
	if c := byName["dtz"]; c.Type.TZ != "Asia/Tokyo" {
		t.Errorf("dtz: time zone %q", c.Type.TZ)
	}
	if c := byName["e"]; len(c.Type.Enum) != 2 || c.Type.Enum[1].Name != "b" || c.Type.Enum[1].Value != 2 {
		t.Errorf("e: enum %+v", c.Type.Enum)
	}
	if c := byName["dflt"]; !strings.Contains(c.DefaultExpr, "7") {
		t.Errorf("dflt: default expression %q", c.DefaultExpr)
	}
	if c := byName["lc"]; c.Type.Elem.Kind != chtype.String {
		t.Errorf("lc: %s", c.TypeName)
	}
}

func testSchemaModernTypes(t *testing.T, h *Harness, caps Caps) {
	if !caps.ModernTypes {
		t.Log("engine has no modern types (capability ModernTypes=false); nothing to check")
		return
	}
	s := h.Store
	target := database(t, s)
	exec(t, s, target, sprintf(modernDDL, target.Database))
	cols, err := s.Columns(t.Context(), target, "modern")
	if err != nil {
		t.Fatal(err)
	}
	checkColumns(t, cols, []colWant{
		{"id", chtype.UInt64, "", true, true},
		{"dt64", chtype.DateTime64, "", true, true},
		{"d32", chtype.Date32, "", true, true},
		{"b", chtype.Bool, "", true, true},
		{"m", chtype.Map, "", true, true},
		{"ip4", chtype.IPv4, "", true, true},
		{"ip6", chtype.IPv6, "", true, true},
		{"i128", chtype.Int128, "", true, true},
		{"nt", chtype.Tuple, "", true, true},
		{"j", chtype.JSON, "", true, true},
	})
	if cols[1].Type.Precision != 3 {
		t.Errorf("dt64 precision %d", cols[1].Type.Precision)
	}
	if cols[8].Type.Fields[1].Name != "b" {
		t.Errorf("nt: %s", cols[8].TypeName)
	}
}

func testUnknown(t *testing.T, h *Harness, _ Caps) {
	s := h.Store
	target := database(t, s)
	_, err := s.Columns(t.Context(), target, "nope")
	wantErr(t, "Columns of a missing table", err, store.ErrUnknownTable)
	err = s.Insert(t.Context(), store.Batch{Target: target, Table: "nope", Columns: []string{"a"}, Rows: rowsOf(`[1]`)})
	wantErr(t, "Insert into a missing table", err, store.ErrUnknownTable)
	_, err = queryAll(t, s, target, store.Query{SQL: "SELECT * FROM " + target.Database + ".nope"})
	wantErr(t, "Query of a missing table", err, store.ErrUnknownTable)

	missingDB := store.Target{Tenant: target.Tenant, Database: target.Database + "_missing"}
	_, err = s.Columns(t.Context(), missingDB, "nope")
	wantErr(t, "Columns in a missing database", err, store.ErrUnknownDatabase)
	err = s.Insert(t.Context(), store.Batch{Target: missingDB, Table: "nope", Columns: []string{"a"}, Rows: rowsOf(`[1]`)})
	wantErr(t, "Insert into a missing database", err, store.ErrUnknownDatabase)
	if store.IsTransient(err) || !store.SchemaChanged(err) {
		t.Errorf("unknown database must be permanent and mean a schema change: %v", err)
	}
}
