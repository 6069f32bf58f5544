package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

const healthUsage = `usage: wavehouse health [--config FILE | --url URL] [--timeout DURATION]

Probes /readyz on the ops listener of a running process: the address is ops.listen of the config
(read as serve reads it: --config, else $WH_CONFIG, plus WH_* variables; an unspecified host such
as 0.0.0.0 is probed on loopback), or --url. For container healthchecks and Kubernetes probes.
Exit 0 ready (including "degraded": the process accepts rows into the durable queue while a
dependency is down), 1 not ready (starting, shutting down) or unreachable, with the reason on
stderr, 2 usage.
`

func runHealth(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("health", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, healthUsage); fs.PrintDefaults() }
	path := fs.String("config", "", "config file whose ops.listen to probe (default $WH_CONFIG; none: built-in defaults)")
	rawURL := fs.String("url", "", "ops listener base URL (http://host:port) or the full /readyz URL, instead of the config")
	timeout := fs.Duration("timeout", 2*time.Second, "bound of the whole probe")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 || *path != "" && *rawURL != "" || *timeout <= 0 {
		fmt.Fprint(stderr, "health: give --config or --url (not both), a positive --timeout and no arguments\n")
		return 2
	}
	target := *rawURL
	if target == "" {
		cfg, err := loadValid(configPath(*path), stderr)
		if err != nil {
			return 1
		}
		if target, err = probeURL(cfg.Ops.Listen); err != nil {
			fmt.Fprintf(stderr, "health: ops.listen: %v\n", err)
			return 1
		}
	} else {
		u, err := url.Parse(target)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			fmt.Fprintf(stderr, "health: --url %q is not an http(s) URL\n", target)
			return 2
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/readyz"
		}
		target = u.String()
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	msg, err := probeReady(ctx, target)
	if err != nil {
		fmt.Fprintf(stderr, "health: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, msg)
	return 0
}

// probeURL returns the /readyz URL of an ops listener bound to listen. A listener on every
// address is probed on loopback, from inside the container or pod that runs it.
func probeURL(listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", err
	}
	if port == "0" {
		return "", fmt.Errorf("%s: port 0 is chosen at boot; probe with --url", listen)
	}
	switch ip := net.ParseIP(host); {
	case host == "" || ip != nil && ip.IsUnspecified() && ip.To4() != nil:
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified():
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/readyz", nil
}

// readyz is the /readyz answer (internal/ops).
type readyz struct {
	Ready    bool              `json:"ready"`
	Status   string            `json:"status"`
	Reasons  []string          `json:"reasons"`
	Degraded map[string]string `json:"degraded"`
}

// probeReady GETs target and returns what to print when the process is ready, or why it is not.
func probeReady(ctx context.Context, target string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return "", fmt.Errorf("GET %s: no answer in time: %w", target, err)
		}
		return "", fmt.Errorf("GET %s: %w", target, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", target, err)
	}
	var body readyz
	parsed := json.Unmarshal(raw, &body) == nil
	if resp.StatusCode != http.StatusOK {
		why := strings.TrimSpace(string(raw))
		if parsed && len(body.Reasons) > 0 {
			why = strings.Join(body.Reasons, ", ")
		}
		return "", fmt.Errorf("not ready: %s answered %d: %s", target, resp.StatusCode, why)
	}
	if !parsed || !body.Ready {
		return "", fmt.Errorf("%s answered 200 without a ready /readyz body: %.200s", target, raw)
	}
	if len(body.Degraded) == 0 {
		return "ready", nil
	}
	deps := make([]string, 0, len(body.Degraded))
	for dep, why := range body.Degraded {
		deps = append(deps, dep+": "+why)
	}
	sort.Strings(deps)
	return "ready, degraded: " + strings.Join(deps, "; "), nil
}
