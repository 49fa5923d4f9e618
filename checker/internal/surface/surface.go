// Package surface counts what a package exports, for the tests that hold
// each package of the checker to a ceiling of exported names: what a
// package offers should be what its users need.
package surface

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
)

// Exported lists the exported package-level names and the exported
// methods of exported types (Type.Method) of the non-test Go files in dir.
func Exported(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var names []string
	for _, de := range entries {
		n := de.Name()
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		names = append(names, exportedOf(f)...)
	}
	return names, nil
}

// exportedOf lists a file's exported package-level names and methods.
func exportedOf(f *ast.File) []string {
	var names []string
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
			// A method of an unexported type is no name a user can reach
			// through the package's API (Go's api tool leaves such methods
			// out too): an interface it satisfies is what users name.
			if id, ok := recv.(*ast.Ident); ok && id.IsExported() {
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
	return names
}
