package testsvc

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Redis is a reachable Redis server.
type Redis struct {
	// Addr is the host:port of the server.
	Addr string
}

// RedisProcess is a private redis-server process owned by one test. It runs
// without persistence (no RDB snapshots, no append-only file), so a restart starts empty.
type RedisProcess struct {
	Redis
	// Dir is the server's working directory and holds its log.
	Dir string
	server
}

// RedisServer returns the shared server named by WH_TEST_REDIS_ADDR when it
// is set, and otherwise a private redis-server started for this test and
// stopped in t.Cleanup. Tests on a shared server isolate themselves with
// unique key prefixes and never flush or stop it.
func RedisServer(t testing.TB) *Redis {
	t.Helper()
	if addr := os.Getenv("WH_TEST_REDIS_ADDR"); addr != "" {
		checkShared(t, "WH_TEST_REDIS_ADDR", addr)
		return &Redis{Addr: addr}
	}
	return &StartRedis(t).Redis
}

// StartRedis starts a fresh private redis-server on a free loopback port,
// waits until it answers PING, and stops it in t.Cleanup.
func StartRedis(t testing.TB) *RedisProcess {
	t.Helper()
	bin, err := findBinary("WH_REDIS_SERVER_BIN", "redis-server", "/usr/bin/redis-server", "/usr/local/bin/redis-server")
	if err != nil {
		Missing(t, "redis-server not installed: run tests/deps/install.sh redis (%v)", err)
	}
	dir := t.TempDir()
	rp := &RedisProcess{Dir: dir}
	rp.p = launch(t, "redis-server", 1, func(ports []int) (*process, error) {
		rp.Addr = hostPort(ports[0])
		return &process{
			name: "redis-server",
			bin:  bin,
			args: []string{
				"--port", fmt.Sprint(ports[0]), "--bind", "127.0.0.1",
				"--save", "", "--appendonly", "no", "--dir", dir,
			},
			dir:     dir,
			logPath: filepath.Join(dir, "redis-server.log"),
			ready:   probeRedis(rp.Addr),
		}, nil
	})
	rp.register(t)
	return rp
}

// Stop stops the server gracefully: SIGTERM, then SIGKILL after ten seconds.
func (r *RedisProcess) Stop(t testing.TB) { t.Helper(); r.stopT(t) }

// Kill kills the server with SIGKILL and waits until it has exited.
func (r *RedisProcess) Kill(t testing.TB) { t.Helper(); r.killT(t) }

// Start starts the server again on the same port and waits until it
// answers PING. It does nothing when the server is running.
func (r *RedisProcess) Start(t testing.TB) { t.Helper(); r.startT(t) }

// probeRedis returns a probe that sends PING in RESP and wants +PONG.
func probeRedis(addr string) readyFunc {
	return func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		if dl, ok := ctx.Deadline(); ok {
			_ = c.SetDeadline(dl)
		}
		if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
			return err
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return err
		}
		if strings.TrimSpace(line) != "+PONG" {
			return fmt.Errorf("redis PING answered %q", strings.TrimSpace(line))
		}
		return nil
	}
}
