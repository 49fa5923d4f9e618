package checker

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/handoffcheck/handoffcheck/spec"
)

// TestMutate_Score breaks the built-in tables in every way the operators
// allow and checks each mutant against the mutation configuration. The
// summary (score, per operator, per invariant, and every survivor) is a
// golden file: a survivor that appears is a weakening of what the checker
// sees and must be explained; one that disappears is progress.
// Rewrite with: go test ./checker -run TestMutate_Score -rewrite
func TestMutate_Score(t *testing.T) {
	longOnly(t, "checks every mutant of the built-in tables, minutes on every core")
	if testing.Short() {
		t.Skip("checks hundreds of mutants")
	}
	mutants := spec.Mutants(spec.Default(), spec.Operators)
	// Every core: each mutant is checked on its own, in a result of its
	// own, kept for the sample of every eighth (testcost_test.go).
	results := mutationResultsOf(t, mutants)
	got := mutationSummary(results)
	golden := filepath.Join("..", "testdata", "goldens", "mutation.txt")
	if f := flag.Lookup("rewrite"); f != nil && f.Value.String() == "true" {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("mutation summary changed (-golden +now):\n%s", diff)
	}
	// Every mutant is decided: none stopped at the bound.
	for _, r := range results {
		if r.Bounded {
			t.Errorf("%s: undecided", r.Mutant.Name)
		}
	}
}

// The mutants of a spec validate, carry one change each, and are made in a
// fixed order.
func TestMutants_Deterministic(t *testing.T) {
	a := spec.Mutants(spec.Default(), spec.Operators)
	b := spec.Mutants(spec.Default(), spec.Operators)
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("%d and %d mutants", len(a), len(b))
	}
	for i := range a {
		if a[i].Name != b[i].Name {
			t.Fatalf("mutant %d: %q then %q", i, a[i].Name, b[i].Name)
		}
		if err := a[i].Spec.Validate(); err != nil {
			t.Fatalf("%s does not validate: %v", a[i].Name, err)
		}
	}
}
