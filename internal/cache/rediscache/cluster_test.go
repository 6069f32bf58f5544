package rediscache_test

import (
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wavehouse/wavehouse/internal/cache"
	"github.com/wavehouse/wavehouse/internal/cache/cachetest"
	"github.com/wavehouse/wavehouse/internal/cache/rediscache"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// startClusterNode starts a private redis-server in cluster mode that owns every hash
// slot: a one-node Redis Cluster, enough to exercise the cluster client (slot routing,
// MGET and MULTI within the tenant's hash tag).
func startClusterNode(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		testsvc.Missing(t, "redis-server not installed: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	dir := t.TempDir()
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"),
		"--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	admin := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer func() { _ = admin.Close() }()
	poll := func(what string, ok func() bool) {
		deadline := time.Now().Add(10 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("cluster node: timed out waiting for %s", what)
			}
			timer := time.NewTimer(20 * time.Millisecond)
			<-timer.C
		}
	}
	poll("PING", func() bool { return admin.Ping(t.Context()).Err() == nil })
	if err := admin.Do(t.Context(), "CLUSTER", "ADDSLOTSRANGE", "0", "16383").Err(); err != nil {
		t.Fatalf("CLUSTER ADDSLOTSRANGE: %v", err)
	}
	poll("cluster_state:ok", func() bool {
		info, err := admin.ClusterInfo(t.Context()).Result()
		return err == nil && strings.Contains(info, "cluster_state:ok")
	})
	return addr
}

func TestConformanceCluster(t *testing.T) {
	addr := startClusterNode(t)
	cachetest.Run(t, func(t *testing.T, _ cachetest.HarnessOptions) *cachetest.Harness {
		cfg := testConfig(t, addr)
		cfg.Cluster = true
		return &cachetest.Harness{
			MaxValueBytes: cfg.MaxValueBytes,
			New: func(t *testing.T) cache.Cache {
				c, err := rediscache.New(cfg, rediscache.Deps{})
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return c
			},
		}
	}, cachetest.Caps{Shared: true})
}
