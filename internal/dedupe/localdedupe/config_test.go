package localdedupe_test

import (
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/dedupe/localdedupe"
)

func TestConfigValidate(t *testing.T) {
	if err := (localdedupe.Config{Dir: "/var/lib/wavehouse/dedupe"}).Validate(); err != nil {
		t.Fatalf("Validate valid config: %v", err)
	}
	err := localdedupe.Config{}.Validate()
	if err == nil || !strings.Contains(err.Error(), "dedupe.local.dir") {
		t.Fatalf("Validate empty config = %v, want an error naming dedupe.local.dir", err)
	}
	if _, err := localdedupe.New(localdedupe.Config{}, localdedupe.Deps{}); err == nil {
		t.Fatalf("New accepted an invalid config")
	}
}
