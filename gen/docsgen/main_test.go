package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The committed reference pages equal what the registries render today:
// a fault, invariant, engine or scenario added without regenerating docs/
// fails here (run make generate).
func TestDocs_Fresh(t *testing.T) {
	pages, err := Render(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != 4 {
		t.Fatalf("%d pages rendered, want 4", len(pages))
	}
	for _, name := range sortedNames(pages) {
		got, err := os.ReadFile(filepath.Join("..", "..", "docs", name))
		if err != nil {
			t.Fatalf("%v (run make generate)", err)
		}
		if d := cmp.Diff(string(pages[name]), string(got)); d != "" {
			t.Errorf("docs/%s is stale or edited by hand (run make generate); -rendered +committed:\n%s", name, d)
		}
	}
}
