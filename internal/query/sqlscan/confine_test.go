package sqlscan

import (
	"errors"
	"testing"
)

// TestConfineAccepts lists statements a tenant's admin key needs for its own tables.
func TestConfineAccepts(t *testing.T) {
	for _, sql := range []string{
		"CREATE TABLE ev (id UInt64, s String) ENGINE = MergeTree ORDER BY id",
		"CREATE TABLE IF NOT EXISTS acme.ev (id UInt64) ENGINE = ReplacingMergeTree ORDER BY id",
		"CREATE TABLE m (id UInt64) ENGINE = Memory",
		"CREATE OR REPLACE VIEW v AS SELECT id FROM ev WHERE id > 1",
		"CREATE MATERIALIZED VIEW mv TO acme.totals AS SELECT count() AS n FROM ev",
		"ALTER TABLE ev ADD COLUMN n Nullable(Int32)",
		"ALTER TABLE ev DELETE WHERE id IN (SELECT id FROM old)",
		"DROP TABLE IF EXISTS ev",
		"TRUNCATE TABLE ev",
		"RENAME TABLE ev TO ev2",
		"OPTIMIZE TABLE ev FINAL",
		"EXCHANGE TABLES a AND b",
		"INSERT INTO ev SELECT id FROM staging",
		"SELECT e.id FROM ev AS e JOIN acme.other AS o ON e.id = o.id",
		"SHOW TABLES",
		"SHOW TABLES FROM acme",
		"SHOW CREATE TABLE ev",
		"SHOW COLUMNS FROM ev FROM acme",
		"DESCRIBE TABLE ev",
		"EXISTS TABLE ev",
		"EXPLAIN SELECT * FROM ev",
	} {
		if err := Confine(sql, "acme"); err != nil {
			t.Errorf("%s: %v", sql, err)
		}
	}
}

// TestConfineRefuses lists statements that would reach another tenant, the server or the
// outside world.
func TestConfineRefuses(t *testing.T) {
	for _, sql := range []string{
		"SELECT * FROM globex.events",
		"SELECT * FROM `globex`.`events`",
		"SELECT * FROM ev WHERE id IN (SELECT id FROM globex.ev)",
		"SELECT * FROM merge('globex', '.*')",
		"SELECT * FROM url('http://169.254.169.254/latest', CSV)",
		"SELECT dictGet('globex.d', 'x', 1)",
		"SELECT * FROM system.query_log",
		"CREATE TABLE spy ENGINE = Merge('globex', '.*')",
		"CREATE TABLE spy (id UInt64) ENGINE = Distributed(c, globex, events)",
		"CREATE TABLE spy (id UInt64) ENGINE = URL('http://x/', CSV)",
		"CREATE TABLE spy AS globex.events",
		"CREATE VIEW spy AS SELECT * FROM globex.events",
		"CREATE MATERIALIZED VIEW mv TO globex.t AS SELECT * FROM ev",
		"CREATE DATABASE x",
		"CREATE DICTIONARY d (id UInt64) PRIMARY KEY id SOURCE(CLICKHOUSE(TABLE 'x')) LAYOUT(FLAT()) LIFETIME(0)",
		"CREATE USER u",
		"CREATE FUNCTION f AS (x) -> x",
		"DROP DATABASE globex",
		"DROP TABLE globex.events",
		"TRUNCATE DATABASE globex",
		"TRUNCATE ALL TABLES FROM globex",
		"RENAME TABLE ev TO globex.ev",
		"ALTER TABLE ev ATTACH PARTITION tuple() FROM globex.events",
		"ALTER TABLE ev MOVE PARTITION tuple() TO TABLE globex.events",
		"INSERT INTO globex.events VALUES (1)",
		"INSERT INTO FUNCTION remote('h:9000', globex, events) SELECT 1",
		"INSERT INTO ev SELECT * FROM s3('https://bucket/x')",
		"SHOW TABLES FROM globex",
		"SHOW COLUMNS FROM events FROM globex",
		"SHOW DATABASES",
		"SHOW PROCESSLIST",
		"SYSTEM FLUSH LOGS",
		"KILL QUERY WHERE 1",
		"GRANT ALL ON *.* TO u",
		"USE globex",
		"SET readonly = 0",
		"DETACH TABLE ev",
		"SELECT {db:Identifier}",
		"DROP TABLE ev; DROP TABLE ev2",
	} {
		err := Confine(sql, "acme")
		if err == nil {
			t.Errorf("%s: accepted", sql)
			continue
		}
		if !errors.Is(err, ErrRejected) {
			t.Errorf("%s: %v does not wrap ErrRejected", sql, err)
		}
	}
}

func FuzzConfine(f *testing.F) {
	f.Add("SELECT * FROM globex.events")
	f.Add("CREATE TABLE ev (id UInt64) ENGINE = MergeTree ORDER BY id")
	f.Fuzz(func(t *testing.T, sql string) {
		_ = Confine(sql, "acme") // must not panic
	})
}
