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

// Uses reports whether a process running these roles needs the layer ("store", "mq", "cache",
// "dedupe" or "coord"): api uses store, mq, cache and dedupe; ingest uses store, mq and cache;
// sweeper uses mq, coord and dedupe.
func (r Roles) Uses(layer string) bool {
	for _, role := range r {
		switch role {
		case RoleAPI:
			if layer == "store" || layer == "mq" || layer == "cache" || layer == "dedupe" {
				return true
			}
		case RoleIngest:
			if layer == "store" || layer == "mq" || layer == "cache" {
				return true
			}
		case RoleSweeper:
			if layer == "mq" || layer == "coord" || layer == "dedupe" {
				return true
			}
		}
	}
	return false
}
