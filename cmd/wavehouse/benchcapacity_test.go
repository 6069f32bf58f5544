package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestBenchCapacityExitStatus(t *testing.T) {
	small := []string{"capacity", "--tenants", "100", "--rows", "10000", "--max-wait", "1s", "--duration", "5s"}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{small, 0, "ok: every resource within its capacity"},
		{append(small, "--sharding", "all", "--shards", "4", "--cap-shard-parts", "50"), 1, "FAILED: shard parts/s (busiest)"},
		{append(small, "--sharding", "some"), 2, `sharding: "some" is not`},
		{append(small, "--shards", "0"), 2, "shards: must be positive"},
	} {
		var out, errb bytes.Buffer
		code := runBench(t.Context(), tc.args, &out, &errb)
		if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.want) {
			t.Errorf("%v: exit %d, want %d with %q:\n%s%s", tc.args, code, tc.code, tc.want, out.String(), errb.String())
		}
	}
}

// TestScalingDocMatchesTheSimulation runs every `go run ./cmd/wavehouse bench capacity …`
// command docs/scaling.md shows and requires each row of its output table that the page prints
// after the command to appear in the output as printed: the page's sizing cannot drift from the
// model.
func TestScalingDocMatchesTheSimulation(t *testing.T) {
	doc, err := os.ReadFile("../../docs/scaling.md")
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "go run ./cmd/wavehouse bench "
	lines := strings.Split(string(doc), "\n")
	ran := 0
	for i, l := range lines {
		if !strings.HasPrefix(l, prefix+"capacity ") {
			continue
		}
		var out, errb bytes.Buffer
		code := runBench(t.Context(), strings.Fields(strings.TrimPrefix(l, prefix)), &out, &errb)
		if code != 0 {
			t.Errorf("%s: exit %d:\n%s%s", l, code, out.String(), errb.String())
			continue
		}
		ran++
		rows := 0
		for _, row := range lines[i+1:] {
			if strings.HasPrefix(row, "### ") || strings.HasPrefix(row, prefix) {
				break
			}
			if !strings.HasPrefix(row, "| ") || strings.HasPrefix(row, "| resource ") {
				continue
			}
			rows++
			if !strings.Contains(out.String(), row) {
				t.Errorf("docs/scaling.md row %q after %q is not in the simulation's output:\n%s", row, l, out.String())
			}
		}
		if rows == 0 {
			t.Errorf("docs/scaling.md shows no output table after %q", l)
		}
	}
	if ran == 0 {
		t.Fatal("docs/scaling.md shows no bench capacity command")
	}
}
