package config

import (
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration written as a Go duration string ("1s", "250ms") in YAML, in WH_*
// variables and in the effective config printed by `wavehouse config check`.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats the duration like time.Duration does.
func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalText parses a Go duration string; cleanenv uses it for WH_* variables.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("invalid duration %q (use e.g. 500ms, 10s, 1m)", string(b))
	}
	*d = Duration(v)
	return nil
}

// Set parses a Go duration string, so that *Duration is a flag.Value.
func (d *Duration) Set(s string) error { return d.UnmarshalText([]byte(s)) }

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a duration string such as 10s", n.Line)
	}
	if err := d.UnmarshalText([]byte(n.Value)); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }
