package cli

import "runtime/debug"

// Version is the version --version prints. It is empty unless set at
// link time with
//
//	-ldflags "-X github.com/ethergm/ethergm/internal/cli.Version=v1.2.3"
//
// (the Makefile's install target does); empty means ResolvedVersion finds
// one in the build information.
var Version string

// ResolvedVersion returns Version if set, else the module version of the
// build (go install ...@v1.2.3), else the VCS revision it was built from
// (12 hex digits, "+dirty" if the tree had changes), else "devel".
func ResolvedVersion() string {
	if Version != "" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return versionFrom(bi)
}

func versionFrom(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}
