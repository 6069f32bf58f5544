package testsvc

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// handedOut is every port freePorts returned in this test process. A port is free again in the
// kernel's eyes from the moment freePorts closes its listener until the server binds it, so
// without this record two servers started by parallel tests of one process could be handed the
// same port. It is testsvc's one package-level variable: the port space it mirrors is shared by
// the whole process too.
var handedOut = portSet{ports: make(map[int]struct{})}

// portSet is a set of ports safe for concurrent use.
type portSet struct {
	mu    sync.Mutex
	ports map[int]struct{}
}

// freePorts returns n distinct loopback TCP ports that were free a moment ago and that this test
// process never handed out before. It picks them while holding every listener it opened
// (including those on ports handed out before, so that the kernel moves on), then closes them.
//
// External servers need a port number on their command line, so a port is still chosen before
// the server binds it, and one race remains: in that moment another process (another test
// binary, or a socket given the port as its local end of a connection) can take it. The server
// then fails to bind and exits before it is ready, and launch and StartNATSCluster start it
// again on fresh ports (startAttempts). A restart of a running server (startT) re-binds its ports
// and is not retried; its ports were bound a moment before, so the window is only the restart.
func freePorts(n int) ([]int, error) {
	handedOut.mu.Lock()
	defer handedOut.mu.Unlock()
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		ls = append(ls, l)
		port := l.Addr().(*net.TCPAddr).Port
		if _, seen := handedOut.ports[port]; seen {
			continue
		}
		ports = append(ports, port)
	}
	for _, p := range ports {
		handedOut.ports[p] = struct{}{}
	}
	return ports, nil
}

// hostPort formats a loopback address.
func hostPort(port int) string {
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// httpGet fetches url with a client that keeps no idle connection (so no
// transport goroutine outlives the call) and returns status and body.
func httpGet(ctx context.Context, url string) (int, string, error) {
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(body), err
}

// probeHTTP returns a probe that wants status 200 and, when want is not
// empty, a body containing want.
func probeHTTP(url, want string) readyFunc {
	return func(ctx context.Context) error {
		code, body, err := httpGet(ctx, url)
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("GET %s: status %d: %s", url, code, strings.TrimSpace(body))
		}
		if want != "" && !strings.Contains(body, want) {
			return fmt.Errorf("GET %s: body %q does not contain %q", url, body, want)
		}
		return nil
	}
}

// probeTCP returns a probe that succeeds when addr accepts a connection.
func probeTCP(addr string) readyFunc {
	return func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

// allOf returns a probe that succeeds when every probe succeeds, in order.
func allOf(probes ...readyFunc) readyFunc {
	return func(ctx context.Context) error {
		for _, p := range probes {
			if err := p(ctx); err != nil {
				return err
			}
		}
		return nil
	}
}

// checkShared fails the test when a shared server named by envVar does not
// accept TCP connections at addr: a configured but dead server is a broken
// environment, not a missing dependency.
func checkShared(t testing.TB, envVar, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := probeTCP(addr)(ctx); err != nil {
		t.Fatalf("testsvc: %s=%s is set but not reachable: %v (start it with tests/deps/start.sh or unset it)", envVar, addr, err)
	}
}
