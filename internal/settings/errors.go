package settings

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrInvalid marks a settings directory that failed validation; the error is an *InvalidError.
	ErrInvalid = errors.New("settings: invalid")
	// ErrClosed is returned by a Manager after Close.
	ErrClosed = errors.New("settings: closed")
)

// Finding is one problem found in the settings directory.
type Finding struct {
	// File is the path relative to the settings directory, e.g. "tenants/acme.yaml".
	File string `json:"file"`
	// Line is the 1-based line in File, or 0 when the problem is not tied to a line.
	Line int `json:"line,omitempty"`
	// Key is the YAML path at fault, e.g. "keys[1].scopes".
	Key string `json:"key,omitempty"`
	// Message says what is wrong and what to change.
	Message string `json:"message"`
}

// String formats the finding as file:line: key: message.
func (f Finding) String() string {
	var b strings.Builder
	b.WriteString(f.File)
	if f.Line > 0 {
		fmt.Fprintf(&b, ":%d", f.Line)
	}
	b.WriteString(": ")
	if f.Key != "" {
		b.WriteString(f.Key)
		b.WriteString(": ")
	}
	b.WriteString(f.Message)
	return b.String()
}

// InvalidError carries every finding of a failed load.
type InvalidError struct {
	// Findings lists every problem, in file order.
	Findings []Finding
}

// Error lists every finding, one per line.
func (e *InvalidError) Error() string {
	lines := make([]string, 0, len(e.Findings)+1)
	lines = append(lines, fmt.Sprintf("settings: invalid (%d findings)", len(e.Findings)))
	for _, f := range e.Findings {
		lines = append(lines, "  "+f.String())
	}
	return strings.Join(lines, "\n")
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }
