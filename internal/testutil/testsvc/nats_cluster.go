package testsvc

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// NATSCluster is a private cluster of nats-server processes with JetStream,
// routed to each other on loopback, owned by one test.
type NATSCluster struct {
	// Name is the cluster name (--cluster_name); node i is named Name-i.
	Name string
	// Nodes are the servers, in order. Use the cluster's Stop, Kill and
	// Start rather than the nodes' own, so readiness waits for the cluster.
	Nodes []*NATSProcess
}

// StartNATSCluster starts n fresh nats-server processes with JetStream,
// clustered over loopback routes, each with its own store directory, and
// waits until every node reports /healthz ok and knows the JetStream meta
// leader. All nodes are stopped in t.Cleanup. Of opts, WithNATSConfig, WithNATSArgs and
// WithNATSEnv apply to every node; the names are the cluster's.
func StartNATSCluster(t testing.TB, n int, opts ...NATSOption) *NATSCluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("testsvc: StartNATSCluster: n = %d, want ≥ 1", n)
	}
	bin := requireNATSBinary(t)
	var o natsOptions
	for _, opt := range opts {
		opt(&o)
	}
	name := UniqueName(t, "whc")
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = t.TempDir()
	}
	var lastErr error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		ports, err := freePorts(3 * n)
		if err != nil {
			t.Fatalf("testsvc: NATS cluster: %v", err)
		}
		c := newNATSCluster(bin, name, dirs, ports, o)
		for _, node := range c.Nodes {
			if err := node.p.spawn(); err != nil {
				c.killAll()
				t.Fatalf("testsvc: NATS cluster: %v", err)
			}
		}
		if lastErr = c.waitReady(); lastErr == nil {
			for _, node := range c.Nodes {
				node.register(t)
			}
			return c
		}
		for _, node := range c.Nodes {
			t.Logf("testsvc: NATS cluster node %s:\n%s", node.p.name, node.p.logTails())
		}
		c.killAll()
		t.Logf("testsvc: NATS cluster start attempt %d failed: %v", attempt, lastErr)
	}
	t.Fatalf("testsvc: start NATS cluster: %v", lastErr)
	return nil
}

// newNATSCluster builds (without starting) the nodes of a cluster using
// three ports per node: client, monitoring and cluster.
func newNATSCluster(bin, name string, dirs []string, ports []int, o natsOptions) *NATSCluster {
	n := len(dirs)
	routes := make([]string, n)
	for i := range n {
		routes[i] = "nats://" + hostPort(ports[3*i+2])
	}
	c := &NATSCluster{Name: name}
	for i := range n {
		client, mon, cluster := ports[3*i], ports[3*i+1], ports[3*i+2]
		node := &NATSProcess{Dir: dirs[i], MonitorURL: "http://" + hostPort(mon)}
		node.URL = "nats://" + hostPort(client)
		node.p = &process{
			name: fmt.Sprintf("nats-server %s-%d", name, i),
			bin:  bin,
			args: append([]string{
				"-js", "-sd", filepath.Join(dirs[i], "js"),
				"-a", "127.0.0.1", "-p", fmt.Sprint(client), "-m", fmt.Sprint(mon),
				"-n", fmt.Sprintf("%s-%d", name, i),
				"--cluster_name", name,
				"--cluster", "nats://" + hostPort(cluster),
				"--routes", strings.Join(routes, ","),
			}, o.extra...),
			env:     o.env,
			dir:     dirs[i],
			logPath: filepath.Join(dirs[i], "nats-server.log"),
			ready:   probeHTTP(node.MonitorURL+"/healthz?js-enabled-only=true", ""),
		}
		c.Nodes = append(c.Nodes, node)
	}
	return c
}

// URLs returns the client URLs of all nodes, running or not.
func (c *NATSCluster) URLs() []string {
	urls := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		urls[i] = n.URL
	}
	return urls
}

// URL returns the client URLs of all nodes joined with commas, the form
// nats.Connect accepts.
func (c *NATSCluster) URL() string { return strings.Join(c.URLs(), ",") }

// Stop stops node i gracefully: SIGTERM, then SIGKILL after ten seconds;
// then it waits until the running nodes have dropped their routes to it.
func (c *NATSCluster) Stop(t testing.TB, i int) {
	t.Helper()
	c.node(t, i).stopT(t)
	c.waitRoutesGone(t, i)
}

// Kill kills node i with SIGKILL, waits until it has exited and until the
// running nodes have dropped their routes to it. Until a node has noticed,
// it still forwards messages to the dead node's subscriptions (a stream
// leader's, say), where they are lost: a request then times out instead of
// being told at once that nobody serves it, and a test would be timing the
// route's teardown rather than the cluster's answer to the loss.
func (c *NATSCluster) Kill(t testing.TB, i int) {
	t.Helper()
	c.node(t, i).killT(t)
	c.waitRoutesGone(t, i)
}

// waitRoutesGone waits until no running node reports a route to node i.
func (c *NATSCluster) waitRoutesGone(t testing.TB, i int) {
	t.Helper()
	gone := fmt.Sprintf("%s-%d", c.Name, i)
	probe := func(ctx context.Context) error {
		for j, n := range c.Nodes {
			if j == i || !n.p.running() {
				continue
			}
			names, err := routeNames(ctx, n.MonitorURL)
			if err != nil {
				return err
			}
			if slices.Contains(names, gone) {
				return fmt.Errorf("%s still has a route to %s", n.p.name, gone)
			}
		}
		return nil
	}
	if err := pollReady(probe, readyTimeout, func() error { return nil }); err != nil {
		t.Fatalf("testsvc: NATS cluster %s: %v", c.Name, err)
	}
}

// Start starts node i again on its store directory and ports and waits
// until it has JetStream enabled; then, when a majority of the nodes is
// running, it waits until the cluster is ready (WaitReady). Restarting a
// node that is running does nothing.
func (c *NATSCluster) Start(t testing.TB, i int) {
	t.Helper()
	c.node(t, i).startT(t)
	running := 0
	for _, n := range c.Nodes {
		if n.p.running() {
			running++
		}
	}
	if running > len(c.Nodes)/2 {
		c.WaitReady(t)
	}
}

// WaitReady waits until every running node answers /healthz ok and knows
// the JetStream meta leader.
func (c *NATSCluster) WaitReady(t testing.TB) {
	t.Helper()
	if err := c.waitReady(); err != nil {
		for _, node := range c.Nodes {
			t.Log(node.p.logTails())
		}
		t.Fatalf("testsvc: NATS cluster %s: %v", c.Name, err)
	}
}

// node returns node i or fails the test.
func (c *NATSCluster) node(t testing.TB, i int) *NATSProcess {
	t.Helper()
	if i < 0 || i >= len(c.Nodes) {
		t.Fatalf("testsvc: NATS cluster has nodes 0..%d, not %d", len(c.Nodes)-1, i)
	}
	return c.Nodes[i]
}

// waitReady polls every running node until all are healthy and agree on a
// meta leader.
func (c *NATSCluster) waitReady() error {
	var running []*NATSProcess
	for _, n := range c.Nodes {
		if n.p.running() {
			running = append(running, n)
		}
	}
	if len(running) == 0 {
		return fmt.Errorf("no node is running")
	}
	probe := func(ctx context.Context) error {
		leader := ""
		for _, n := range running {
			if err := probeHTTP(n.MonitorURL+"/healthz", "")(ctx); err != nil {
				return err
			}
			l, err := metaLeader(ctx, n.MonitorURL)
			if err != nil {
				return err
			}
			if leader != "" && l != leader {
				return fmt.Errorf("nodes disagree on the meta leader: %s and %s", leader, l)
			}
			leader = l
		}
		return nil
	}
	exited := func() error {
		for _, n := range running {
			if err := n.p.exited(); err != nil {
				return err
			}
		}
		return nil
	}
	return pollReady(probe, readyTimeout, exited)
}

// killAll kills every node, for a failed start.
func (c *NATSCluster) killAll() {
	for _, n := range c.Nodes {
		n.p.kill()
	}
}

// routeNames returns the server names of a node's routes (/routez).
func routeNames(ctx context.Context, monitorURL string) ([]string, error) {
	code, body, err := httpGet(ctx, monitorURL+"/routez")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET %s/routez: status %d", monitorURL, code)
	}
	var routez struct {
		Routes []struct {
			RemoteName string `json:"remote_name"`
		} `json:"routes"`
	}
	if err := json.Unmarshal([]byte(body), &routez); err != nil {
		return nil, fmt.Errorf("GET %s/routez: %w", monitorURL, err)
	}
	names := make([]string, len(routez.Routes))
	for i, r := range routez.Routes {
		names[i] = r.RemoteName
	}
	return names, nil
}

// metaLeader returns the JetStream meta leader a node reports in /jsz.
func metaLeader(ctx context.Context, monitorURL string) (string, error) {
	code, body, err := httpGet(ctx, monitorURL+"/jsz")
	if err != nil {
		return "", err
	}
	if code != http.StatusOK {
		return "", fmt.Errorf("GET %s/jsz: status %d", monitorURL, code)
	}
	var jsz struct {
		Meta *struct {
			Leader string `json:"leader"`
		} `json:"meta_cluster"`
	}
	if err := json.Unmarshal([]byte(body), &jsz); err != nil {
		return "", fmt.Errorf("GET %s/jsz: %w", monitorURL, err)
	}
	if jsz.Meta == nil || jsz.Meta.Leader == "" {
		return "", fmt.Errorf("%s: no JetStream meta leader yet", monitorURL)
	}
	return jsz.Meta.Leader, nil
}
