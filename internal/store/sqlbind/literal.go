package sqlbind

import (
	"encoding/json"
	"strings"

	"github.com/wavehouse/wavehouse/internal/chtype"
)

// Literal renders a canonical value of t as a SQL expression of exactly type t: scalars as
// CAST('text' AS T), NULL as CAST(NULL AS T), arrays, tuples and maps element by element.
func Literal(t *chtype.Type, canonical []byte) (string, error) {
	if string(canonical) == "null" {
		return "CAST(NULL AS " + t.Name + ")", nil
	}
	base := t.Base()
	switch base.Kind {
	case chtype.Array:
		var parts []string
		_, err := chtype.SplitArray(canonical, func(_ int, elem []byte) error {
			s, err := Literal(base.Elem, elem)
			parts = append(parts, s)
			return err
		})
		if err != nil {
			return "", err
		}
		return "CAST([" + strings.Join(parts, ", ") + "] AS " + t.Name + ")", nil
	case chtype.Tuple:
		var parts []string
		_, err := chtype.SplitArray(canonical, func(i int, elem []byte) error {
			s, err := Literal(base.Fields[i].Type, elem)
			parts = append(parts, s)
			return err
		})
		if err != nil {
			return "", err
		}
		return "CAST(tuple(" + strings.Join(parts, ", ") + ") AS " + t.Name + ")", nil
	case chtype.Map:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(canonical, &obj); err != nil {
			return "", err
		}
		var parts []string
		for k, v := range obj {
			kc, err := base.Key.Canonical(mustJSONString(k))
			if err != nil {
				return "", err
			}
			ks, err := Literal(base.Key, kc)
			if err != nil {
				return "", err
			}
			vs, err := Literal(base.Value, v)
			if err != nil {
				return "", err
			}
			parts = append(parts, ks, vs)
		}
		if len(parts) == 0 {
			return "CAST(map() AS " + t.Name + ")", nil
		}
		return "CAST(map(" + strings.Join(parts, ", ") + ") AS " + t.Name + ")", nil
	}
	s := string(canonical)
	if u, ok := unquoteJSON(canonical); ok {
		s = u
	}
	return "CAST(" + Quote(s) + " AS " + t.Name + ")", nil
}

// literalNoCast renders composite values the way ClickHouse's text format writes them.
func literalNoCast(t *chtype.Type, canonical []byte) (string, error) {
	if string(canonical) == "null" {
		return "NULL", nil
	}
	base := t.Base()
	switch base.Kind {
	case chtype.Array, chtype.Tuple:
		var parts []string
		_, err := chtype.SplitArray(canonical, func(i int, elem []byte) error {
			et := base.Elem
			if base.Kind == chtype.Tuple {
				et = base.Fields[i].Type
			}
			s, err := literalNoCast(et, elem)
			parts = append(parts, s)
			return err
		})
		if base.Kind == chtype.Array {
			return "[" + strings.Join(parts, ",") + "]", err
		}
		return "(" + strings.Join(parts, ",") + ")", err
	case chtype.Map:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(canonical, &obj); err != nil {
			return "", err
		}
		var parts []string
		for k, v := range obj {
			vs, err := literalNoCast(base.Value, v)
			if err != nil {
				return "", err
			}
			parts = append(parts, Quote(k)+":"+vs)
		}
		return "{" + strings.Join(parts, ",") + "}", nil
	}
	if u, ok := unquoteJSON(canonical); ok {
		return Quote(u), nil
	}
	return string(canonical), nil
}

func unquoteJSON(b []byte) (string, bool) {
	if len(b) < 2 || b[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(b, &s) != nil {
		return "", false
	}
	return s, true
}

func mustJSONString(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}
