// Package version says which build of ticketbridge runs: the version and
// the commit a release build sets at link time, or what the module's build
// information holds, and the Go version. It is a leaf: it imports nothing
// of the module, so every part of the daemon may print or export it.
package version

import (
	"runtime"
	"runtime/debug"
)

// version and commit are set at link time by release builds:
//
//	go build -trimpath -ldflags "-X github.com/ticketbridge/ticketbridge/internal/version.version=1.2.3 -X github.com/ticketbridge/ticketbridge/internal/version.commit=abc1234" ./cmd/ticketbridge
//
// Left empty, they are read from the module's build information.
var (
	version string
	commit  string
)

// Get returns the version, the commit and the Go version of the running
// build: "devel" and "unknown" when neither the linker nor the build
// information says.
func Get() (v, c, goVersion string) {
	v, c = version, commit
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		if c == "" {
			for _, s := range info.Settings {
				if s.Key == "vcs.revision" {
					c = s.Value
				}
			}
		}
	}
	if v == "" {
		v = "devel"
	}
	if c == "" {
		c = "unknown"
	}
	return v, c, runtime.Version()
}
