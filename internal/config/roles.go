package config

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Role is one of the jobs a process can run.
type Role string

// The roles. A process runs any non-empty subset; the default runs all three.
const (
	RoleAPI     Role = "api"
	RoleIngest  Role = "ingest"
	RoleSweeper Role = "sweeper"
)

// AllRoles lists every role in canonical order.
var AllRoles = []Role{RoleAPI, RoleIngest, RoleSweeper}

// Roles is the set of roles a process runs. It reads as a list or a comma-separated string.
type Roles []Role

// Has reports whether r contains role.
func (r Roles) Has(role Role) bool { return slices.Contains(r, role) }

// All reports whether r holds every role (the all-in-one process).
func (r Roles) All() bool {
	for _, role := range AllRoles {
		if !r.Has(role) {
			return false
		}
	}
	return true
}

// String joins the roles with commas.
func (r Roles) String() string {
	s := make([]string, len(r))
	for i, role := range r {
		s[i] = string(role)
	}
	return strings.Join(s, ",")
}

// ParseRoles splits a comma-separated list; unknown names are kept for Validate to report.
func ParseRoles(s string) Roles {
	var r Roles
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			r = append(r, Role(strings.ToLower(part)))
		}
	}
	return r
}

// UnmarshalText parses a comma-separated list; cleanenv uses it for WH_ROLES.
func (r *Roles) UnmarshalText(b []byte) error {
	*r = ParseRoles(string(b))
	return nil
}

// UnmarshalYAML accepts a sequence of names or one comma-separated string.
func (r *Roles) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*r = ParseRoles(n.Value)
	case yaml.SequenceNode:
		var names []string
		if err := n.Decode(&names); err != nil {
			return err
		}
		*r = ParseRoles(strings.Join(names, ","))
	default:
		return fmt.Errorf("line %d: roles must be a list or a comma-separated string", n.Line)
	}
	return nil
}

// MarshalYAML writes the roles as one comma-separated string.
func (r Roles) MarshalYAML() (any, error) { return r.String(), nil }

// The components a process can run: one per layer (store, mq, cache, dedupe, coord) and one per
// worker. The wiring in internal/app builds exactly the components the roles use.
const (
	ComponentOps      = "ops"
	ComponentStore    = "store"
	ComponentMQ       = "mq"
	ComponentCache    = "cache"
	ComponentDedupe   = "dedupe"
	ComponentCoord    = "coord"
	ComponentSettings = "settings"
	ComponentIngest   = "ingest"
	ComponentSweeper  = "sweeper"
	ComponentAPI      = "api"
)

// roleComponents is the one table of what each role runs besides the ops listener, which every
// process runs. Validation (Uses) and the wiring (internal/app) both read it.
var roleComponents = map[Role][]string{
	RoleAPI:     {ComponentStore, ComponentMQ, ComponentCache, ComponentDedupe, ComponentSettings, ComponentAPI},
	RoleIngest:  {ComponentStore, ComponentMQ, ComponentCache, ComponentSettings, ComponentIngest},
	RoleSweeper: {ComponentMQ, ComponentCoord, ComponentDedupe, ComponentSweeper},
}

// Uses reports whether a process running these roles runs the component (a layer such as
// "store" or a worker such as "ingest"); the ops listener is always used.
func (r Roles) Uses(component string) bool {
	if component == ComponentOps {
		return true
	}
	for _, role := range r {
		if slices.Contains(roleComponents[role], component) {
			return true
		}
	}
	return false
}
