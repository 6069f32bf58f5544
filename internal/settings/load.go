package settings

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// tenantFile is the YAML schema of one tenant file.
type tenantFile struct {
	Database   string     `yaml:"database"`
	ClickHouse *Target    `yaml:"clickhouse"`
	Keys       []keyFile  `yaml:"keys"`
	Limits     Limits     `yaml:"limits"`
	Dedupe     dedupeFile `yaml:"dedupe"`
	JWT        *jwtFile   `yaml:"jwt"`
	CORS       *corsFile  `yaml:"cors"`
}

type keyFile struct {
	ID      string   `yaml:"id"`
	Hash    string   `yaml:"hash"`
	Scopes  []string `yaml:"scopes"`
	Tables  []string `yaml:"tables"`
	Expires string   `yaml:"expires"`
	Limits  *Limits  `yaml:"limits"`
}

type dedupeFile struct {
	Retention string `yaml:"retention"`
}

// Load reads and validates the settings directory dir as a whole. It returns an *InvalidError
// listing every finding when anything is wrong; now stamps the snapshot's LoadedAt.
func Load(dir string, now time.Time) (*Snapshot, error) {
	files, findings, err := readTree(dir)
	if err != nil {
		return nil, fmt.Errorf("settings: read %s: %w", dir, err)
	}
	snap, more := build(files)
	findings = append(findings, more...)
	if len(findings) > 0 {
		return nil, &InvalidError{Findings: findings}
	}
	snap.Dir = dir
	snap.Fingerprint = fingerprint(files)
	snap.LoadedAt = now
	return snap, nil
}

// build parses and validates files (sorted by path) into a snapshot.
func build(files []file) (*Snapshot, []Finding) {
	snap := Empty()
	var findings []Finding
	// Tenant files first, so that each pipe file finds its tenant.
	ordered := make([]file, 0, len(files))
	for _, pass := range []bool{false, true} {
		for _, f := range files {
			if (strings.Count(f.rel, "/") == 3) == pass {
				ordered = append(ordered, f)
			}
		}
	}
	for _, f := range ordered {
		parts := strings.Split(f.rel, "/") // pipes/<p>.sql | tenants/<x>.yaml | tenants/<x>/tenant.yaml | tenants/<x>/pipes/<p>.sql
		if parts[0] == sharedPipesDir {
			pipe := strings.TrimSuffix(parts[1], ".sql")
			if !pipeNameRE.MatchString(pipe) {
				findings = append(findings, Finding{File: f.rel, Message: fmt.Sprintf("pipe name %q: use letters, digits, '_' and '-'", pipe)})
				continue
			}
			snap.shared = append(snap.shared, PipeFile{Name: pipe, File: f.rel, SQL: string(f.data)})
			continue
		}
		var name string
		switch len(parts) {
		case 2:
			name = strings.TrimSuffix(parts[1], ".yaml")
		default:
			name = parts[1]
		}
		if len(parts) == 4 { // a pipe file
			t, ok := snap.tenants[name]
			if !ok {
				continue // the tenant file itself is already a finding
			}
			pipe := strings.TrimSuffix(parts[3], ".sql")
			if !pipeNameRE.MatchString(pipe) {
				findings = append(findings, Finding{File: f.rel, Message: fmt.Sprintf("pipe name %q: use letters, digits, '_' and '-'", pipe)})
				continue
			}
			t.Pipes = append(t.Pipes, PipeFile{Name: pipe, File: f.rel, SQL: string(f.data)})
			continue
		}
		if !tenantNameRE.MatchString(name) {
			findings = append(findings, Finding{File: f.rel, Message: fmt.Sprintf("tenant name %q: use [a-z][a-z0-9_]{0,62} (rename the file)", name)})
			continue
		}
		if prev, dup := snap.tenants[name]; dup {
			findings = append(findings, Finding{File: f.rel, Message: fmt.Sprintf("tenant %q is also defined by %s: keep one", name, prev.File)})
			continue
		}
		t, fnd := parseTenant(name, f)
		findings = append(findings, fnd...)
		if t == nil {
			continue
		}
		snap.tenants[name] = t
		if t.JWT != nil && t.JWT.Issuer != "" {
			if other, dup := snap.issuers[t.JWT.Issuer]; dup {
				findings = append(findings, Finding{File: f.rel, Key: "jwt.issuer",
					Message: fmt.Sprintf("issuer %q is also used by tenant %q: issuers must be unique", t.JWT.Issuer, other.Name)})
			} else {
				snap.issuers[t.JWT.Issuer] = t
			}
		}
		for i := range t.Keys {
			k := &t.Keys[i]
			if other, dup := snap.keys[k.ID]; dup {
				findings = append(findings, Finding{File: f.rel, Key: fmt.Sprintf("keys[%d].id", i),
					Message: fmt.Sprintf("key id %q is also used by tenant %q: key ids must be unique", k.ID, other.tenant.Name)})
				continue
			}
			snap.keys[k.ID] = keyRef{tenant: t, key: k}
		}
	}
	return snap, findings
}

var yamlLineRE = regexp.MustCompile(`^line (\d+): (.*)$`)
var unknownFieldRE = regexp.MustCompile(`^field (\S+) not found in type .*$`)

// parseTenant decodes one tenant file strictly and validates it. It returns a nil tenant when the
// file cannot be decoded at all.
func parseTenant(name string, f file) (*Tenant, []Finding) {
	var findings []Finding
	var tf tenantFile
	dec := yaml.NewDecoder(bytes.NewReader(f.data))
	dec.KnownFields(true)
	err := dec.Decode(&tf)
	var te *yaml.TypeError
	switch {
	case err == nil, errors.Is(err, io.EOF):
	case errors.As(err, &te):
		for _, msg := range te.Errors {
			findings = append(findings, yamlFinding(f.rel, msg))
		}
	default:
		return nil, []Finding{yamlFinding(f.rel, strings.TrimPrefix(err.Error(), "yaml: "))}
	}
	var root yaml.Node
	_ = yaml.Unmarshal(f.data, &root)
	at := func(key string, p ...any) Finding { return Finding{File: f.rel, Line: lineOf(&root, p...), Key: key} }
	t, more := validateTenant(name, f.rel, &tf, at)
	return t, append(findings, more...)
}

func yamlFinding(rel, msg string) Finding {
	fd := Finding{File: rel, Message: msg}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		fd.Line, _ = strconv.Atoi(m[1])
		fd.Message = m[2]
	}
	if m := unknownFieldRE.FindStringSubmatch(fd.Message); m != nil {
		fd.Message = fmt.Sprintf("unknown key %q", m[1])
	}
	return fd
}

// lineOf returns the line of the node at path (string keys for mappings, int indexes for
// sequences), or of the deepest ancestor found.
func lineOf(root *yaml.Node, p ...any) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, step := range p {
		var next *yaml.Node
		switch s := step.(type) {
		case string:
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == s {
						line = n.Content[i].Line
						next = n.Content[i+1]
						break
					}
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && s < len(n.Content) {
				next = n.Content[s]
				line = next.Line
			}
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}

// parseDuration accepts Go durations plus a "d" (24h) suffix, e.g. "90d", "36h".
func parseDuration(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		return time.Duration(n * float64(24*time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q", s)
	}
	return d, nil
}

// ParseDuration parses a settings duration: a Go duration or a number of days such as "90d".
func ParseDuration(s string) (time.Duration, error) { return parseDuration(s) }
