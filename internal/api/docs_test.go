package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/wavehouse/wavehouse/internal/limits"
)

// docCode is an error code as the docs write it in backquotes: `area.reason` or a bare
// `internal`, maybe after its status (`409 dlq.still_invalid`).
var docCode = regexp.MustCompile("`(?:[0-9]{3} )?([a-z_]+(?:\\.[a-z_]+)*)`")

var docsOnce = sync.OnceValues(func() (map[string]bool, error) {
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil || len(files) == 0 {
		return nil, err
	}
	codes := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, m := range docCode.FindAllSubmatch(b, -1) {
			codes[string(m[1])] = true
		}
	}
	return codes, nil
})

// documentedCodes returns every code written in docs/*.md.
func documentedCodes(t *testing.T) map[string]bool {
	t.Helper()
	codes, err := docsOnce()
	if err != nil || len(codes) == 0 {
		t.Fatalf("reading docs/*.md: %v (%d codes)", err, len(codes))
	}
	return codes
}

// emittedCodes returns every error code the package's own source can answer with: the string
// of each Code field in its composite literals, each request.Code* constant it names, and the
// limits.<kind> codes of limits.Reject, which it calls.
func emittedCodes(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	reqConsts := requestCodeConsts(t)
	set := map[string]bool{
		"limits." + string(limits.KindRequests): true, "limits." + string(limits.KindRows): true, "limits." + string(limits.KindQueries): true,
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.KeyValueExpr:
				if k, ok := n.Key.(*ast.Ident); ok && k.Name == "Code" {
					if lit, ok := n.Value.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						s, _ := strconv.Unquote(lit.Value)
						set[s] = true
					}
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "request" && strings.HasPrefix(n.Sel.Name, "Code") {
					v, ok := reqConsts[n.Sel.Name]
					if !ok {
						t.Errorf("%s: request.%s is not a code constant of internal/ingest/request", fset.Position(n.Pos()), n.Sel.Name)
					}
					set[v] = true
				}
			}
			return true
		})
	}
	out := make([]string, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// requestCodeConsts reads the Code* constants of internal/ingest/request, whose codes Parse
// answers on this package's ingest route.
func requestCodeConsts(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "ingest", "request", "errors.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && strings.HasPrefix(n.Name, "Code") {
					out[n.Name], _ = strconv.Unquote(lit.Value)
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no Code* constants found in internal/ingest/request/errors.go")
	}
	return out
}

// TestEveryEmittedCodeIsDocumented: docs are the contract, so every error code this package (and
// the ingest parser behind its ingest route) can answer is listed in docs/. The route tests
// check the same of every code they receive (wantError). A renamed code — the ingest route once
// answered ingest.read_failed where ingest.md documents ingest.body_read_failed — fails here.
func TestEveryEmittedCodeIsDocumented(t *testing.T) {
	docs := documentedCodes(t)
	codes := emittedCodes(t)
	for _, v := range requestCodeConsts(t) {
		codes = append(codes, v)
	}
	if len(codes) < 20 {
		t.Fatalf("found only %d codes in the source (%v): the scan is broken", len(codes), codes)
	}
	for _, c := range codes {
		if !docs[c] {
			t.Errorf("code %s is answered by internal/api but not documented in docs/*.md", c)
		}
	}
}
