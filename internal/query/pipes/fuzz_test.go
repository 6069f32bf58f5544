package pipes

import (
	"testing"

	"github.com/wavehouse/wavehouse/internal/query/sqlscan"
	"github.com/wavehouse/wavehouse/internal/store/sqlbind"
)

// FuzzParse holds Parse to its promises on any input: no panic, and a definition it accepts
// is one read statement whose placeholders are all declared, with valid defaults that Bind
// hands back unchanged.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		topUsers,
		"SELECT 1",
		"-- @param x UInt8 default 3\nSELECT {x:UInt8}",
		"-- @param s String default \"a b\" text\nSELECT {s:String}",
		"-- @param t Tuple(a UInt8, b String) default [1, \"x\"]\nSELECT {t:Tuple(a UInt8, b String)}",
		"-- @param d DateTime('Europe/Paris') required\nSELECT {d:DateTime('Europe/Paris')}",
		"-- @param x UInt8\nSELECT {x:UInt8}",
		"-- @ttl 5m\n-- @tables a, b\nWITH 1 AS y SELECT y FROM a JOIN b USING k",
		"/* x */ SELECT 1",
		"-- @param x UInt8 required\nSELECT '{x:UInt8}', {x:UInt8}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Parse("fuzz", src)
		if err != nil {
			return
		}
		if err := sqlscan.Check(p.SQL); err != nil {
			t.Fatalf("accepted a statement the read-only check refuses: %v", err)
		}
		found, err := sqlbind.Find(p.SQL)
		if err != nil {
			t.Fatalf("accepted SQL whose placeholders do not scan: %v", err)
		}
		for _, ph := range found {
			if _, ok := p.param(ph.Name); !ok {
				t.Fatalf("placeholder %s is not declared", ph.Name)
			}
		}
		values := map[string]Value{}
		for _, prm := range p.Params {
			if prm.Required {
				if prm.Default != nil {
					t.Fatalf("required %s has a default", prm.Name)
				}
				continue
			}
			values[prm.Name] = Value{Raw: prm.Default}
		}
		if len(values) == len(p.Params) {
			got, err := p.Bind(values)
			if err != nil {
				t.Fatalf("defaults do not bind: %v", err)
			}
			for _, prm := range p.Params {
				if string(got[prm.Name]) != string(prm.Default) {
					t.Fatalf("%s: default %s bound as %s", prm.Name, prm.Default, got[prm.Name])
				}
			}
		}
	})
}
