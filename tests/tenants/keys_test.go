package tenants_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
)

// tenant is one tenant's settings as the tests write them.
type tenant struct {
	Name     string
	Database string
	Keys     []*apiKey
	// Limits is the tenant's limits: as a YAML flow mapping ("{requests_per_second: 5}"), or "".
	Limits string
	// Pipes maps a pipe name to its SQL file.
	Pipes map[string]string
	// Extra is appended to the tenant file verbatim.
	Extra string
}

// yaml renders the tenant file.
func (tn *tenant) yaml() string {
	var b strings.Builder
	fmt.Fprintf(&b, "database: %s\n", tn.Database)
	if len(tn.Keys) > 0 {
		b.WriteString("keys:\n")
		for _, k := range tn.Keys {
			fmt.Fprintf(&b, "  %s\n", k.Entry)
		}
	}
	if tn.Limits != "" {
		fmt.Fprintf(&b, "limits: %s\n", tn.Limits)
	}
	b.WriteString(tn.Extra)
	return b.String()
}

// key returns the tenant's key with that label suffix (the scopes it was created with).
func (tn *tenant) key(t testing.TB, name string) *apiKey {
	t.Helper()
	for _, k := range tn.Keys {
		if k.Name == name {
			return k
		}
	}
	t.Fatalf("tenant %s has no key %q", tn.Name, name)
	return nil
}

// without returns the tenant's keys minus the one called name.
func (tn *tenant) without(name string) []*apiKey {
	var out []*apiKey
	for _, k := range tn.Keys {
		if k.Name != name {
			out = append(out, k)
		}
	}
	return out
}

// apiKey is an API key made by `wavehouse keys create`.
type apiKey struct {
	Name   string // short name in the test, e.g. "ingest" or "restricted"
	Tenant string
	Scopes string // as given to --scopes
	Tables string // as given to --tables
	Token  string // the credential, wh_<id>_<secret>
	ID     string
	Entry  string // the settings line printed by keys create
}

func (k *apiKey) String() string {
	s := fmt.Sprintf("key %s/%s (scopes %s", k.Tenant, k.Name, k.Scopes)
	if k.Tables != "" {
		s += ", tables " + k.Tables
	}
	return s + ")"
}

// newKey creates a key with the binary's `keys create` and registers its secret with the suite.
func newKey(t testing.TB, tenantName, name, scopes, tables string) *apiKey {
	t.Helper()
	args := []string{"keys", "create", "--tenant", tenantName, "--scopes", scopes}
	if tables != "" {
		args = append(args, "--tables", tables)
	}
	code, out := gatewaybinRun(t, nil, args...)
	if code != 0 {
		// The output holds the key only on success, so it is safe to print here.
		t.Fatalf("keys create %v: exit %d:\n%s", args, code, out)
	}
	k := &apiKey{Name: name, Tenant: tenantName, Scopes: scopes, Tables: tables}
	for line := range strings.SplitSeq(out, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "wh_"):
			k.Token = line
		case strings.HasPrefix(line, "- {id: "):
			k.Entry = line
		}
	}
	parts := strings.SplitN(k.Token, "_", 3)
	if len(parts) != 3 || k.Entry == "" {
		t.Fatalf("keys create printed no key and settings line (exit 0, %d bytes of output)", len(out))
	}
	k.ID = parts[1]
	secrets.add("API key "+k.Tenant+"/"+k.Name, k.Token)
	secrets.add("secret of API key "+k.Tenant+"/"+k.Name, parts[2])
	if strings.Contains(k.Entry, parts[2]) || !strings.Contains(k.Entry, "id: "+k.ID) || !strings.Contains(k.Entry, "hash: ") {
		t.Fatalf("keys create: the settings line of %s must hold the id and hash, never the secret", k)
	}
	return k
}

// tenantKeys creates a tenant with one key per scope, named after it, plus "restricted" (every
// scope, but only the table "other").
func tenantKeys(t testing.TB, name, database string) *tenant {
	t.Helper()
	tn := &tenant{Name: name, Database: database}
	for _, s := range []string{"ingest", "query", "stream", "admin"} {
		tn.Keys = append(tn.Keys, newKey(t, name, s, s, ""))
	}
	tn.Keys = append(tn.Keys, newKey(t, name, "restricted", "ingest,query,stream,admin", "other"))
	return tn
}

// newOperatorKey returns a fresh operator key and registers it with the suite.
func newOperatorKey(t testing.TB) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	k := "op-" + hex.EncodeToString(b)
	secrets.add("operator key", k)
	return k
}
