package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/app"
)

// TestMQPermissionsFromConfig runs `wavehouse mq permissions` on a split role config: JSON has
// one user per role, the lease bucket only for the sweeper, the ingest subjects only for the
// api, flags override the config's keys; the conf form names every user; a config without
// mq.backend nats and an unknown format are usage errors.
func TestMQPermissionsFromConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	cfg := "roles: sweeper\nidempotency:\n  enabled: false\nmq:\n  backend: nats\n  prefix: whp\n  nats:\n    urls: [nats://127.0.0.1:4222]\ncoord:\n  backend: nats\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runMQT(t, "permissions", "--config", path, "--format", "json", "--partitions", "2", "--user-prefix", "wh-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var users []app.NATSUser
	if err := json.Unmarshal([]byte(out), &users); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	if len(users) != 3 || users[0].User != "wh-api" || users[1].User != "wh-ingest" || users[2].User != "wh-sweeper" {
		t.Fatalf("users %+v, want wh-api, wh-ingest, wh-sweeper", users)
	}
	for _, u := range users {
		pub := u.Permissions.Publish.Allow
		if got, want := slices.Contains(pub, "$KV.whp_leases.>"), u.User == "wh-sweeper"; got != want {
			t.Errorf("%s: lease bucket granted %v, want %v", u.User, got, want)
		}
		if got, want := slices.Contains(pub, "whp.in.1.>"), u.User == "wh-api"; got != want {
			t.Errorf("%s: ingest subjects of partition 1 granted %v, want %v", u.User, got, want)
		}
		if slices.Contains(pub, "whp.in.2.>") || slices.Contains(pub, "$JS.API.STREAM.INFO.whp_in_2") {
			t.Errorf("%s: partition 2 granted with --partitions 2", u.User)
		}
	}
	code, out, stderr = runMQT(t, "permissions", "--config", path)
	if code != 0 || !strings.Contains(out, "authorization {") || strings.Count(out, "user: \"wavehouse-") != 3 || !strings.Contains(out, "password: $WH_NATS_SWEEPER_PASSWORD") {
		t.Fatalf("conf: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, _, stderr := runMQT(t, "permissions"); code != 2 || !strings.Contains(stderr, "mq.backend") {
		t.Errorf("defaults (embedded queue): exit %d, want 2 naming mq.backend: %s", code, stderr)
	}
	if code, _, stderr := runMQT(t, "permissions", "--config", path, "--format", "nack"); code != 2 || !strings.Contains(stderr, "--format") {
		t.Errorf("--format nack: exit %d, want 2: %s", code, stderr)
	}
}
