package sqlscan

import (
	"errors"
	"testing"
)

func TestCheckAccepts(t *testing.T) {
	for _, sql := range []string{
		"SELECT 1",
		"select * from events where id = 1",
		"  \n\tSELECT 1;",
		"SELECT 1; -- trailing comment",
		"SELECT 1;\n/* done */  ",
		"-- leading comment\nSELECT 1",
		"/* block */ SELECT 1",
		"# hash comment\nSELECT 1",
		"SELECT 'DROP TABLE x; INSERT INTO y'",
		`SELECT "INSERT" FROM t`,
		"SELECT `delete` FROM t",
		"SELECT 'it''s', 'back\\'slash; DROP'",
		"WITH 1 AS x SELECT x",
		"WITH t AS (SELECT * FROM events) SELECT count() FROM t",
		"WITH (SELECT max(ts) FROM events) AS m SELECT m",
		"(SELECT 1) UNION ALL (SELECT 2)",
		"SHOW TABLES",
		"show create table events",
		"DESCRIBE TABLE events",
		"DESC events",
		"EXISTS TABLE events",
		"EXPLAIN SELECT 1",
		"EXPLAIN PLAN header = 1 SELECT * FROM t",
		"EXPLAIN SYNTAX WITH 1 AS x SELECT x",
		"SELECT count() FROM t SETTINGS max_threads = 1 FORMAT JSON",
		"SELECT {id:UInt64}",
		"SELECT '\\'; DROP TABLE t; --'",
		"SELECT 'a'';DROP TABLE t;--'",
		"SELECT \"a\\\";DROP\" FROM t",
	} {
		if err := Check(sql); err != nil {
			t.Errorf("Check(%q) = %v; want accepted", sql, err)
		}
	}
}

func TestCheckRefuses(t *testing.T) {
	for _, sql := range []string{
		"",
		"   ",
		"-- only a comment",
		";",
		"INSERT INTO t VALUES (1)",
		"insert into t select 1",
		"ALTER TABLE t DELETE WHERE 1",
		"DROP TABLE t",
		"TRUNCATE TABLE t",
		"CREATE TABLE t (x UInt8) ENGINE = Memory",
		"SET readonly = 0",
		"SYSTEM SHUTDOWN",
		"KILL QUERY WHERE 1",
		"OPTIMIZE TABLE t FINAL",
		"RENAME TABLE a TO b",
		"GRANT ALL ON *.* TO x",
		"USE other",
		"/* SELECT */ DROP TABLE t",
		"-- SELECT\nDROP TABLE t",
		"# SELECT\nDROP TABLE t",
		"SELECT 1; DROP TABLE t",
		"SELECT 1;; ",
		"SELECT 1; SELECT 2",
		"SELECT 1 /* ; */ ; DELETE FROM t",
		"WITH 1 AS x INSERT INTO t SELECT x",
		"WITH x AS (SELECT 1) DELETE FROM t WHERE 1",
		"WITH 1 AS x",
		"SELECT * FROM t INTO OUTFILE '/tmp/x'",
		"SELECT 1 into outfile 'x' FORMAT CSV",
		"EXPLAIN INSERT INTO t SELECT 1",
		"EXPLAIN ALTER TABLE t DELETE WHERE 1",
		"EXPLAIN SHOW TABLES",
		"(INSERT INTO t VALUES (1))",
		"(SHOW TABLES)",
		"SELECT 'unterminated",
		`SELECT "unterminated`,
		"SELECT 1 /* unterminated",
		"SELECT 1 /* nested /* */ ; DROP TABLE t */",
		"SELECT $$ --$$; DROP TABLE t",
		"SELECT (1",
		"SELECT 1)",
		"'SELECT' 1",
		"`SELECT` 1",
		"WATCH live_view",
		"SELECT '\\\\'; DROP TABLE t; --'",
		"\ufeffSELECT 1",
		"SELECT 1 -- x\n; DROP TABLE t",
	} {
		err := Check(sql)
		if err == nil {
			t.Errorf("Check(%q) accepted; want refused", sql)
		} else if !errors.Is(err, ErrRejected) {
			t.Errorf("Check(%q) = %v; want it to wrap ErrRejected", sql, err)
		}
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		"SELECT 1", "WITH 1 AS x SELECT x", "SELECT 'a''b\\'c' -- x\n", "/* a */ SHOW TABLES;",
		"SELECT `a``b`, \"c\\\"d\" FROM db.t", "INSERT INTO t VALUES (1)", "SELECT 1; DROP TABLE t",
		"EXPLAIN SELECT 1 INTO OUTFILE 'x'", "SELECT (((1)))", "SELECT 1e-5, .5, 0x1F", "# x\nDESC t",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		err := Check(sql)
		if err != nil && !errors.Is(err, ErrRejected) {
			t.Fatalf("Check(%q) = %v; want nil or ErrRejected", sql, err)
		}
		// Whatever passes the check is one statement that normalises to a passing one.
		if err == nil {
			if err2 := Check(Normalize(sql)); err2 != nil {
				t.Fatalf("Check(%q) accepted, Check(Normalize) = %v", sql, err2)
			}
		}
		if n := Normalize(sql); Normalize(n) != n {
			t.Fatalf("Normalize is not idempotent on %q: %q -> %q", sql, n, Normalize(n))
		}
	})
}
