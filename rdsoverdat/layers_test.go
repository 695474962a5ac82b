package rdsoverdat

import (
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"
	"testing"
)

// RDS reaches RDMA through the DAT API only (DATConfig names a registry
// and an IA): no file of the package imports a verbs package.
func TestNoVerbsImport(t *testing.T) {
	p, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range p.Imports {
		if imp == "github.com/godapl/godapl/verbs" || strings.HasPrefix(imp, "github.com/godapl/godapl/verbs/") {
			t.Errorf("rdsoverdat imports %s", imp)
		}
	}
}

// A transport reaches the core through package xport only. The
// transports in packages of their own (internal/<name>) cannot name the
// core's unexported identifiers, so what is left to check is their
// imports: xport, the wire codecs, the DAT API and system packages. The
// files of a transport still in this package type-check on their own,
// without the core's files, so none of them names anything of the core.
func TestTransportsUseXportOnly(t *testing.T) {
	allowed := map[string]bool{
		"github.com/godapl/godapl/rdsoverdat/internal/xport": true,
		"github.com/godapl/godapl/rdsoverdat/wire":           true,
		"github.com/godapl/godapl/dat":                       true,
		"golang.org/x/sys/unix":                              true,
	}
	for _, dir := range []string{"internal/tcp"} {
		p, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range p.Imports {
			// A standard library path has no dot in its first element.
			std := !strings.Contains(strings.Split(imp, "/")[0], ".")
			if !std && !allowed[imp] {
				t.Errorf("%s imports %s", dir, imp)
			}
		}
	}
	if testing.Short() {
		t.Skip("type-checks the in-package transports' imports from source")
	}
	imp := importer.ForCompiler(token.NewFileSet(), "source", nil)
	for _, prefix := range []string{"dat"} {
		names, err := filepath.Glob(prefix + "*.go")
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		var files []*ast.File
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		if len(files) == 0 {
			t.Fatalf("no %s*.go files", prefix)
		}
		conf := types.Config{Importer: imp, Error: func(err error) { t.Errorf("%s transport: %v", prefix, err) }}
		conf.Check("rdsoverdat", fset, files, nil)
	}
}
