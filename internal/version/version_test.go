package version

import (
	"bytes"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFormat(t *testing.T) {
	clone := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: "github.com/godapl/godapl", Version: "v0.0.0-20261127090000-0123456789ab+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "-compiler", Value: "gc"},
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-11-27T09:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	release := &debug.BuildInfo{
		GoVersion: "go1.26.1",
		Main:      debug.Module{Path: "github.com/godapl/godapl", Version: "v1.2.3"},
	}
	clean := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: "github.com/godapl/godapl", Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "fedcba9876543210fedcba9876543210fedcba98"},
			{Key: "vcs.modified", Value: "false"},
		},
	}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"clone", clone, "rds-cat github.com/godapl/godapl v0.0.0-20261127090000-0123456789ab+dirty, " +
			"commit 0123456789abcdef0123456789abcdef01234567 (modified), 2026-11-27T09:00:00Z, go1.26.0 linux/amd64"},
		{"release", release, "rds-cat github.com/godapl/godapl v1.2.3, go1.26.1 linux/amd64"},
		{"clean", clean, "rds-cat github.com/godapl/godapl (devel), commit fedcba9876543210fedcba9876543210fedcba98, go1.26.0 linux/amd64"},
		{"empty", &debug.BuildInfo{}, "rds-cat github.com/godapl/godapl (devel), " + runtime.Version() + " linux/amd64"},
		{"none", nil, "rds-cat (no build information) " + runtime.Version() + " linux/amd64"},
	} {
		if got := format("rds-cat", tc.bi, "linux/amd64"); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

func TestRequested(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--version"}, true},
		{[]string{"-version"}, true},
		{[]string{"-s", "10.0.0.1", "--version"}, true},
		{[]string{"-v"}, false},
		{[]string{"--versions"}, false},
		{[]string{"--", "--version"}, false},
		{[]string{"-T", "S"}, false},
	} {
		if got := Requested(tc.args); got != tc.want {
			t.Errorf("Requested(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// TestPrintThisBinary checks the line of the running test binary: it
// names the tool and the Go that built it, whatever else was recorded.
func TestPrintThisBinary(t *testing.T) {
	var b bytes.Buffer
	Print(&b, "dattest")
	line := b.String()
	if !strings.HasPrefix(line, "dattest ") || !strings.HasSuffix(line, "\n") || strings.Count(line, "\n") != 1 {
		t.Fatalf("Print wrote %q: want one line starting with the tool's name", line)
	}
	if !strings.Contains(line, runtime.Version()) || !strings.Contains(line, runtime.GOOS+"/"+runtime.GOARCH) {
		t.Fatalf("Print wrote %q: want the Go version and platform", line)
	}
}
