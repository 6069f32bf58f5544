package pipes

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Value is one parameter value as the client sent it.
type Value struct {
	// Raw is the value's bytes: JSON from a request body, text from a query string.
	Raw []byte
	// Text says Raw came from a query string and is the value's text rather than JSON.
	Text bool
}

// ParamError is a parameter problem found before any SQL runs.
type ParamError struct {
	// Code is pipe.missing_param, pipe.unknown_param or pipe.invalid_param.
	Code string
	// Param names the parameter.
	Param string
	// Reason says what is wrong.
	Reason string
}

// Error formats the problem, naming the parameter.
func (e *ParamError) Error() string {
	return fmt.Sprintf("parameter %s: %s", e.Param, e.Reason)
}

// Bind validates values against the pipe's declared parameters and returns the canonical
// JSON value of every parameter (defaults filled in), ready to be bound by the store. It
// reports the first problem in parameter order, then unknown names in sorted order.
func (p *Pipe) Bind(values map[string]Value) (map[string][]byte, error) {
	out := make(map[string][]byte, len(p.Params))
	for _, prm := range p.Params {
		v, given := values[prm.Name]
		if !given {
			if prm.Required {
				return nil, &ParamError{Code: "pipe.missing_param", Param: prm.Name, Reason: "is required (" + prm.Type.Name + ")"}
			}
			out[prm.Name] = prm.Default
			continue
		}
		canon, err := prm.canonical(v)
		if err != nil {
			return nil, &ParamError{Code: "pipe.invalid_param", Param: prm.Name, Reason: "not a valid " + prm.Type.Name + ": " + err.Error()}
		}
		out[prm.Name] = canon
	}
	var unknown []string
	for name := range values {
		if _, ok := p.param(name); !ok {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, &ParamError{Code: "pipe.unknown_param", Param: unknown[0], Reason: "is not a parameter of pipe " + p.Name + " (have " + p.paramNames() + ")"}
	}
	return out, nil
}

// canonical validates one value. Query-string text is first read as a string of the type
// (which is how numbers, dates and UUIDs are written there too), then as JSON (arrays, maps,
// tuples, booleans, null).
func (prm Param) canonical(v Value) ([]byte, error) {
	if !v.Text {
		return prm.Type.Canonical(v.Raw)
	}
	quoted, _ := json.Marshal(string(v.Raw))
	canon, err := prm.Type.Canonical(quoted)
	if err == nil {
		return canon, nil
	}
	if json.Valid(v.Raw) {
		if c, jerr := prm.Type.Canonical(v.Raw); jerr == nil {
			return c, nil
		}
	}
	return nil, err
}

func (p *Pipe) paramNames() string {
	if len(p.Params) == 0 {
		return "none"
	}
	names := make([]string, len(p.Params))
	for i, prm := range p.Params {
		names[i] = prm.Name
	}
	return strings.Join(names, ", ")
}
