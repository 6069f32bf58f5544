package chaos

import (
	"math/rand/v2"
	"testing"

	"github.com/wavehouse/wavehouse/internal/testutil/splitdeploy"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// plainDDL is a table on ClickHouse 18.16, which has no insert_deduplication_token: a batch
// inserted again is stored again (at-least-once), and the gateway must count it as in doubt.
const plainDDL = "CREATE TABLE %s (id UInt64, k UInt8) ENGINE = MergeTree() ORDER BY id"

// split is a split deployment — one api, one ingest and one sweeper process — over private
// servers the scenarios may restart or kill: a 3-node NATS cluster (streams at R3), ClickHouse
// 18.16, Redis and dynalite.
type split struct {
	nats    *testsvc.NATSCluster
	ch      *testsvc.ClickHouseProcess
	redis   *testsvc.RedisProcess
	dyn     *testsvc.DynamoDBProcess
	b       *splitdeploy.Backends
	api     *splitdeploy.Proc
	ingest  *splitdeploy.Proc
	sweeper *splitdeploy.Proc
}

func startSplit(t *testing.T) *split {
	t.Helper()
	s := &split{
		nats:  testsvc.StartNATSCluster(t, 3),
		ch:    testsvc.StartClickHouse(t),
		redis: testsvc.StartRedis(t),
		dyn:   testsvc.StartDynamoDB(t),
	}
	s.b = splitdeploy.New(t, splitdeploy.Servers{CH: &s.ch.ClickHouse, RedisAddr: s.redis.Addr, DynEndpoint: s.dyn.Endpoint}, s.nats.URLs(), 3)
	s.b.Idempotency = true
	s.ingest = splitdeploy.Start(t, binaryPath, s.b, "ingest-1", splitdeploy.RoleIngest)
	s.sweeper = splitdeploy.Start(t, binaryPath, s.b, "sweeper-1", splitdeploy.RoleSweeper)
	s.api = splitdeploy.Start(t, binaryPath, s.b, "api-1", splitdeploy.RoleAPI)
	return s
}

// target is the deployment as the scenarios see it: load through the api process, the queue
// and the writer watched on the ingest process, rows read straight from ClickHouse.
func (s *split) target(t *testing.T) target {
	api := loadClient(s.api.API)
	t.Cleanup(api.HTTP.CloseIdleConnections)
	return target{
		api: api, ops: s.ingest.Ops, dedupes: false, ddl: plainDDL, opKey: s.api.OperatorKey(t),
		read: readFromServer(&s.ch.ClickHouse, s.b.Database), writer: newInDoubt(t.Context(), s.ingest.Ops),
		reserves:  newOutcomes(t.Context(), s.api.Ops, metricReserve),
		writerLog: func() string { return s.ingest.Process.Tail(6000) },
		logs:      func() string { return s.api.Process.Output() + s.ingest.Process.Output() },
	}
}

// ensureRunning restarts any process of the deployment that an earlier scenario left down.
func (s *split) ensureRunning(t *testing.T) {
	t.Helper()
	for _, p := range []*splitdeploy.Proc{s.ingest, s.sweeper, s.api} {
		if !p.Process.Running() {
			p.Process.Start(t)
		}
	}
}

// TestChaosSplit runs one scenario per fault on a split deployment, each on its own table:
// SIGKILL of each role's process (restarted on the same data dir), a ClickHouse server restart,
// SIGKILL of one NATS member (restarted on its store), Redis and dynalite restarts. ClickHouse 18.16 cannot
// deduplicate, so duplicates are reported (at-least-once) and must be counted by the writer's
// in-doubt metric; any acknowledged row lost fails.
func TestChaosSplit(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: skipped under -short")
	}
	s := startSplit(t)
	killRole := func(p *splitdeploy.Proc, writer bool) func(t *testing.T, tg target) fault {
		return func(t *testing.T, tg target) fault {
			return fault{name: "SIGKILL " + p.Role, inject: func(t *testing.T, _ *rand.Rand) {
				if writer {
					tg.writer.bank(t.Context())
				}
				if p == s.api {
					tg.reserves.bank(t.Context())
				}
				p.Process.Kill(t)
				p.Process.Start(t)
			}}
		}
	}
	// outage stops a server, keeps it down for a random while, and starts it again on the same
	// data and ports (Start waits until it is ready).
	outage := func(what string, stop, start func(t *testing.T)) func(t *testing.T, tg target) fault {
		return func(t *testing.T, tg target) fault {
			return fault{name: what, inject: func(t *testing.T, rng *rand.Rand) {
				stop(t)
				wait(t, between(rng, minOutage, maxOutage))
				start(t)
			}}
		}
	}
	scenarios := []struct {
		slug, name string
		fault      func(t *testing.T, tg target) fault
	}{
		{"kill_ingest", "split (ClickHouse 18.16, NATS R3): SIGKILL the ingest process", killRole(s.ingest, true)},
		{"kill_api", "split (ClickHouse 18.16, NATS R3): SIGKILL the api process", killRole(s.api, false)},
		{"kill_sweeper", "split (ClickHouse 18.16, NATS R3): SIGKILL the sweeper process", killRole(s.sweeper, false)},
		{"restart_clickhouse", "split (ClickHouse 18.16, NATS R3): restart the ClickHouse server",
			outage("restart ClickHouse", func(t *testing.T) { s.ch.Stop(t) }, func(t *testing.T) { s.ch.Start(t) })},
		{"kill_nats_member", "split (ClickHouse 18.16, NATS R3): SIGKILL one NATS member", func(t *testing.T, tg target) fault {
			return fault{name: "SIGKILL a NATS member", inject: func(t *testing.T, rng *rand.Rand) {
				i := rng.IntN(len(s.nats.Nodes))
				s.nats.Kill(t, i)
				wait(t, between(rng, minOutage, maxOutage))
				s.nats.Start(t, i)
			}}
		}},
		{"restart_redis", "split (ClickHouse 18.16, NATS R3): restart Redis (cache; comes back empty)",
			outage("restart Redis", func(t *testing.T) { s.redis.Stop(t) }, func(t *testing.T) { s.redis.Start(t) })},
		{"restart_dynalite", "split (ClickHouse 18.16, NATS R3): restart dynalite (idempotency keys, on disk)",
			outage("restart dynalite", func(t *testing.T) { s.dyn.Stop(t) }, func(t *testing.T) { s.dyn.Start(t) })},
	}
	stuck := false
	for _, sc := range scenarios {
		t.Run(sc.slug, func(t *testing.T) {
			if stuck {
				// The queue is shared: a backlog the previous scenario left would keep this one
				// from draining too. A fresh ingest process starts it clean.
				t.Logf("the previous scenario's queue did not drain: restarting %s first", s.ingest.Name)
				s.ingest.Process.Stop(t)
			}
			s.ensureRunning(t)
			tg := s.target(t)
			stuck = true // stays so if the scenario stops early
			stuck = !runScenario(t, sc.name, "chaos_"+sc.slug, tg, sc.fault(t, tg))
		})
	}
}
