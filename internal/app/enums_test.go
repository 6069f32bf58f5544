package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/logbuf"

	"github.com/wavehouse/wavehouse/internal/config"
	"github.com/wavehouse/wavehouse/internal/logging"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// sharedServers are the external backends the enum walk boots against, started once per test.
type sharedServers struct {
	t        *testing.T
	once     sync.Once
	ch       *testsvc.ClickHouse
	nats     *testsvc.NATS
	redis    *testsvc.Redis
	dynamo   *testsvc.DynamoDB
	credsDir string
}

func (s *sharedServers) start() {
	s.once.Do(func() {
		s.ch = testsvc.ClickHouseServer(s.t)
		s.nats = testsvc.NATSServer(s.t)
		s.redis = testsvc.RedisServer(s.t)
		s.dynamo = testsvc.DynamoDBServer(s.t)
		s.credsDir = s.t.TempDir()
		for _, f := range []string{"aws_key_id", "aws_secret"} {
			if err := os.WriteFile(filepath.Join(s.credsDir, f), []byte("test\n"), 0o600); err != nil {
				s.t.Fatal(err)
			}
		}
	})
}

// use points one layer of cfg at its shared server, as an operator would configure it.
func (s *sharedServers) use(t *testing.T, cfg *config.Config, layer string) {
	s.start()
	if t.Failed() || t.Skipped() {
		return
	}
	name := testsvc.UniqueName(t, "enum")
	switch layer {
	case "store":
		cfg.Store.Backend, cfg.Store.ClickHouse.Addrs, cfg.Store.ClickHouse.Database = "clickhouse", []string{s.ch.NativeAddr}, name
	case "mq":
		cfg.MQ.Backend, cfg.MQ.Prefix = "nats", name
		cfg.MQ.NATS.URLs, cfg.MQ.NATS.Replicas, cfg.MQ.NATS.ManageTopology = []string{s.nats.URL}, 1, true
	case "cache":
		cfg.Cache.Backend, cfg.Cache.Redis.Addrs, cfg.Cache.Redis.KeyPrefix = "redis", []string{s.redis.Addr}, name+":"
	case "dedupe":
		d := &cfg.Dedupe.DynamoDB
		cfg.Dedupe.Backend = "dynamodb"
		d.Table, d.Endpoint, d.CreateTable = name, s.dynamo.Endpoint, true
		d.AccessKeyIDFile, d.SecretAccessKeyFile = filepath.Join(s.credsDir, "aws_key_id"), filepath.Join(s.credsDir, "aws_secret")
	case "coord":
		s.use(t, cfg, "mq")
		cfg.Coord.Backend = "nats"
	default:
		t.Fatalf("no shared server for layer %q", layer)
	}
}

// useCluster points the store at the shared 2 × 2 cluster (its shards, no addrs), with a
// database of its own created on every node, and returns that cluster.
func (s *sharedServers) useCluster(t *testing.T, cfg *config.Config) *testsvc.ClickHouseCluster {
	c := testsvc.ClickHouseClusterServers(t)
	name := testsvc.UniqueName(t, "enum")
	cfg.Store.Backend, cfg.Store.ClickHouse.Database = "clickhouse", name
	cfg.Store.ClickHouse.Cluster.Name, cfg.Store.ClickHouse.Cluster.Shards = c.Name, nil
	for _, shard := range c.Shards {
		var sh config.ClusterShard
		for _, n := range shard {
			sh.Replicas = append(sh.Replicas, n.NativeAddr)
		}
		cfg.Store.ClickHouse.Cluster.Shards = append(cfg.Store.ClickHouse.Cluster.Shards, sh)
	}
	for _, n := range c.Nodes() {
		if _, err := n.Query(t.Context(), "CREATE DATABASE IF NOT EXISTS "+name); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, n := range c.Nodes() {
			_, _ = n.Query(context.Background(), "DROP DATABASE IF EXISTS "+name)
		}
	})
	return c
}

// setEnum sets key to value in cfg, with whatever else an operator choosing that value must
// configure (a server address for an external backend). Every key of config.Enums has a case:
// a new enum key fails this test until it is walked too.
func setEnum(t *testing.T, s *sharedServers, cfg *config.Config, key, value string) {
	t.Helper()
	external := map[string]bool{"clickhouse": true, "nats": true, "redis": true, "dynamodb": true}
	switch key {
	case "roles":
		// One role alone is a split process: it needs every layer shared (DESIGN.md §5).
		cfg.Roles = config.ParseRoles(value)
		for _, layer := range []string{"store", "cache", "dedupe", "coord"} {
			s.use(t, cfg, layer)
		}
	case "log.level":
		cfg.Log.Level = value
	case "log.format":
		cfg.Log.Format = value
	case "stream.slow_policy":
		cfg.Stream.SlowPolicy = value
	case "mq.embedded.sync":
		cfg.MQ.Embedded.Sync = value
	case "store.clickhouse.cluster.insert":
		s.useCluster(t, cfg)
		cfg.Store.ClickHouse.Cluster.Insert = value
	case "store.backend", "mq.backend", "cache.backend", "dedupe.backend", "coord.backend":
		layer := strings.TrimSuffix(key, ".backend")
		if external[value] {
			s.use(t, cfg, layer)
		}
		setBackend(cfg, layer, value)
	default:
		t.Fatalf("enum key %s is not walked: add it to setEnum", key)
	}
}

func setBackend(cfg *config.Config, layer, value string) {
	switch layer {
	case "store":
		cfg.Store.Backend = value
	case "mq":
		cfg.MQ.Backend = value
	case "cache":
		cfg.Cache.Backend = value
	case "dedupe":
		cfg.Dedupe.Backend = value
	case "coord":
		cfg.Coord.Backend = value
	}
}

// TestEveryEnumValueCheckAcceptsBoots walks every value of every enum-typed key (config.Enums:
// roles, log level and format, backends, sync modes, slow policy) through Validate, as
// `wavehouse config check` does, then through logging.New, New and Run, as `serve` does. A
// value is either refused by Validate with a message naming its key, or it boots: never accepted
// by check and refused by serve. A value outside the set is refused by Validate, naming the key.
func TestEveryEnumValueCheckAcceptsBoots(t *testing.T) {
	servers := &sharedServers{t: t}
	for _, e := range config.Enums() {
		t.Run(e.Key+"=bogus", func(t *testing.T) {
			cfg := testConfig(t)
			switch e.Key {
			case "roles":
				cfg.Roles = config.Roles{"bogus"}
			case "log.level", "log.format", "stream.slow_policy", "mq.embedded.sync":
				setEnum(t, servers, &cfg, e.Key, "bogus")
			case "store.clickhouse.cluster.insert":
				cfg.Store.ClickHouse.Cluster.Insert = "bogus"
			default:
				setBackend(&cfg, strings.TrimSuffix(e.Key, ".backend"), "bogus")
			}
			if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), e.Key) || !strings.Contains(err.Error(), "bogus") {
				t.Fatalf("%s: bogus: Validate = %v, want a refusal naming the key and the value", e.Key, err)
			}
		})
		for _, v := range e.Values {
			t.Run(e.Key+"="+v, func(t *testing.T) {
				cfg := testConfig(t)
				setEnum(t, servers, &cfg, e.Key, v)
				if t.Skipped() {
					return
				}
				if err := cfg.Validate(); err != nil {
					if !strings.Contains(err.Error(), e.Key) {
						t.Fatalf("refused by check without naming %s: %v", e.Key, err)
					}
					t.Logf("refused by check: %v", err)
					return
				}
				var out logbuf.Buffer
				log, err := logging.New(&out, logging.Options{Level: cfg.Log.Level, Format: cfg.Log.Format})
				if err != nil {
					t.Fatalf("accepted by check, refused by serve's logger: %v", err)
				}
				a := startAppWithLog(t, cfg, log)
				if code, body := get(t, "http://"+a.OpsAddr()+"/readyz"); code != 200 {
					t.Fatalf("booted but not ready: %d %s", code, body)
				}
				if e.Key == "mq.embedded.sync" && v == "none" {
					// The opt-in is logged at boot with its loss window, the store's own fsync period.
					want := "mq.embedded.sync is none"
					if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), embeddedmq.NoneFlushInterval.String()) {
						t.Fatalf("boot log lacks %q with the %s window:\n%s", want, embeddedmq.NoneFlushInterval, out.String())
					}
				}
			})
		}
	}
}
