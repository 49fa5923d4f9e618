package checker

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/spec"
)

// Helpers the search's tests share with the tests of the composed system
// (checker/system), which keep their own copies.

// shippedVariants is every spec file in testdata/variants that parses, by
// file name (broken-vocabulary.json is refused on purpose).
func shippedVariants(t *testing.T) map[string]*spec.Spec {
	t.Helper()
	files, err := filepath.Glob("../testdata/variants/*.json")
	if err != nil || len(files) == 0 {
		t.Fatal("no variants", err)
	}
	specs := map[string]*spec.Spec{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if s, err := spec.Parse(f, data); err == nil {
			specs[filepath.Base(f)] = s
		}
	}
	return specs
}

// porSample is the states of a breadth-first search of a run, up to n.
func porSample(c *Checker, n int) []system.State {
	s0 := c.Initial()
	seen := map[system.Key]bool{c.Key(&s0): true}
	out := []system.State{s0}
	for i := 0; i < len(out) && len(out) < n; i++ {
		for _, m := range c.MovesInto(&out[i], nil) {
			t := out[i]
			if _, _, err := c.Step(&t, m, nil); err != nil {
				continue
			}
			if k := c.Key(&t); !seen[k] {
				seen[k] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// faultMove is the move kind of the fault kind a configuration names by
// its key, as a trace file names it: tests name fault kinds as
// configurations, plans and trace files do.
func faultMove(t testing.TB, name string) system.MoveKind {
	t.Helper()
	f, known := system.ParseFault(name)
	if !known || f.Move() == 0 {
		t.Fatalf("faultMove: %q is not a fault kind with a move of its own", name)
	}
	return f.Move()
}

// budgetOf is the budget a configuration's "faults" object names, written
// kind=n: early_timer and reorder are spent by protocol moves, and only
// the composed system names them in code.
func budgetOf(t interface {
	Helper()
	Fatalf(string, ...any)
}, kinds ...string) system.Budget {
	t.Helper()
	var b system.Budget
	for _, kv := range kinds {
		name, n, ok := strings.Cut(kv, "=")
		f, known := system.ParseFault(name)
		v, err := strconv.Atoi(n)
		if !ok || !known || err != nil || v < 0 || v > system.MaxBudget {
			t.Fatalf("budgetOf: %q is not kind=n of a fault kind", kv)
		}
		b[f] = uint8(v)
	}
	return b
}

// session steps one run by hand from the checker's Initial state, as the
// scenario files and the shapes tests do.
type session struct {
	c *Checker
	s system.State
}

func newSession(c *Checker) *session { return &session{c: c, s: c.Initial()} }

func (s *session) Apply(m system.Move) (StepResult, error) { return s.c.Apply(&s.s, m) }
func (s *session) State() *system.State                    { return &s.s }
func (s *session) FormatStep(r StepResult) []string        { return s.c.FormatStep(r) }
func (s *session) checker() *Checker                       { return s.c }
