package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/logging"
)

// TestEnumsNameRealKeysAndTheirDocs: every enum key is a config key whose documented description
// lists each of its values, roles match AllRoles and every log level parses.
func TestEnumsNameRealKeysAndTheirDocs(t *testing.T) {
	fields := map[string]Field{}
	for _, f := range Fields() {
		fields[f.Key] = f
	}
	for _, e := range Enums() {
		f, ok := fields[e.Key]
		if !ok {
			t.Errorf("enum %s is not a config key", e.Key)
			continue
		}
		for _, v := range e.Values {
			if !strings.Contains(f.Description, v) {
				t.Errorf("%s: description %q does not mention %q", e.Key, f.Description, v)
			}
		}
	}
	var roles []string
	for _, r := range AllRoles {
		roles = append(roles, string(r))
	}
	if !slices.Equal(enumValues("roles"), roles) {
		t.Errorf("roles enum %v, AllRoles %v", enumValues("roles"), roles)
	}
	for _, l := range enumValues("log.level") {
		if _, err := logging.ParseLevel(l); err != nil {
			t.Errorf("log.level %s: %v", l, err)
		}
	}
}
