package checker

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// maxExported is how many names the package exports: package-level names
// and methods. Names nothing outside the package uses are unexported, so
// that what the package offers is what its users need; a change that
// must export more raises this with the reason in its message.
const maxExported = 69

// exportedNames lists the exported package-level names and methods
// (Type.Method) of the package's non-test files.
func exportedNames(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var names []string
	for _, de := range entries {
		n := de.Name()
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					names = append(names, d.Name.Name)
					continue
				}
				recv := d.Recv.List[0].Type
				if s, ok := recv.(*ast.StarExpr); ok {
					recv = s.X
				}
				if id, ok := recv.(*ast.Ident); ok {
					names = append(names, id.Name+"."+d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, id := range s.Names {
							if id.IsExported() {
								names = append(names, id.Name)
							}
						}
					}
				}
			}
		}
	}
	return names
}

// The package exports no more than maxExported names (241 before the
// names nothing outside it used were unexported, 200 before the composed
// system moved to checker/system).
func TestSurface_ExportsAtMostTheCeiling(t *testing.T) {
	names := exportedNames(t)
	if len(names) > maxExported {
		t.Errorf("checker exports %d names, more than %d", len(names), maxExported)
	}
	t.Logf("checker exports %d names", len(names))
}
