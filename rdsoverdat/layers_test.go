package rdsoverdat

import (
	"go/build"
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
