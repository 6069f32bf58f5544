// Package memlimit decides the Go runtime's soft memory limit (GOMEMLIMIT) of a wavehouse
// process: an explicit GOMEMLIMIT environment variable wins, then the boot config's
// memory.limit, then a share of the cgroup memory limit the process runs under, then a default
// that grows with the processors the process may use (ADR 0018). The garbage collector works
// harder as the heap nears the limit, so RSS stays near the budget instead of garbage sitting
// on the heap, and a container is not OOM-killed with garbage on its heap.
package memlimit

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// Sources of a Decision.
const (
	// SourceEnv: the GOMEMLIMIT environment variable, applied by the Go runtime itself.
	SourceEnv = "env GOMEMLIMIT"
	// SourceConfig: the boot config's memory.limit.
	SourceConfig = "memory.limit"
	// SourceCgroup: memory.cgroup_percent of the cgroup's memory limit.
	SourceCgroup = "cgroup"
	// SourceDefault: no cgroup limit and no setting: DefaultLimit for GOMAXPROCS processors.
	SourceDefault = "default"
	// SourceNone: no limit (memory.limit is -1).
	SourceNone = "none"
)

// The default limit without a cgroup limit or a setting is DefaultBase plus DefaultPerProc for
// each processor (GOMAXPROCS): 192 MiB on two. What the heap holds under load grows with the
// rate the queue is written at (the embedded file store keeps about ten seconds of written
// frames), and that rate grows with the processors. With the ClickHouse engine in the process
// (store chdb) a processor's share is DefaultPerProcEngine (256 MiB on two): the engine's
// inserts share the processors, and at 192 MiB it lost 40% of its throughput. ADR 0018 and
// docs/benchmarks.md have the measurements behind the figures.
const (
	DefaultBase          = 64 << 20
	DefaultPerProc       = 64 << 20
	DefaultPerProcEngine = 96 << 20
)

// DefaultCgroupPercent is the share of the cgroup memory limit given to the Go heap by default;
// the rest is left to what the Go runtime does not count (thread stacks, cgo, the kernel's page
// cache charged to the cgroup).
const DefaultCgroupPercent = 80

// Config is the memory block of the boot config.
type Config struct {
	// Limit in bytes: 0 derives it from the cgroup, else DefaultLimit; -1 sets none.
	Limit int64
	// CgroupPercent is the share (1–100) of the cgroup memory limit used when Limit is 0.
	CgroupPercent int
	// Procs is the number of processors the default limit is sized for (GOMAXPROCS; at
	// least 1 is assumed).
	Procs int
	// Engine is set when the ClickHouse engine runs in the process (store chdb).
	Engine bool
}

// Decision is the limit chosen and why.
type Decision struct {
	// Limit in bytes; math.MaxInt64 means no limit.
	Limit int64
	// Source is one of the Source constants.
	Source string
	// Cgroup is the cgroup memory limit found (0: none), whatever the source.
	Cgroup int64
}

// Decide picks the limit: env is the value of GOMEMLIMIT ("" when unset) and cgroup the
// cgroup memory limit in bytes (0 when there is none).
func Decide(c Config, env string, cgroup int64) Decision {
	d := Decision{Limit: math.MaxInt64, Source: SourceNone, Cgroup: cgroup}
	switch {
	case env != "":
		d.Source = SourceEnv
		d.Limit = debug.SetMemoryLimit(-1) // what the runtime parsed from the variable
	case c.Limit > 0:
		d.Limit, d.Source = c.Limit, SourceConfig
	case c.Limit == 0 && cgroup > 0:
		pct := c.CgroupPercent
		if pct <= 0 || pct > 100 {
			pct = DefaultCgroupPercent
		}
		d.Limit, d.Source = cgroup/100*int64(pct), SourceCgroup
	case c.Limit == 0:
		d.Limit, d.Source = DefaultLimit(c.Procs, c.Engine), SourceDefault
	}
	return d
}

// DefaultLimit is the limit without a cgroup limit or a setting for procs processors, with or
// without the engine in the process.
func DefaultLimit(procs int, engine bool) int64 {
	per := int64(DefaultPerProc)
	if engine {
		per = DefaultPerProcEngine
	}
	return DefaultBase + per*int64(max(procs, 1))
}

// Apply sets the runtime's soft memory limit to d.Limit unless it came from the environment
// (the runtime already applied it).
func Apply(d Decision) {
	if d.Source != SourceEnv {
		debug.SetMemoryLimit(d.Limit)
	}
}

// CgroupLimit returns the memory limit of the cgroup the process runs in (0: none), reading
// the v2 memory.max or the v1 memory.limit_in_bytes under root (normally "/": the files are
// /proc/self/cgroup and /sys/fs/cgroup/...). A missing file means no limit.
func CgroupLimit(root string) (int64, error) {
	f, err := os.Open(path.Join(root, "proc/self/cgroup"))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("memlimit: %w", err)
	}
	defer f.Close()
	var candidates []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			base := path.Join(root, "sys/fs/cgroup")
			candidates = append(candidates, path.Join(base, parts[2], "memory.max"), path.Join(base, "memory.max"))
		case hasController(parts[1], "memory"):
			base := path.Join(root, "sys/fs/cgroup/memory")
			candidates = append(candidates, path.Join(base, parts[2], "memory.limit_in_bytes"), path.Join(base, "memory.limit_in_bytes"))
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("memlimit: %w", err)
	}
	for _, c := range candidates {
		b, err := os.ReadFile(c)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("memlimit: %w", err)
		}
		return parseLimit(c, strings.TrimSpace(string(b)))
	}
	return 0, nil
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// unlimitedV1 is the smallest value cgroup v1 reports for "no limit" (PAGE_COUNTER_MAX in
// bytes on 64-bit kernels is 0x7FFFFFFFFFFFF000; anything this large is not a real limit).
const unlimitedV1 = 1 << 62

func parseLimit(file, s string) (int64, error) {
	if s == "max" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("memlimit: %s: %q is not a byte count", file, s)
	}
	if n <= 0 || n >= unlimitedV1 {
		return 0, nil
	}
	return n, nil
}

// Boot finds the cgroup limit, decides and applies the limit; env is GOMEMLIMIT's value. A zero
// c.Procs is taken from runtime.GOMAXPROCS.
func Boot(c Config, env string) (Decision, error) {
	if c.Procs == 0 {
		c.Procs = runtime.GOMAXPROCS(0)
	}
	cg, err := CgroupLimit("/")
	d := Decide(c, env, cg)
	Apply(d)
	return d, err
}
