package app

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/wavehouse/wavehouse/internal/config"
	"github.com/wavehouse/wavehouse/internal/mq/jsmq"
)

// natsPermConfig is a split deployment's mq and coord blocks.
func natsPermConfig(manage bool) config.Config {
	cfg := config.Default()
	cfg.MQ.Backend = "nats"
	cfg.MQ.NATS.URLs = []string{"nats://127.0.0.1:4222"}
	cfg.MQ.NATS.ManageTopology = manage
	cfg.Coord.Backend = "nats"
	cfg.Coord.NATS.Bucket = cfg.MQ.Prefix + "_leases"
	return cfg
}

// allowed reports whether nats-server lets a user with p publish to subject: an allow matches
// and no deny does.
func allowed(p jsmq.Rules, subject string) bool {
	match := func(filters []string) bool {
		return slices.ContainsFunc(filters, func(f string) bool { return server.SubjectMatchesFilter(subject, f) })
	}
	return match(p.Allow) && !match(p.Deny)
}

// TestNATSUsersGrantEachRoleOnlyItsCalls checks, subject by subject, what each role's user may
// publish on the default topology: the api publishes to the ingest subjects and replays with
// ordered consumers but never pulls from or replaces the ingest consumer; the ingest worker
// pulls, acknowledges and dead-letters but never publishes ingest frames; only the sweeper
// purges and holds leases; nobody creates streams unless mq.nats.manage_topology is set.
func TestNATSUsersGrantEachRoleOnlyItsCalls(t *testing.T) {
	n := jsmq.Names{Prefix: "wh", Partitions: 4}
	ingestSubj := n.Subject("acme", "events")
	stream := n.Stream(n.Partition("acme", "events"))
	api := "$JS.API."
	cases := []struct {
		subject              string
		api, ingest, sweeper bool
	}{
		{ingestSubj, true, false, false},
		{n.DLQSubject("acme", "events"), false, true, false},
		{api + "STREAM.INFO." + stream, true, true, true},
		{api + "CONSUMER.INFO." + stream + ".ingest", true, true, true},
		{api + "CONSUMER.CREATE." + stream + ".replay_1." + ingestSubj, true, false, true},
		{api + "CONSUMER.MSG.NEXT." + stream + ".replay_1", true, false, true},
		{api + "CONSUMER.CREATE." + stream + ".ingest", false, false, false},
		{api + "CONSUMER.DELETE." + stream + ".ingest", false, false, false},
		{api + "CONSUMER.MSG.NEXT." + stream + ".ingest", false, true, false},
		{"$JS.ACK." + stream + ".ingest.1.5.5.1700000000.0", false, true, false},
		{api + "STREAM.PURGE." + stream, false, false, true},
		{api + "STREAM.DELETE." + stream, false, false, false},
		{api + "STREAM.MSG.DELETE." + n.DLQStream(), true, false, false},
		{api + "DIRECT.GET." + n.DLQStream(), true, false, true},
		{"$KV." + n.LeaseBucket() + ".sweeper", false, false, true},
		{api + "DIRECT.GET.KV_" + n.LeaseBucket() + ".$KV." + n.LeaseBucket() + ".sweeper", false, false, true},
		{"$KV." + n.JournalBucket() + ".p.0.42", false, true, true},
		{"$KV." + n.JournalBucket() + ".replay.x", true, true, true},
		{"$KV." + n.SchemaBucket() + ".layout", true, true, true},
		{api + "STREAM.CREATE." + stream, false, false, false},
		{"other.subject", false, false, false},
	}
	users := NATSUsers(natsPermConfig(false), "wavehouse-")
	if len(users) != 3 {
		t.Fatalf("%d users, want one per role", len(users))
	}
	for _, c := range cases {
		for i, want := range []bool{c.api, c.ingest, c.sweeper} {
			u := users[i]
			if got := allowed(u.Permissions.Publish, c.subject); got != want {
				t.Errorf("%s publishing to %s: allowed %v, want %v", u.User, c.subject, got, want)
			}
			if !slices.Equal(u.Permissions.Subscribe.Allow, []string{jsmq.InboxSubjects}) || len(u.Permissions.Subscribe.Deny) > 0 {
				t.Errorf("%s subscribes to %v, want only %s", u.User, u.Permissions.Subscribe, jsmq.InboxSubjects)
			}
		}
	}
	for _, u := range NATSUsers(natsPermConfig(true), "wavehouse-") {
		if !allowed(u.Permissions.Publish, api+"STREAM.CREATE."+stream) || !allowed(u.Permissions.Publish, api+"CONSUMER.CREATE."+stream+".ingest") {
			t.Errorf("%s may not create the topology under mq.nats.manage_topology", u.User)
		}
		if u.Role != config.RoleIngest && allowed(u.Permissions.Publish, api+"CONSUMER.MSG.NEXT."+stream+".ingest") {
			t.Errorf("%s may pull from the ingest consumer under mq.nats.manage_topology", u.User)
		}
	}
}

// TestNATSAuthorizationRendersWhatTheServerReads parses the rendered authorization block with
// nats-server's own config parser and requires the users and permissions it reads to be the
// ones generated, their passwords taken from the environment.
func TestNATSAuthorizationRendersWhatTheServerReads(t *testing.T) {
	users := NATSUsers(natsPermConfig(true), "wavehouse-")
	path := filepath.Join(t.TempDir(), "users.conf")
	if err := os.WriteFile(path, RenderNATSAuthorization(users), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		t.Setenv(u.PasswordVar, "pw-"+string(u.Role))
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("nats-server refuses the rendered config: %v", err)
	}
	if len(opts.Users) != len(users) {
		t.Fatalf("nats-server reads %d users, want %d", len(opts.Users), len(users))
	}
	for i, u := range users {
		got := opts.Users[i]
		if got.Username != u.User || got.Password != "pw-"+string(u.Role) {
			t.Errorf("user %d: %s / %q, want %s / pw-%s", i, got.Username, got.Password, u.User, u.Role)
		}
		if got.Permissions == nil || got.Permissions.Publish == nil || got.Permissions.Subscribe == nil {
			t.Fatalf("user %s: no publish or subscribe permissions read", u.User)
		}
		if !slices.Equal(got.Permissions.Publish.Allow, u.Permissions.Publish.Allow) || !slices.Equal(got.Permissions.Publish.Deny, u.Permissions.Publish.Deny) ||
			!slices.Equal(got.Permissions.Subscribe.Allow, u.Permissions.Subscribe.Allow) {
			t.Errorf("user %s: nats-server reads permissions %+v %+v, want %+v", u.User, got.Permissions.Publish, got.Permissions.Subscribe, u.Permissions)
		}
	}
	os.Unsetenv(users[0].PasswordVar)
	if _, err := server.ProcessConfigFile(path); err == nil {
		t.Errorf("nats-server accepts the config without %s: a missing password must refuse it", users[0].PasswordVar)
	}
}
