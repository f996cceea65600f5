package cmdutil

import (
	"runtime/debug"
	"testing"
)

func TestFillFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{
		Main: debug.Module{Version: "v1.2.3"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc123"},
			{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	var v VersionInfo
	fillFromBuildInfo(&v, bi, false)
	if v.Version != "v1.2.3" || v.Commit != "abc123-dirty" || v.Date != "2026-01-02T03:04:05Z" {
		t.Errorf("from build info: %+v", v)
	}
	// Link-time stamps win over build info.
	v = VersionInfo{Version: "v9", Commit: "stamped", Date: "d"}
	fillFromBuildInfo(&v, bi, true)
	if v.Version != "v9" || v.Commit != "stamped" || v.Date != "d" {
		t.Errorf("stamped: %+v", v)
	}
	// A build from a checkout says "(devel)": not a version.
	v = VersionInfo{}
	fillFromBuildInfo(&v, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, false)
	if v.Version != "" {
		t.Errorf("(devel) taken as version: %+v", v)
	}
}
