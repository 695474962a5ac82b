package version

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// String is the line --version prints for the tool named tool.
func String(tool string) string {
	bi, _ := debug.ReadBuildInfo() // nil when the binary has none
	return format(tool, bi, runtime.GOOS+"/"+runtime.GOARCH)
}

// Print writes String(tool) and a newline to w.
func Print(w io.Writer, tool string) {
	fmt.Fprintln(w, String(tool))
}

// Requested reports whether args, a tool's arguments without its name,
// ask for the version: "--version" or "-version" anywhere before a "--"
// that ends the options. Tools look before they parse, so that the
// answer does not depend on the other arguments being valid.
func Requested(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--version", "-version":
			return true
		}
	}
	return false
}

// format builds the version line from bi, which is nil when the binary
// carries no build information.
//
// The line reads "TOOL MODULE VERSION, commit REV[ (modified)], TIME,
// GOVERSION PLATFORM"; the parts the build did not record are left out.
func format(tool string, bi *debug.BuildInfo, platform string) string {
	if bi == nil {
		return fmt.Sprintf("%s (no build information) %s %s", tool, runtime.Version(), platform)
	}
	mod, ver := bi.Main.Path, bi.Main.Version
	if mod == "" {
		mod = "github.com/godapl/godapl"
	}
	if ver == "" {
		ver = "(devel)"
	}
	var rev, when string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", tool, mod, ver)
	if rev != "" {
		fmt.Fprintf(&b, ", commit %s", rev)
		if modified {
			b.WriteString(" (modified)")
		}
	}
	if when != "" {
		fmt.Fprintf(&b, ", %s", when)
	}
	goVer := bi.GoVersion
	if goVer == "" {
		goVer = runtime.Version()
	}
	fmt.Fprintf(&b, ", %s %s", goVer, platform)
	return b.String()
}
