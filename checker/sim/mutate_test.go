package sim

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/spec"
)

// longEnv is set by make test-long (which CI runs as its own step): the
// tests that take long on two busy cores run only then, so that make
// test stays within a few minutes.
const longEnv = "HANDOFFCHECK_LONG"

// longOnly skips t unless make test-long runs it.
func longOnly(t *testing.T, what string) {
	t.Helper()
	if os.Getenv(longEnv) == "" {
		t.Skipf("%s: make test-long runs it (%s=1; CI runs it too)", what, longEnv)
	}
}

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/goldens/mutation-timed.txt instead of comparing")

// TestMutateTimed_Survivors runs the mutants the untimed checker lets
// survive (testdata/goldens/mutation.txt, pinned by the checker's
// TestMutate_Score) through the timed scenarios and compares which the
// clock kills, and with what, to testdata/goldens/mutation-timed.txt.
// Every survivor through every timed scenario is seconds of CPU on every
// core: make test-long runs it (and CI), beside TestMutate_Score, whose
// golden names the survivors.
// Rewrite with: HANDOFFCHECK_LONG=1 go test ./checker/sim -run TestMutateTimed_Survivors -rewrite
func TestMutateTimed_Survivors(t *testing.T) {
	longOnly(t, "every untimed survivor through every timed scenario, seconds of CPU on every core")
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "goldens", "mutation.txt"))
	if err != nil {
		t.Fatal(err)
	}
	_, list, ok := strings.Cut(string(data), "equivalent change or a gap in what is checked:\n")
	if !ok {
		t.Fatal("mutation.txt lists no survivors")
	}
	want := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(list), "\n") {
		want[strings.TrimSpace(l)] = true
	}
	var ms []spec.Mutant
	for _, m := range spec.Mutants(spec.Default(), spec.Operators) {
		if want[m.Name] {
			ms = append(ms, m)
		}
	}
	if len(ms) != len(want) {
		t.Fatalf("%d survivors named, %d found among the mutants", len(want), len(ms))
	}
	res, err := MutateTimed(context.Background(), ms, 2)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	killed := 0
	for _, r := range res {
		if r.Killed {
			killed++
		}
	}
	fmt.Fprintf(&b, "on the clock: %d of %d untimed survivors killed\n", killed, len(res))
	for _, r := range res {
		if r.Killed {
			fmt.Fprintf(&b, "killed %s: %s, %s, %s\n", r.Mutant.Name, r.Scenario, r.Policy, r.Invariant)
			// With -v: why, for whoever judges a kill.
			t.Logf("%s: %s", r.Mutant.Name, r.Detail)
		}
	}
	reasons := 0
	for _, r := range res {
		if !r.Killed {
			fmt.Fprintf(&b, "survives %s\n", r.Mutant.Name)
			if Equivalent[r.Mutant.Name] == "" {
				t.Errorf("%s survives the clock, and Equivalent gives no reason why", r.Mutant.Name)
			}
			reasons++
		}
	}
	if reasons != len(Equivalent) {
		for name := range Equivalent {
			if !slices.ContainsFunc(res, func(r TimedResult) bool { return !r.Killed && r.Mutant.Name == name }) {
				t.Errorf("Equivalent gives a reason for %s, which does not survive the clock", name)
			}
		}
	}
	golden := filepath.Join("..", "..", "testdata", "goldens", "mutation-timed.txt")
	if *rewrite {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(old) != b.String() {
		t.Fatalf("the clock kills other survivors than %s pins (rewrite with -rewrite and read the diff):\n%s", golden, b.String())
	}
}
