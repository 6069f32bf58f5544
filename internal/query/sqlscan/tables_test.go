package sqlscan

import (
	"reflect"
	"testing"
)

func TestTables(t *testing.T) {
	cases := []struct {
		sql  string
		want []string
		sure bool
	}{
		{"SELECT 1", nil, true},
		{"SELECT * FROM events", []string{"events"}, true},
		{"select * from Events e where x = 'FROM other'", []string{"Events"}, true},
		{"SELECT * FROM db.events", []string{"db.events"}, true},
		{"SELECT * FROM `my db`.`ev``ents`", []string{"my db.ev`ents"}, true},
		{`SELECT * FROM "quoted"`, []string{"quoted"}, true},
		{"SELECT * FROM a, b AS bb, c cc", []string{"a", "b", "c"}, true},
		{"SELECT * FROM a FINAL, b", []string{"a", "b"}, true},
		{"SELECT * FROM a JOIN b ON a.id = b.id LEFT JOIN c USING id", []string{"a", "b", "c"}, true},
		{"SELECT * FROM a GLOBAL ANY LEFT JOIN db.b AS x ON 1", []string{"a", "db.b"}, true},
		{"SELECT * FROM a ARRAY JOIN arr AS v", []string{"a"}, true},
		{"SELECT * FROM a LEFT ARRAY JOIN arr", []string{"a"}, true},
		{"SELECT * FROM (SELECT * FROM inner_t) AS s JOIN other ON 1", []string{"inner_t", "other"}, true},
		{"SELECT * FROM ((SELECT 1) UNION ALL (SELECT * FROM u))", []string{"u"}, true},
		{"SELECT (SELECT max(x) FROM m), 2 FROM t", []string{"m", "t"}, true},
		{"SELECT * FROM t WHERE id IN (SELECT id FROM s)", []string{"s", "t"}, true},
		{"SELECT * FROM t WHERE id IN s", []string{"s", "t"}, true},
		{"SELECT * FROM t WHERE id NOT IN (1, 2)", []string{"t"}, true},
		{"WITH x AS (SELECT * FROM src) SELECT * FROM x", []string{"src", "x"}, true},
		{"SELECT * FROM t -- FROM hidden\n", []string{"t"}, true},
		{"SELECT * /* FROM hidden */ FROM t", []string{"t"}, true},
		{"SELECT * FROM t;", []string{"t"}, true},
		{"SELECT * FROM numbers(10)", nil, false},
		{"SELECT * FROM remote('h', db.t)", nil, false},
		{"SELECT * FROM t JOIN file('x.csv') ON 1", []string{"t"}, false},
		{"SELECT * FROM {tbl:Identifier}", nil, false},
		{"SELECT * FROM t WHERE x IN {tbl:Identifier}", []string{"t"}, false},
		{"SELECT {c:Identifier} FROM t", []string{"t"}, false},
		{"SELECT * FROM t WHERE id = {id:UInt64} AND u IN {us:Array(String)}", []string{"t"}, true},
		{"SELECT * FROM {tbl:String}", nil, false},
		{"SELECT * FROM t WHERE id = {id", []string{"t"}, false},
		{"SELECT dictGet('d', 'v', 1) FROM t", []string{"t"}, false},
		{"SELECT joinGet('j', 'v', 1)", nil, false},
		{"SELECT * FROM", nil, false},
		{"SELECT * FROM 'x'", nil, false},
		{"SHOW TABLES", nil, false},
		{"DESCRIBE (SELECT 1)", nil, false}, // DESCRIBE [TABLE] t: TestTablesOfDescribe
		{"INSERT INTO t SELECT * FROM s", nil, false},
		{"SELECT * FROM t; SELECT * FROM u", nil, false},
		{"SELECT 'unterminated FROM t", nil, false},
	}
	for _, c := range cases {
		tables, sure := Tables(c.sql)
		var got []string
		for _, tbl := range tables {
			got = append(got, tbl.String())
		}
		if !reflect.DeepEqual(got, c.want) || sure != c.sure {
			t.Errorf("Tables(%q) = %q, %v; want %q, %v", c.sql, got, sure, c.want, c.sure)
		}
	}
}

func FuzzTables(f *testing.F) {
	for _, s := range []string{
		"SELECT * FROM a, b JOIN c ON 1", "SELECT * FROM db.`t`", "WITH x AS (SELECT * FROM s) SELECT * FROM x",
		"SELECT * FROM numbers(3)", "SELECT * FROM (SELECT 1", "SELECT * FROM t WHERE x IN u", "SELECT * FROM a AS",
		"SELECT * FROM a.", "SELECT * FROM a FINAL,", "SELECT * FROM ((", "SELECT * FROM t ARRAY JOIN",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		tables, sure := Tables(sql)
		if sure && Check(sql) != nil {
			t.Fatalf("Tables(%q) is sure of a statement Check refuses", sql)
		}
		// Normalising never changes which tables are read.
		if sure {
			t2, sure2 := Tables(Normalize(sql))
			if !sure2 || !reflect.DeepEqual(tables, t2) {
				t.Fatalf("Tables(%q) = %v, sure; after Normalize %v, %v", sql, tables, t2, sure2)
			}
		}
		for _, tbl := range tables {
			if tbl.Name == "" {
				t.Fatalf("Tables(%q) returned an empty name", sql)
			}
		}
	})
}
