package main

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
)

func TestKeysCreatePrintsKeyOnceAndOnlyItsHashForSettings(t *testing.T) {
	code, out, errs := runCmd(t, t.Context(), "keys", "create", "--tenant", "acme", "--scopes", "ingest,query", "--tables", "events", "--expires", "90d")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	m := regexp.MustCompile(`wh_([0-9a-f]{12})_([0-9a-f]{64})`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no key in output:\n%s", out)
	}
	if strings.Count(out, m[2]) != 1 {
		t.Fatalf("the secret appears %d times; it must be shown exactly once", strings.Count(out, m[2]))
	}
	sum := sha256.Sum256([]byte(m[2]))
	entry := "id: " + m[1] + ", hash: " + hex.EncodeToString(sum[:])
	if !strings.Contains(out, entry) || !strings.Contains(out, "scopes: [ingest, query]") || !strings.Contains(out, "tables: [events]") {
		t.Fatalf("settings entry missing or wrong (want %q):\n%s", entry, out)
	}
}

func TestKeysCreateRefusesBadInputWithUsageExit(t *testing.T) {
	code, _, errs := runCmd(t, t.Context(), "keys", "create", "--tenant", "ACME", "--scopes", "bogus")
	if code != 2 || !strings.Contains(errs, "--tenant") || !strings.Contains(errs, `unknown scope "bogus"`) {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}
