package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestLinkTimeValuesWinOverVCS(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Version: "v9.9.9"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-01-01T00:00:00Z"}}}
	got := fill(Info{Version: "1.2.3", Commit: "linked", BuildTime: "then"}, bi)
	if got.Version != "1.2.3" || got.Commit != "linked" || got.BuildTime != "then" {
		t.Fatalf("link-time values lost: %+v", got)
	}
}

func TestVCSSettingsFillGaps(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Version: "v9.9.9"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-01-01T00:00:00Z"}}}
	got := fill(Info{}, bi)
	if got.Version != "v9.9.9" || got.Commit != "abc123" || got.BuildTime != "2026-01-01T00:00:00Z" {
		t.Fatalf("VCS settings not used: %+v", got)
	}
}

func TestDefaultsWithoutBuildInfo(t *testing.T) {
	got := fill(Info{}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}})
	if got.Version != "dev" || got.Commit != "unknown" || got.BuildTime != "unknown" {
		t.Fatalf("defaults: %+v", got)
	}
	if got := fill(Info{}, nil); got.Version != "dev" {
		t.Fatalf("nil build info: %+v", got)
	}
}

func TestGetNamesTheToolchain(t *testing.T) {
	if got := Get(); got.GoVersion != runtime.Version() || got.Version == "" || got.Commit == "" {
		t.Fatalf("Get: %+v", got)
	}
}
