package testsvc

import (
	"strings"
	"testing"
)

func TestClickHouseTableSurvivesStopAndKill(t *testing.T) {
	t.Parallel()
	ch := StartClickHouse(t)
	ctx := t.Context()
	query := func(sql string) string {
		t.Helper()
		out, err := ch.Query(ctx, sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return strings.TrimSpace(out)
	}
	if got := query("SELECT version()"); got == "" {
		t.Fatal("empty version")
	}
	if got := query("SELECT timezone()"); got != "UTC" && got != "Etc/UTC" {
		t.Fatalf("timezone() = %q, want UTC", got)
	}
	db := UniqueName(t, "testsvc")
	query("CREATE DATABASE " + db)
	query("CREATE TABLE " + db + ".t (n UInt64) ENGINE = MergeTree ORDER BY n")
	query("INSERT INTO " + db + ".t SELECT number FROM system.numbers LIMIT 1000")
	native, httpAddr := ch.NativeAddr, ch.HTTPAddr

	ch.Stop(t)
	if _, err := ch.Query(ctx, "SELECT 1"); err == nil {
		t.Fatal("query succeeded while the server was stopped")
	}
	ch.Start(t)
	if ch.NativeAddr != native || ch.HTTPAddr != httpAddr {
		t.Fatalf("addresses changed on restart: %s/%s -> %s/%s", native, httpAddr, ch.NativeAddr, ch.HTTPAddr)
	}
	if got := query("SELECT count() FROM " + db + ".t"); got != "1000" {
		t.Fatalf("after Stop/Start count = %s, want 1000", got)
	}

	ch.Kill(t)
	ch.Start(t)
	if got := query("SELECT count() FROM " + db + ".t"); got != "1000" {
		t.Fatalf("after Kill/Start count = %s, want 1000", got)
	}
	if err := probeTCP(ch.NativeAddr)(ctx); err != nil {
		t.Fatalf("native port after restart: %v", err)
	}
}

func TestClickHouseServerPrivateWhenUnset(t *testing.T) {
	t.Setenv("WH_TEST_CLICKHOUSE_ADDR", "")
	ch := ClickHouseServer(t)
	if ch.NativeAddr == "" || ch.HTTPAddr == "" {
		t.Fatalf("addresses not set: %+v", ch)
	}
	if out, err := ch.Query(t.Context(), "SELECT 1"); err != nil || strings.TrimSpace(out) != "1" {
		t.Fatalf("SELECT 1 = %q, %v", out, err)
	}
}

func TestClickHouseServerSharedFromEnv(t *testing.T) {
	private := StartClickHouse(t)
	t.Setenv("WH_TEST_CLICKHOUSE_ADDR", private.NativeAddr)
	t.Setenv("WH_TEST_CLICKHOUSE_HTTP_ADDR", private.HTTPAddr)
	ch := ClickHouseServer(t)
	if ch.NativeAddr != private.NativeAddr || ch.HTTPAddr != private.HTTPAddr {
		t.Fatalf("ClickHouseServer = %+v, want the shared %+v", ch, private.ClickHouse)
	}
}
