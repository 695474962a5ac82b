package faults

// Fuzzing coverage: `make fuzz` (scripts/fuzz.sh) runs every FuzzXxx of
// every package, so a parser is fuzzed exactly when some fuzz target of
// its package reaches it. This test finds the library's parsers (functions
// named parse*/Parse*/decode*/Decode* in dat/, verbs/, rdsoverdat/ and
// internal/perf, which read what peers send; cmd/ parses flags) and lists
// any that no fuzz target of its package names. Unless the parser is in
// unfuzzedParsers with the reason, that is an error in the long run
// (`make faults`) and a logged warning in the default run, so that a
// parser landing without its fuzzer does not break everyone's `make test`
// mid-flight.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// unfuzzedParsers are known parsers without a fuzz target of their own,
// keyed "dir.func", each with why that is acceptable or who owns the gap.
var unfuzzedParsers = map[string]string{
	"verbs/mem.parseAddr":       "parses the caller's own address string, never remote input",
	"rdsoverdat.parseRDMACmsgs": "parses the application's own control messages, never remote input",
}

// parserRoots are the directories whose parsers read remote input.
var parserRoots = []string{"dat", "verbs", "rdsoverdat", "internal/perf"}

var parserName = regexp.MustCompile(`^([pP]arse|[dD]ecode)[A-Z0-9_]?`)

func TestFuzzCoverage(t *testing.T) {
	root := moduleRoot(t)
	type pkg struct {
		parsers []string
		fuzzSrc strings.Builder // the text of test files that declare a Fuzz target
	}
	pkgs := map[string]*pkg{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		inRoots := false
		for _, r := range parserRoots {
			inRoots = inRoots || strings.HasPrefix(rel, r+"/")
		}
		if !inRoots {
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		p := pkgs[dir]
		if p == nil {
			p = &pkg{}
			pkgs[dir] = p
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, "_test.go") {
			if strings.Contains(string(src), "\nfunc Fuzz") {
				p.fuzzSrc.Write(src)
			}
			return nil
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && parserName.MatchString(fd.Name.Name) {
				p.parsers = append(p.parsers, fd.Name.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for d := range pkgs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	fuzzed, total := 0, 0
	for _, d := range dirs {
		p := pkgs[d]
		for _, fn := range p.parsers {
			total++
			key := strings.TrimPrefix(d, "./") + "." + fn
			if d == "." {
				key = fn
			}
			if regexp.MustCompile(`\b` + fn + `\(`).MatchString(p.fuzzSrc.String()) {
				fuzzed++
				continue
			}
			if why, ok := unfuzzedParsers[key]; ok {
				t.Logf("not fuzzed: %-36s %s", key, why)
				continue
			}
			report := t.Logf
			if long() {
				report = t.Errorf
			}
			report("parser %s has no fuzz target in its package (add a FuzzXxx seeded from the encoder, or list it in unfuzzedParsers with the reason)", key)
		}
	}
	t.Logf("COUNTS fuzz coverage: %d parsers, %d named by a fuzz target of their package", total, fuzzed)
}

// moduleRoot is the directory holding go.mod, above this package.
func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found")
		}
		dir = parent
	}
}
