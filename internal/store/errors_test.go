package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		err  error
		want Class
	}{
		{nil, ClassNone},
		{fmt.Errorf("insert: %w", ErrUnavailable), ClassTransient},
		{FromException(252, "Too many parts", OpInsert), ClassTransient},
		{FromException(241, "Memory limit", OpInsert), ClassTransient},
		{FromException(241, "Memory limit", OpQuery), ClassPermanent},
		{FromException(159, "Timeout exceeded", OpInsert), ClassTransient},
		{FromException(159, "Timeout exceeded", OpQuery), ClassPermanent},
		{FromException(60, "Table x doesn't exist", OpInsert), ClassPermanent},
		{FromException(27, "Cannot parse input", OpInsert), ClassPermanent},
		{FromException(164, "readonly", OpQuery), ClassPermanent},
		{FromException(193, "Wrong password for user acme", OpInsert), ClassTransient},
		{FromException(516, "acme: Authentication failed", OpQuery), ClassTransient},
		{context.Canceled, ClassCanceled},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), ClassTransient},
		{ErrClosed, ClassCanceled},
		{errors.New("something new"), ClassTransient},
	}
	for _, c := range cases {
		if got := Classify(c.err); got != c.want {
			t.Errorf("Classify(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestFromExceptionKeepsCause(t *testing.T) {
	err := FromException(60, "Table db.t doesn't exist.", OpQuery)
	if !errors.Is(err, ErrUnknownTable) {
		t.Fatalf("%v is not ErrUnknownTable", err)
	}
	var e *Exception
	if !errors.As(err, &e) || e.Code != 60 {
		t.Fatalf("%v does not carry the exception", err)
	}
	if !SchemaChanged(err) {
		t.Fatal("unknown table must mean the schema changed")
	}
	if err.Error() != "store: unknown table: code 60: Table db.t doesn't exist." {
		t.Fatalf("message %q", err.Error())
	}
}

func TestColumnFlags(t *testing.T) {
	cases := []struct {
		col                    Column
		writable, required, nl bool
	}{
		{NewColumn("a", "String", "", ""), true, true, false},
		{NewColumn("b", "Nullable(String)", "", ""), true, false, true},
		{NewColumn("c", "UInt8", "DEFAULT", "1"), true, false, false},
		{NewColumn("d", "UInt8", "MATERIALIZED", "c+1"), false, false, false},
		{NewColumn("e", "UInt8", "ALIAS", "c"), false, false, false},
		{NewColumn("f", "Weird((", "", ""), true, true, false},
	}
	for _, c := range cases {
		if c.col.Writable() != c.writable || c.col.Required() != c.required || c.col.Nullable() != c.nl {
			t.Errorf("%s %s: writable=%v required=%v nullable=%v", c.col.Name, c.col.TypeName,
				c.col.Writable(), c.col.Required(), c.col.Nullable())
		}
	}
}
