package testsvc

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// NATS is a reachable NATS server with JetStream enabled.
type NATS struct {
	// URL is the client URL, nats://host:port.
	URL string
}

// NATSProcess is a private nats-server process owned by one test.
type NATSProcess struct {
	NATS
	// MonitorURL is the HTTP monitoring endpoint (http://host:port), serving
	// /healthz, /varz, /jsz and the rest.
	MonitorURL string
	// Dir holds the JetStream store (under Dir/js) and the log.
	Dir string
	server
}

// NATSOption configures StartNATS.
type NATSOption func(*natsOptions)

// natsOptions collects what NATSOption values set.
type natsOptions struct {
	name  string
	extra []string
	env   []string
}

// WithNATSServerName sets the server name (-n); the default is a unique one.
func WithNATSServerName(name string) NATSOption {
	return func(o *natsOptions) { o.name = name }
}

// WithNATSArgs appends raw nats-server command-line arguments.
func WithNATSArgs(args ...string) NATSOption {
	return func(o *natsOptions) { o.extra = append(o.extra, args...) }
}

// WithNATSConfig starts the server with the config file path (-c) under the command-line flags
// testsvc sets (ports, store directory, name, cluster), e.g. an authorization block.
func WithNATSConfig(path string) NATSOption {
	return func(o *natsOptions) { o.extra = append(o.extra, "-c", path) }
}

// WithNATSEnv adds KEY=VALUE variables to the server's environment, e.g. the passwords its
// config references as $VARIABLE.
func WithNATSEnv(env ...string) NATSOption {
	return func(o *natsOptions) { o.env = append(o.env, env...) }
}

// NATSServer returns the shared server named by WH_TEST_NATS_URL when it is
// set, and otherwise a private nats-server with JetStream started for this
// test and stopped in t.Cleanup. Tests on a shared server isolate themselves
// with unique stream, subject and bucket names and never stop it.
func NATSServer(t testing.TB) *NATS {
	t.Helper()
	if u := os.Getenv("WH_TEST_NATS_URL"); u != "" {
		checkShared(t, "WH_TEST_NATS_URL", hostOfURL(u))
		return &NATS{URL: u}
	}
	return &StartNATS(t).NATS
}

// natsBinary locates nats-server: WH_NATS_SERVER_BIN, bin/nats-server at
// the repository root, /tmp/nats-server, else PATH.
func natsBinary() (string, error) {
	var inRepo string
	if root := repoRoot(); root != "" {
		inRepo = filepath.Join(root, "bin", "nats-server")
	}
	return findBinary("WH_NATS_SERVER_BIN", "nats-server", inRepo, "/tmp/nats-server")
}

// requireNATSBinary returns the nats-server path or reports it missing.
func requireNATSBinary(t testing.TB) string {
	t.Helper()
	bin, err := natsBinary()
	if err != nil {
		Missing(t, "nats-server not found: run tests/deps/install.sh nats (%v)", err)
	}
	return bin
}

// StartNATS starts a fresh private nats-server with JetStream (file store in
// a temporary directory) on free loopback client and monitoring ports,
// waits until /healthz reports JetStream ready, and stops it in t.Cleanup.
func StartNATS(t testing.TB, opts ...NATSOption) *NATSProcess {
	t.Helper()
	bin := requireNATSBinary(t)
	o := natsOptions{name: UniqueName(t, "wh_nats")}
	for _, opt := range opts {
		opt(&o)
	}
	dir := t.TempDir()
	np := &NATSProcess{Dir: dir}
	np.p = launch(t, "nats-server", 2, func(ports []int) (*process, error) {
		np.URL = fmt.Sprintf("nats://%s", hostPort(ports[0]))
		np.MonitorURL = fmt.Sprintf("http://%s", hostPort(ports[1]))
		args := []string{
			"-js", "-sd", filepath.Join(dir, "js"),
			"-a", "127.0.0.1", "-p", fmt.Sprint(ports[0]), "-m", fmt.Sprint(ports[1]),
			"-n", o.name,
		}
		return &process{
			name:    "nats-server",
			bin:     bin,
			args:    append(args, o.extra...),
			env:     o.env,
			dir:     dir,
			logPath: filepath.Join(dir, "nats-server.log"),
			ready: allOf(
				probeHTTP(np.MonitorURL+"/healthz?js-enabled-only=true", ""),
				probeHTTP(np.MonitorURL+"/healthz", ""),
			),
		}, nil
	})
	np.register(t)
	return np
}

// Stop stops the server gracefully: SIGTERM, then SIGKILL after ten seconds.
func (n *NATSProcess) Stop(t testing.TB) { t.Helper(); n.stopT(t) }

// Kill kills the server with SIGKILL and waits until it has exited.
func (n *NATSProcess) Kill(t testing.TB) { t.Helper(); n.killT(t) }

// Start starts the server again on the same store directory and ports and
// waits until JetStream is healthy. It does nothing when the server is
// running.
func (n *NATSProcess) Start(t testing.TB) { t.Helper(); n.startT(t) }

// hostOfURL returns host:port from a URL such as nats://user@host:port,
// taking the first of a comma-separated list.
func hostOfURL(u string) string {
	u, _, _ = strings.Cut(u, ",")
	if _, rest, ok := strings.Cut(u, "://"); ok {
		u = rest
	}
	if i := strings.LastIndex(u, "@"); i >= 0 {
		u = u[i+1:]
	}
	u, _, _ = strings.Cut(u, "/")
	return u
}
