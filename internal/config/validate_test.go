package config

import (
	"time"

	"strings"
	"testing"
)

// valid returns a default config with derived fields filled.
func valid(t *testing.T) Config {
	t.Helper()
	c := Default()
	if err := c.fill(); err != nil {
		t.Fatal(err)
	}
	return c
}

// split returns a config for a process running only roles over fully shared backends.
func split(t *testing.T, roles string) Config {
	c := valid(t)
	c.Roles = ParseRoles(roles)
	c.Store.Backend = "clickhouse"
	c.Store.ClickHouse.Addrs = []string{"ch:9000"}
	c.MQ.Backend = "nats"
	c.MQ.NATS.URLs = []string{"nats://n1:4222"}
	c.Cache.Backend = "redis"
	c.Cache.Redis.Addrs = []string{"redis:6379"}
	c.Dedupe.Backend = "dynamodb"
	c.Coord.Backend = "nats"
	return c
}

func TestValidateRefuses(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(c *Config)
		want   []string
	}{
		{"split over embedded mq", func(c *Config) { c.MQ.Backend = "embedded" }, []string{"mq.backend: embedded cannot be shared"}},
		{"split over chdb", func(c *Config) { c.Store.Backend = "chdb" }, []string{"store.backend: chdb is in-process"}},
		{"coord nats without mq nats", func(c *Config) {
			c.Roles = ParseRoles("api,ingest,sweeper")
			c.MQ.Backend = "embedded"
			c.Store.Backend = "chdb"
		}, []string{"coord.backend: nats keeps leases on the mq.nats connection"}},
		{"split sweeper with local coord", func(c *Config) { c.Roles = ParseRoles("sweeper"); c.Coord.Backend = "local" }, []string{"coord.backend: local leases cannot stop a sweeper"}},
		{"api without ingest, local cache", func(c *Config) { c.Roles = ParseRoles("api"); c.Cache.Backend = "local" }, []string{"cache.backend: local cannot receive invalidations"}},
		{"ingest without api, local cache", func(c *Config) { c.Roles = ParseRoles("ingest,sweeper"); c.Cache.Backend = "local" }, []string{"cache.backend: local cannot receive invalidations"}},
		{"split idempotency on local dedupe", func(c *Config) { c.Dedupe.Backend = "local" }, []string{"dedupe.backend: local keeps idempotency keys in one process"}},
		{"negative limit wait", func(c *Config) { c.Limits.QueryWait = Duration(-time.Second) }, []string{"limits.max_wait, limits.query_wait: must not be negative"}},
		{"query limit defaults", func(c *Config) {
			c.Limits.MaxResultRows, c.Limits.MaxConcurrentQueries, c.Limits.MaxExecutionTime = 0, -2, 0
		}, []string{
			"limits.max_concurrent_queries: -2 must be positive, or -1 for no limit", "limits.max_result_rows: 0 must be positive",
			"limits.max_execution_time, limits.cache_ttl: must be positive"}},
		{"zero settings poll", func(c *Config) { c.SettingsPollInterval = 0 }, []string{"settings_poll_interval: must be positive"}},
		{"bad listen", func(c *Config) { c.Ops.Listen = "9090" }, []string{"ops.listen: \"9090\" is not host:port"}},
		{"same listeners", func(c *Config) { c.Ops.Listen = c.Server.Listen }, []string{"ops.listen: must differ from server.listen"}},
		{"unknown role", func(c *Config) { c.Roles = ParseRoles("api,ingest,sweeper,web") }, []string{`roles: unknown role "web"`}},
		{"no roles", func(c *Config) { c.Roles = nil }, []string{"roles: must name at least one"}},
		{"unknown backends", func(c *Config) {
			c.Store.Backend, c.MQ.Backend, c.Cache.Backend, c.Dedupe.Backend, c.Coord.Backend = "pg", "kafka", "memcached", "etcd", "zk"
		}, []string{`store.backend: "pg" is not one of chdb, clickhouse`, `mq.backend: "kafka"`, `cache.backend: "memcached"`, `dedupe.backend: "etcd"`, `coord.backend: "zk"`}},
		{"credentials in nats url", func(c *Config) { c.MQ.NATS.URLs = []string{"nats://u:s3cret@n1:4222"} }, []string{"mq.nats.urls[0]: credentials in URLs are not allowed"}},
		{"clickhouse without addrs", func(c *Config) { c.Store.ClickHouse.Addrs = nil }, []string{"store.clickhouse.addrs: set at least one"}},
		{"dynamodb create_table on AWS", func(c *Config) { c.Dedupe.DynamoDB.CreateTable = true }, []string{"dedupe.dynamodb.create_table: only allowed with dedupe.dynamodb.endpoint"}},
		{"bad sync mode", func(c *Config) {
			c.Roles = ParseRoles("api,ingest,sweeper")
			c.MQ.Backend = "embedded"
			c.Coord.Backend = "local"
			c.MQ.Embedded.Sync = "sometimes"
		}, []string{`mq.embedded.sync: "sometimes"`}},
		{"bad log level", func(c *Config) { c.Log.Level = "loud" }, []string{"log.level"}},
		{"chdb memory bound in MiB", func(c *Config) {
			c.Roles = ParseRoles("api,ingest,sweeper")
			c.MQ.Backend, c.Coord.Backend, c.Store.Backend = "embedded", "local", "chdb"
			c.Store.CHDB.MaxMemoryBytes = 512
		}, []string{"store.chdb.max_memory_bytes: 512 is below the minimum"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := split(t, "api")
			tc.mutate(&c)
			err := c.Validate()
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestValidateAcceptsWorkingSplits(t *testing.T) {
	for _, roles := range []string{"api", "ingest", "sweeper", "api,ingest", "ingest,sweeper", "api,ingest,sweeper"} {
		if err := split(t, roles).Validate(); err != nil {
			t.Errorf("roles %s over shared backends refused: %v", roles, err)
		}
	}
	c := split(t, "api,ingest")
	c.Cache.Backend = "local" // api and ingest together: invalidation stays in-process
	if err := c.Validate(); err != nil {
		t.Errorf("api+ingest with local cache refused: %v", err)
	}
	c = split(t, "sweeper")
	c.Store.Backend = "chdb" // the sweeper never touches the store
	if err := c.Validate(); err != nil {
		t.Errorf("a sweeper-only process refused over the unused store: %v", err)
	}
	c = split(t, "ingest")
	c.Dedupe.Backend = "local" // ingest never checks idempotency keys
	if err := c.Validate(); err != nil {
		t.Errorf("an ingest-only process refused over the unused dedupe: %v", err)
	}
	c = split(t, "api")
	c.Dedupe.Backend = "local"
	c.Idempotency.Enabled = false
	if err := c.Validate(); err != nil {
		t.Errorf("split with idempotency off over local dedupe refused: %v", err)
	}
}

func TestValidateReportsEveryProblemAtOnce(t *testing.T) {
	c := valid(t)
	c.Server.Listen = "nope"
	c.Log.Format = "xml"
	c.MQ.Partitions = 0
	err := c.Validate()
	if err == nil {
		t.Fatal("accepted")
	}
	for _, w := range []string{"server.listen", "log.format", "mq.partitions"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %s in %v", w, err)
		}
	}
}

func TestWarnings(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(c *Config)
		want   string
	}{
		{"interval sync", func(c *Config) { c.MQ.Embedded.Sync = "interval" }, "may be lost on power loss or kernel crash within 100ms"},
		{"no sync", func(c *Config) { c.MQ.Embedded.Sync = "none" }, "mq.embedded.sync is none"},
		{"public pprof", func(c *Config) { c.Ops.Listen = "0.0.0.0:9090" }, "ops.listen 0.0.0.0:9090 is not loopback and ops.pprof is on"},
		{"unused block", func(c *Config) { c.Cache.Redis.Addrs = []string{"r:6379"} }, "cache.redis is set but not used"},
		{"low replicas", func(c *Config) {
			c.MQ.Backend = "nats"
			c.MQ.NATS.URLs = []string{"nats://n:4222"}
			c.MQ.NATS.Replicas = 1
		}, "mq.nats.replicas is 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := valid(t)
			tc.mutate(&c)
			if err := c.Validate(); err != nil {
				t.Fatalf("a warning case must be valid: %v", err)
			}
			got := strings.Join(c.Warnings(), "\n")
			if !strings.Contains(got, tc.want) {
				t.Errorf("warnings %q lack %q", got, tc.want)
			}
		})
	}
}

func TestYAMLRedactsURLCredentials(t *testing.T) {
	c := valid(t)
	c.MQ.NATS.URLs = []string{"nats://user:hunter2@n1:4222", "nats://tok3n@n2:4222"}
	out, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"hunter2", "tok3n"} {
		if strings.Contains(string(out), secret) {
			t.Errorf("effective config prints %s:\n%s", secret, out)
		}
	}
	if !strings.Contains(string(out), "n1:4222") {
		t.Errorf("host lost in redaction:\n%s", out)
	}
}
