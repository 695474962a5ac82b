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

// A transport file uses the core's internal API (package xport) only:
// the files of each transport type-check on their own, without the
// core's files, so none of them names anything of the core.
func TestTransportsUseXportOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the transports' imports from source")
	}
	imp := importer.ForCompiler(token.NewFileSet(), "source", nil)
	for _, prefix := range []string{"tcp", "dat"} {
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
