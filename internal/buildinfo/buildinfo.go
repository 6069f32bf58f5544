// Package buildinfo reports what binary is running: the release version, the VCS commit and time
// it was built from, and the Go toolchain.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// These are set at link time by the Makefile
// (-ldflags "-X github.com/wavehouse/wavehouse/internal/buildinfo.Version=…"). When they are empty
// the values the Go toolchain embedded from the VCS are used instead.
var (
	Version   = ""
	Commit    = ""
	BuildTime = ""
)

// Info is the build description served at /version and printed by `wavehouse version`.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	BuildTime string `json:"build_time"`
	GoVersion string `json:"go_version"`
}

// Get returns the build description, filling gaps from the binary's embedded build settings.
func Get() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return fill(Info{Version: Version, Commit: Commit, BuildTime: BuildTime, GoVersion: runtime.Version()}, bi)
}

// fill completes info from the embedded build settings bi (nil when the binary has none):
// link-time values win, then the VCS settings, then "dev" and "unknown".
func fill(info Info, bi *debug.BuildInfo) Info {
	if bi != nil {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if info.Commit == "" {
					info.Commit = s.Value
				}
			case "vcs.time":
				if info.BuildTime == "" {
					info.BuildTime = s.Value
				}
			}
		}
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
	}
	if info.Version == "" {
		info.Version = "dev"
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	if info.BuildTime == "" {
		info.BuildTime = "unknown"
	}
	return info
}
