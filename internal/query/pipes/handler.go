package pipes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/wavehouse/wavehouse/internal/httpx"
	"github.com/wavehouse/wavehouse/internal/query"
	"github.com/wavehouse/wavehouse/internal/store"
)

// Source returns the pipes of a tenant (nil: none).
type Source interface {
	Pipes(tenant string) *Set
}

// Server runs a query request and writes the response (query.Service does).
type Server interface {
	Serve(w http.ResponseWriter, ctx context.Context, tenant string, target store.Target, req query.Request)
}

// Deps are the handler's collaborators; both are required.
type Deps struct {
	Pipes Source
	Query Server
}

// Handler serves the pipe routes. It is safe for concurrent use.
type Handler struct {
	deps Deps
}

// maxBody bounds a POST body.
const maxBody = 1 << 20

// NewHandler returns a handler.
func NewHandler(deps Deps) (*Handler, error) {
	if deps.Pipes == nil || deps.Query == nil {
		return nil, errors.New("pipes: Pipes and Query are required")
	}
	return &Handler{deps: deps}, nil
}

// body is the JSON body of POST /v1/pipes/{name}.
type body struct {
	Params  map[string]json.RawMessage `json:"params"`
	Format  string                     `json:"format"`
	MaxRows uint64                     `json:"max_rows"`
}

// ServeHTTP answers GET|POST /v1/pipes/{name} for tenant, whose tables live in target. The
// pipe name is the request's "name" path value.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, tenant string, target store.Target) {
	h.ServeHTTPAllow(w, r, tenant, target, nil)
}

// ServeHTTPAllow is ServeHTTP for a caller restricted to the tables allowTable accepts (nil:
// unrestricted): the tables the pipe declares, or else the tables its SQL names, must pass
// (query.Request.AllowTable).
func (h *Handler) ServeHTTPAllow(w http.ResponseWriter, r *http.Request, tenant string, target store.Target, allowTable func(string) bool) {
	h.ServeHTTPAccess(w, r, tenant, target, query.Access{AllowTable: allowTable})
}

// ServeHTTPAccess is ServeHTTP for a caller whose credential restricts it as acc says: the
// table check of ServeHTTPAllow, and an end user's policies applied to the pipe's SQL.
func (h *Handler) ServeHTTPAccess(w http.ResponseWriter, r *http.Request, tenant string, target store.Target, acc query.Access) {
	name := r.PathValue("name")
	p, ok := h.deps.Pipes.Pipes(tenant).Get(name)
	if !ok {
		httpx.WriteError(w, httpx.Error{Status: http.StatusNotFound, Code: "pipe.not_found", Message: "no pipe named " + strconv.Quote(name)})
		return
	}
	values, opts, err := readParams(r)
	if err != nil {
		httpx.WriteError(w, httpx.Error{Status: http.StatusBadRequest, Code: "pipe.invalid_request", Message: err.Error()})
		return
	}
	params, err := p.Bind(values)
	if err != nil {
		var pe *ParamError
		if errors.As(err, &pe) {
			httpx.WriteError(w, httpx.Error{Status: http.StatusBadRequest, Code: pe.Code, Message: err.Error(),
				Details: map[string]string{"param": pe.Param}})
			return
		}
		httpx.WriteError(w, httpx.Error{Status: http.StatusBadRequest, Code: "pipe.invalid_param", Message: err.Error()})
		return
	}
	req := query.Request{SQL: p.SQL, Params: params, Format: opts.format, MaxRows: opts.maxRows, NoCache: opts.noCache,
		TTL: p.TTL, Tables: p.Tables}
	acc.Apply(&req)
	h.deps.Query.Serve(w, r.Context(), tenant, target, req)
}

// options are the request options beside the parameters.
type options struct {
	format  query.Format
	maxRows uint64
	noCache bool
}

// readParams collects parameter values from the query string and, for POST, the JSON body. A
// name given in both places is an error, so a value is never silently overridden.
func readParams(r *http.Request) (map[string]Value, options, error) {
	opts := options{format: query.FormatJSON}
	values := map[string]Value{}
	qs := r.URL.Query()
	for name, vs := range qs {
		switch name {
		case "format":
			opts.format = query.Format(strings.ToLower(qs.Get(name)))
			continue
		case "cache":
			opts.noCache = qs.Get(name) == "false"
			continue
		case "max_rows":
			n, err := strconv.ParseUint(qs.Get(name), 10, 64)
			if err != nil {
				return nil, opts, errors.New("max_rows must be a non-negative integer")
			}
			opts.maxRows = n
			continue
		}
		if len(vs) != 1 {
			return nil, opts, errors.New("parameter " + name + " is given more than once")
		}
		values[name] = Value{Raw: []byte(vs[0]), Text: true}
	}
	if strings.Contains(r.Header.Get("Cache-Control"), "no-cache") {
		opts.noCache = true
	}
	if r.Method != http.MethodPost {
		return values, opts, nil
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, opts, err
	}
	if len(raw) > maxBody {
		return nil, opts, errors.New("body is larger than 1 MiB")
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return values, opts, nil
	}
	var b body
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&b); err != nil {
		return nil, opts, errors.New(`send {"params": {...}, "format": "json|ndjson|csv", "max_rows": N}: ` + err.Error())
	}
	if b.Format != "" {
		opts.format = query.Format(strings.ToLower(b.Format))
	}
	if b.MaxRows > 0 {
		opts.maxRows = b.MaxRows
	}
	for name, v := range b.Params {
		if _, dup := values[name]; dup {
			return nil, opts, errors.New("parameter " + name + " is given in both the query string and the body")
		}
		values[name] = Value{Raw: v}
	}
	return values, opts, nil
}

// listing is one pipe in GET /v1/pipes.
type listing struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Params      []paramListing `json:"params"`
	TTL         string         `json:"ttl,omitempty"`
	Tables      []string       `json:"tables,omitempty"`
}

type paramListing struct {
	Name        string          `json:"name"`
	Type        string          `json:"type"`
	Required    bool            `json:"required"`
	Default     json.RawMessage `json:"default,omitempty"`
	Description string          `json:"description,omitempty"`
}

// List answers GET /v1/pipes: the tenant's pipes with their parameters, sorted by name.
func (h *Handler) List(w http.ResponseWriter, r *http.Request, tenant string) {
	all := h.deps.Pipes.Pipes(tenant).All()
	out := make([]listing, 0, len(all))
	for _, p := range all {
		l := listing{Name: p.Name, Description: p.Description, Params: []paramListing{}, Tables: p.Tables}
		if p.TTL > 0 {
			l.TTL = p.TTL.String()
		}
		for _, prm := range p.Params {
			l.Params = append(l.Params, paramListing{Name: prm.Name, Type: prm.Type.Name, Required: prm.Required,
				Default: prm.Default, Description: prm.Description})
		}
		out = append(out, l)
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"pipes": out})
}
