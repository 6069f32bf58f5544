package pipes

import (
	"sync/atomic"

	"github.com/wavehouse/wavehouse/internal/settings"
)

// Tenants is the pipes of a settings snapshot: the shared pipes of settings_dir/pipes, which
// every tenant has, plus each tenant's own pipes, which replace a shared pipe of the same name.
// It is immutable.
type Tenants struct {
	shared   *Set
	byTenant map[string]*Set
}

// FromSettings parses every pipe file of snap. Each file that does not parse is a finding naming
// it, so that a settings reload with a broken pipe is refused as a whole.
func FromSettings(snap *settings.Snapshot) (*Tenants, []settings.Finding) {
	var findings []settings.Finding
	parse := func(files []settings.PipeFile) map[string]*Pipe {
		out := make(map[string]*Pipe, len(files))
		for _, f := range files {
			p, err := Parse(f.Name, f.SQL)
			if err != nil {
				findings = append(findings, settings.Finding{File: f.File, Message: err.Error()})
				continue
			}
			out[p.Name] = p
		}
		return out
	}
	shared := parse(snap.SharedPipes())
	t := &Tenants{shared: mustSet(shared, nil), byTenant: map[string]*Set{}}
	for _, name := range snap.TenantNames() {
		ten, _ := snap.Tenant(name)
		if len(ten.Pipes) == 0 {
			continue
		}
		t.byTenant[name] = mustSet(shared, parse(ten.Pipes))
	}
	return t, findings
}

// mustSet merges shared and own (own wins) into a set; names are unique by construction.
func mustSet(shared, own map[string]*Pipe) *Set {
	all := make([]*Pipe, 0, len(shared)+len(own))
	for name, p := range shared {
		if _, replaced := own[name]; !replaced {
			all = append(all, p)
		}
	}
	for _, p := range own {
		all = append(all, p)
	}
	s, err := NewSet(all...)
	if err != nil {
		panic(err) // unreachable: the maps key pipes by name
	}
	return s
}

// Pipes returns tenant's pipes.
func (t *Tenants) Pipes(tenant string) *Set {
	if s, ok := t.byTenant[tenant]; ok {
		return s
	}
	return t.shared
}

// Live serves the Tenants stored last; the zero value serves no pipes. It is safe for
// concurrent use.
type Live struct {
	cur atomic.Pointer[Tenants]
}

// Store makes t current.
func (l *Live) Store(t *Tenants) { l.cur.Store(t) }

// Pipes returns tenant's pipes in the current Tenants.
func (l *Live) Pipes(tenant string) *Set {
	t := l.cur.Load()
	if t == nil {
		return nil
	}
	return t.Pipes(tenant)
}
