package main

import (
	"bytes"
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
