package localcoord

import (
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("zero Config: %v", err)
	}
	err := Config{Lease: -1}.Validate()
	if err == nil || !strings.Contains(err.Error(), "coord.lease") {
		t.Fatalf("negative lease: %v, want an error naming coord.lease", err)
	}
	if _, err := New(Config{Lease: -1}, Deps{}); err == nil {
		t.Fatal("New accepted an invalid Config")
	}
}
