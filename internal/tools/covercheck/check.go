package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// config is the subset of the .testcoverage.yml format we support.
type config struct {
	Module    string `yaml:"module"`
	Threshold struct {
		Total   float64 `yaml:"total"`
		Package float64 `yaml:"package"`
	} `yaml:"threshold"`
	Override []struct {
		Path      string  `yaml:"path"`
		Threshold float64 `yaml:"threshold"`
	} `yaml:"override"`
	Exclude struct {
		Paths []string `yaml:"paths"`
	} `yaml:"exclude"`
}

func readConfig(p string) (config, error) {
	var c config
	b, err := os.ReadFile(p)
	if err != nil {
		return c, err
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("%s: %w", p, err)
	}
	return c, nil
}

// block is one line of a cover profile: statements in a range and whether they ran.
type block struct {
	file    string
	key     string // file:range, to merge duplicates from several test binaries
	stmts   int
	covered bool
}

func parseProfile(r io.Reader) ([]block, error) {
	merged := map[string]*block{}
	var order []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if line == 1 && strings.HasPrefix(text, "mode:") || text == "" {
			continue
		}
		// name.go:12.34,15.2 3 1
		sp := strings.LastIndexByte(text, ' ')
		sp2 := strings.LastIndexByte(text[:max(sp, 0)], ' ')
		colon := strings.LastIndexByte(text[:max(sp2, 0)], ':')
		if sp < 0 || sp2 < 0 || colon < 0 {
			return nil, fmt.Errorf("line %d: malformed %q", line, text)
		}
		stmts, err1 := strconv.Atoi(text[sp2+1 : sp])
		count, err2 := strconv.Atoi(text[sp+1:])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("line %d: malformed %q", line, text)
		}
		key := text[:sp2]
		b, ok := merged[key]
		if !ok {
			b = &block{file: text[:colon], key: key, stmts: stmts}
			merged[key] = b
			order = append(order, key)
		}
		b.covered = b.covered || count > 0
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := make([]block, 0, len(order))
	for _, k := range order {
		out = append(out, *merged[k])
	}
	return out, nil
}

type pkgCov struct {
	name           string
	stmts, covered int
	threshold      float64
}

func (p pkgCov) percent() float64 {
	if p.stmts == 0 {
		return 100
	}
	return 100 * float64(p.covered) / float64(p.stmts)
}

type report struct {
	pkgs     []pkgCov
	total    pkgCov
	failures []string
}

func evaluate(c config, blocks []block) report {
	var excludes []*regexp.Regexp
	for _, e := range c.Exclude.Paths {
		excludes = append(excludes, regexp.MustCompile(e))
	}
	byPkg := map[string]*pkgCov{}
	total := pkgCov{name: "total", threshold: c.Threshold.Total}
	for _, b := range blocks {
		rel := strings.TrimPrefix(strings.TrimPrefix(b.file, c.Module), "/")
		if matchesAny(excludes, rel) {
			continue
		}
		pkg := path.Dir(rel)
		p, ok := byPkg[pkg]
		if !ok {
			p = &pkgCov{name: pkg, threshold: c.Threshold.Package}
			for _, o := range c.Override {
				if regexp.MustCompile(o.Path).MatchString(pkg) {
					p.threshold = o.Threshold
				}
			}
			byPkg[pkg] = p
		}
		p.stmts += b.stmts
		total.stmts += b.stmts
		if b.covered {
			p.covered += b.stmts
			total.covered += b.stmts
		}
	}
	var r report
	for _, p := range byPkg {
		r.pkgs = append(r.pkgs, *p)
		if p.percent() < p.threshold {
			r.failures = append(r.failures, fmt.Sprintf("%s: %.1f%% < %.1f%%", p.name, p.percent(), p.threshold))
		}
	}
	sort.Slice(r.pkgs, func(i, j int) bool { return r.pkgs[i].name < r.pkgs[j].name })
	r.total = total
	if total.percent() < total.threshold {
		r.failures = append(r.failures, fmt.Sprintf("total: %.1f%% < %.1f%%", total.percent(), total.threshold))
	}
	return r
}

func matchesAny(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

func (r report) print(w io.Writer) {
	for _, p := range r.pkgs {
		mark := "ok  "
		if p.percent() < p.threshold {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "%s %-50s %6.1f%% (min %.0f%%)\n", mark, p.name, p.percent(), p.threshold)
	}
	fmt.Fprintf(w, "total statement coverage %.1f%% (min %.0f%%)\n", r.total.percent(), r.total.threshold)
	for _, f := range r.failures {
		fmt.Fprintf(w, "below threshold: %s\n", f)
	}
}
