package surface

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Exported counts package-level names and methods of exported types,
// leaves out unexported names, the methods of unexported types and test
// files, and says when it cannot read.
func TestExported(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\ntype T struct{}\n\nfunc (T) M()  {}\nfunc (*T) N() {}\nfunc (T) m()  {}\n\ntype u int\n\nfunc (u) U() {}\n\nconst A, b = 1, 2\n\nvar V int\n\nfunc F() {}\nfunc f() {}\n"
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p_test.go"), []byte("package p\n\nfunc TestX() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Exported(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"T", "T.M", "T.N", "A", "V", "F"}
	if !slices.Equal(got, want) {
		t.Errorf("Exported = %v, want %v", got, want)
	}
	if _, err := Exported(filepath.Join(dir, "nonesuch")); err == nil {
		t.Error("a directory that does not exist gave no error")
	}
}
