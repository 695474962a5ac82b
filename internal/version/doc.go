// Package version answers every godapl tool's --version: which module
// version and which commit the binary was built from, whether the work
// tree had uncommitted changes, and which Go built it. It reads what the
// go command records in the binary (runtime/debug.ReadBuildInfo), so a
// release build (go install ...@vX.Y.Z) names its tag and a build from a
// clone names its commit, with nothing to stamp by hand.
//
// It sits beside the tools in cmd/ and depends on nothing of godapl.
package version
