package testsvc

import (
	"bufio"
	"net"
	"strings"
	"testing"
)

// redisCmd sends one inline command and returns the first reply line.
func redisCmd(t *testing.T, addr, cmd string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(line)
}

func TestRedisStartsAndRestarts(t *testing.T) {
	t.Parallel()
	r := StartRedis(t)
	if got := redisCmd(t, r.Addr, "SET k v"); got != "+OK" {
		t.Fatalf("SET = %q", got)
	}
	if got := redisCmd(t, r.Addr, "CONFIG GET save"); got != "*2" {
		t.Fatalf("CONFIG GET save = %q", got)
	}
	r.Stop(t)
	if err := probeRedis(r.Addr)(t.Context()); err == nil {
		t.Fatal("PING answered while the server was stopped")
	}
	r.Start(t)
	// No persistence: a restarted server is empty.
	if got := redisCmd(t, r.Addr, "EXISTS k"); got != ":0" {
		t.Fatalf("EXISTS k after restart = %q, want :0", got)
	}
	r.Kill(t)
	r.Start(t)
	if got := redisCmd(t, r.Addr, "PING"); got != "+PONG" {
		t.Fatalf("PING after Kill/Start = %q", got)
	}
}

func TestRedisServerSharedFromEnv(t *testing.T) {
	private := StartRedis(t)
	t.Setenv("WH_TEST_REDIS_ADDR", private.Addr)
	if got := RedisServer(t); got.Addr != private.Addr {
		t.Fatalf("RedisServer = %q, want the shared %q", got.Addr, private.Addr)
	}
}
