package main

import (
	"strings"
	"testing"
)

const profile = `mode: atomic
example.com/m/a/x.go:1.1,2.2 4 1
example.com/m/a/x.go:3.1,4.2 6 0
example.com/m/b/y.go:1.1,2.2 5 0
example.com/m/b/y.go:1.1,2.2 5 2
example.com/m/gen/z.go:1.1,2.2 100 0
`

func TestEvaluateMergesDuplicateBlocksAndAppliesThresholds(t *testing.T) {
	blocks, err := parseProfile(strings.NewReader(profile))
	if err != nil {
		t.Fatal(err)
	}
	var c config
	c.Module = "example.com/m"
	c.Threshold.Total = 60
	c.Threshold.Package = 50
	c.Exclude.Paths = []string{"^gen/"}
	c.Override = append(c.Override, struct {
		Path      string  `yaml:"path"`
		Threshold float64 `yaml:"threshold"`
	}{Path: "^b$", Threshold: 100})
	r := evaluate(c, blocks)
	// a: 4 of 10 covered = 40% < 50; b: the block ran in one binary = 100%; gen excluded.
	if len(r.pkgs) != 2 || r.pkgs[0].percent() != 40 || r.pkgs[1].percent() != 100 {
		t.Fatalf("packages %+v", r.pkgs)
	}
	if r.total.stmts != 15 || r.total.covered != 9 {
		t.Fatalf("total %+v", r.total)
	}
	got := strings.Join(r.failures, ";")
	if got != "a: 40.0% < 50.0%" {
		t.Fatalf("failures %q", got)
	}
}

func TestParseProfileRejectsGarbage(t *testing.T) {
	if _, err := parseProfile(strings.NewReader("mode: set\nnot a profile line\n")); err == nil {
		t.Fatal("garbage accepted")
	}
}
