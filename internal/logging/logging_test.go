package logging

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestContextIDsOnEveryLine(t *testing.T) {
	var b bytes.Buffer
	log, err := New(&b, Options{Level: "debug", Format: "json"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := WithTraceID(WithRequestID(context.Background(), "r1"), "t1")
	log.With("k", "v").InfoContext(ctx, "hello")
	out := b.String()
	for _, want := range []string{`"request_id":"r1"`, `"trace_id":"t1"`, `"k":"v"`, `"msg":"hello"`} {
		if !strings.Contains(out, want) {
			t.Errorf("line lacks %s: %s", want, out)
		}
	}
	b.Reset()
	log.Info("no context")
	if strings.Contains(b.String(), "request_id") {
		t.Errorf("request id on a line without one: %s", b.String())
	}
}

func TestOptions(t *testing.T) {
	var b bytes.Buffer
	log, err := New(&b, Options{Level: "warn", Format: "text"})
	if err != nil {
		t.Fatal(err)
	}
	log.Info("dropped")
	log.Warn("kept")
	if strings.Contains(b.String(), "dropped") || !strings.Contains(b.String(), "msg=kept") {
		t.Fatalf("level/format not applied: %q", b.String())
	}
	if _, err := New(&b, Options{Level: "loud"}); err == nil {
		t.Error("bad level accepted")
	}
	if _, err := New(&b, Options{Format: "xml"}); err == nil {
		t.Error("bad format accepted")
	}
}
