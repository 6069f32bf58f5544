package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// fakeRoot writes files (path relative to the root → content) under a temp dir standing for /.
func fakeRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestCgroupLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"v2 own cgroup", map[string]string{
			"proc/self/cgroup":                       "0::/kubepods/pod1\n",
			"sys/fs/cgroup/kubepods/pod1/memory.max": "536870912\n",
		}, 512 << 20},
		{"v2 namespaced: the cgroup is the root", map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "1073741824\n",
		}, 1 << 30},
		{"v2 path not visible: falls back to the root file", map[string]string{
			"proc/self/cgroup":         "0::/elsewhere\n",
			"sys/fs/cgroup/memory.max": "268435456",
		}, 256 << 20},
		{"v2 max means none", map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "max\n",
		}, 0},
		{"v1 memory controller", map[string]string{
			"proc/self/cgroup": "12:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n",
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "314572800\n",
		}, 300 << 20},
		{"v1 unlimited", map[string]string{
			"proc/self/cgroup":                           "4:memory:/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
		}, 0},
		{"no cgroup file", map[string]string{}, 0},
		{"no memory file", map[string]string{"proc/self/cgroup": "0::/\n"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CgroupLimit(fakeRoot(t, tc.files))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("CgroupLimit = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestCgroupLimitRejectsGarbage(t *testing.T) {
	root := fakeRoot(t, map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "lots\n"})
	if _, err := CgroupLimit(root); err == nil {
		t.Fatal("an unparsable memory.max was accepted")
	}
}

func TestDecidePrecedence(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    Config
		cgroup int64
		want   Decision
	}{
		{"cgroup share", Config{CgroupPercent: 80}, 1000 << 20, Decision{Limit: 800 << 20, Source: SourceCgroup, Cgroup: 1000 << 20}},
		{"config wins over cgroup", Config{Limit: 300 << 20, CgroupPercent: 80}, 1000 << 20, Decision{Limit: 300 << 20, Source: SourceConfig, Cgroup: 1000 << 20}},
		{"-1 turns the cgroup share off", Config{Limit: -1, CgroupPercent: 80}, 1000 << 20, Decision{Limit: math.MaxInt64, Source: SourceNone, Cgroup: 1000 << 20}},
		{"no cgroup, no config: the default for two processors", Config{CgroupPercent: 80, Procs: 2}, 0, Decision{Limit: 192 << 20, Source: SourceDefault}},
		{"the default grows with the processors", Config{CgroupPercent: 80, Procs: 8}, 0, Decision{Limit: 576 << 20, Source: SourceDefault}},
		{"the default assumes one processor at least", Config{CgroupPercent: 80}, 0, Decision{Limit: 128 << 20, Source: SourceDefault}},
		{"the engine in the process: a larger share per processor", Config{CgroupPercent: 80, Procs: 2, Engine: true}, 0, Decision{Limit: 256 << 20, Source: SourceDefault}},
		{"the engine under a cgroup: the cgroup share", Config{CgroupPercent: 80, Procs: 2, Engine: true}, 1000 << 20, Decision{Limit: 800 << 20, Source: SourceCgroup, Cgroup: 1000 << 20}},
		{"-1 without a cgroup: none", Config{Limit: -1, CgroupPercent: 80, Procs: 2}, 0, Decision{Limit: math.MaxInt64, Source: SourceNone}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.cfg, "", tc.cgroup); got != tc.want {
				t.Fatalf("Decide = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestEnvWins: with GOMEMLIMIT set the runtime has applied it at start; Decide reports that
// value and Apply leaves it alone, whatever memory.limit or the cgroup say.
func TestEnvWins(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	debug.SetMemoryLimit(123 << 20) // as the runtime does for GOMEMLIMIT=123MiB

	d := Decide(Config{Limit: 300 << 20, CgroupPercent: 80}, "123MiB", 1<<30)
	if d.Source != SourceEnv || d.Limit != 123<<20 {
		t.Fatalf("Decide = %+v, want the environment's 123 MiB", d)
	}
	Apply(d)
	if got := debug.SetMemoryLimit(-1); got != 123<<20 {
		t.Fatalf("runtime limit after Apply = %d, want 123 MiB", got)
	}
}

func TestApplySetsTheRuntimeLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })

	Apply(Decide(Config{Limit: 250 << 20}, "", 0))
	if got := debug.SetMemoryLimit(-1); got != 250<<20 {
		t.Fatalf("runtime limit = %d, want 250 MiB", got)
	}
	Apply(Decide(Config{Limit: -1}, "", 0))
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("runtime limit = %d, want none", got)
	}
}
