package commitmsg

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
}

func hookPath(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../../scripts/commit-msg")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// check runs the hook on msg and returns its exit code and stderr.
func check(t *testing.T, msg string) (int, string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "COMMIT_EDITMSG")
	if err := os.WriteFile(f, []byte(msg), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", hookPath(t), f).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	}
	t.Fatalf("run hook: %v", err)
	return 0, ""
}

var long = strings.Repeat("word ", 15) // 75 characters

func TestHook(t *testing.T) {
	need(t, "bash")
	for _, tc := range []struct {
		name, msg string
		ok        bool
		why       string // part of the complaint when !ok
	}{
		{"subject only", "rdsoverdat: wake blocked senders\n", true, ""},
		{"subject and body", "dat/ep: refuse a post past the queue depth\n\nThe queue would wrap.\n", true, ""},
		{"area with space", "dat/internal/core tests: fill the queues\n", true, ""},
		{"72 characters", "docs: " + strings.Repeat("x", 66) + "\n", true, ""},
		{"72 characters not bytes", "docs: " + strings.Repeat("é", 66) + "\n", true, ""},
		{"73 characters", "docs: " + strings.Repeat("x", 67) + "\n", false, "subject is 73 characters"},
		{"no area", "fix the thing\n", false, "area: summary"},
		{"area without summary", "docs:\n", false, "area: summary"},
		{"merge", "Merge branch 'docs'\n", true, ""},
		{"revert", "Revert \"docs: x\"\n", true, ""},
		{"fixup", "fixup! docs: x\n", true, ""},
		{"no blank line", "docs: x\nbody\n", false, "line 2 must be blank"},
		{"long body line", "docs: x\n\n" + long + "\n", false, "line 3 is 75 characters"},
		{"indented command", "docs: x\n\n  " + long + "\n", true, ""},
		{"tab-indented table", "docs: x\n\n\t" + long + "\n", true, ""},
		{"quote", "docs: x\n\n> " + long + "\n", true, ""},
		{"url", "docs: x\n\nhttps://example.org/" + strings.Repeat("a", 80) + "\n", true, ""},
		{"labelled url", "docs: x\n\n[1]: https://example.org/" + strings.Repeat("a", 80) + "\n", true, ""},
		{"url in prose", "docs: x\n\nsee https://example.org/" + strings.Repeat("a", 60) + " and more\n", false, "line 3"},
		{"comments ignored", "docs: x\n\n# " + long + "\n", true, ""},
		{"scissors", "docs: x\n\n# ------------------------ >8 ------------------------\n" + long + "\n", true, ""},
		{"trailing blank lines", "docs: x\n\n\n\n", true, ""},
		{"crlf", "docs: x\r\n\r\nbody\r\n", true, ""},
		{"two problems", strings.Repeat("y", 80) + "\nbody\n", false, "line 2 must be blank"},
	} {
		code, out := check(t, tc.msg)
		if tc.ok && code != 0 {
			t.Errorf("%s: rejected (exit %d):\n%s", tc.name, code, out)
		}
		if !tc.ok && (code != 1 || !strings.Contains(out, tc.why)) {
			t.Errorf("%s: exit %d, want 1 with %q:\n%s", tc.name, code, tc.why, out)
		}
	}
}

// TestMakeHooks installs the hook with `make hooks` into a scratch
// repository and commits through it.
func TestMakeHooks(t *testing.T) {
	need(t, "bash", "git", "make")
	dir := t.TempDir()
	git := func(args ...string) error {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return errors.New(string(out))
		}
		return nil
	}
	if err := git("init", "-q"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"Makefile", "scripts/commit-msg"} {
		b, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mk := exec.Command("make", "hooks")
	mk.Dir = dir
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make hooks: %v\n%s", err, out)
	}
	if st, err := os.Stat(filepath.Join(dir, ".git/hooks/commit-msg")); err != nil || st.Mode()&0o100 == 0 {
		t.Fatalf("hook not installed executable: %v", err)
	}
	if err := git("add", "-A"); err != nil {
		t.Fatal(err)
	}
	if err := git("commit", "-q", "-m", "build: add the Makefile, and a subject that runs on well past the limit"+" of 72"); err == nil ||
		!strings.Contains(err.Error(), "subject is") {
		t.Fatalf("a bad subject was committed (%v)", err)
	}
	if err := git("rev-parse", "-q", "--verify", "HEAD"); err == nil {
		t.Fatal("HEAD exists after a rejected commit")
	}
	if err := git("commit", "-q", "-m", "build: add the Makefile", "-m", "It installs the hook."); err != nil {
		t.Fatalf("a good message was rejected: %v", err)
	}
}
