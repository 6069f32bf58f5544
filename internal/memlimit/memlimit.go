// Package memlimit decides the Go runtime's soft memory limit (GOMEMLIMIT) of a wavehouse
// process: an explicit GOMEMLIMIT environment variable wins, then the boot config's
// memory.limit, then a share of the cgroup memory limit the process runs under. The garbage
// collector works harder as the heap nears the limit, so a container's RSS stays below its
// cgroup limit instead of the process being OOM-killed with garbage on its heap.
package memlimit

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
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
	// SourceNone: no limit (no cgroup limit found, or memory.limit is -1).
	SourceNone = "none"
)

// DefaultCgroupPercent is the share of the cgroup memory limit given to the Go heap by default;
// the rest is left to what the Go runtime does not count (thread stacks, cgo, the kernel's page
// cache charged to the cgroup).
const DefaultCgroupPercent = 80

// Config is the memory block of the boot config.
type Config struct {
	// Limit in bytes: 0 derives it from the cgroup, -1 sets none.
	Limit int64
	// CgroupPercent is the share (1–100) of the cgroup memory limit used when Limit is 0.
	CgroupPercent int
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
	}
	return d
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

// Boot finds the cgroup limit, decides and applies the limit; env is GOMEMLIMIT's value.
func Boot(c Config, env string) (Decision, error) {
	cg, err := CgroupLimit("/")
	d := Decide(c, env, cg)
	Apply(d)
	return d, err
}
