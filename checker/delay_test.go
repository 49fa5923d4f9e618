package checker

import (
	"context"
	"testing"

	"github.com/handoffcheck/handoffcheck/spec"
)

// The delay fault is offered only just before a move that sends a command
// the core would apply at once. That loses nothing: on every shipped
// variant and the built-in tables, on delay.json, the reduced search and
// the search that offers the delay wherever a core keeps up give the same
// verdict, the reduced one from no more states.
func TestDelay_ReductionKeepsVerdicts(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/delay.json")
	specs := shippedVariants(t)
	specs["built-in"] = spec.Default()
	reduced, anywhere := 0, 0
	caught := 0
	for name, s := range specs {
		p := interpreted(t, s)
		for _, run := range cfg.Runs {
			explore := func(everywhere bool) *Result {
				c := checkerFor(t, p, cfg, run.Name)
				c.DelayAnywhere = everywhere
				r := c.checkRun(context.Background(), Limits{Workers: 1}, nil)
				if !r.Complete && r.Violation == nil {
					t.Fatalf("%s %s: incomplete", name, run.Name)
				}
				return r
			}
			a, b := explore(false), explore(true)
			va, vb := "", ""
			if a.Violation != nil {
				va = a.Violation.Violation.Invariant
			}
			if b.Violation != nil {
				vb = b.Violation.Violation.Invariant
			}
			if va != vb {
				t.Errorf("%s %s: reduced delay finds %q, unreduced %q", name, run.Name, va, vb)
			}
			if va == "" {
				if a.Stats.States > b.Stats.States {
					t.Errorf("%s %s: reduced delay explores %d states, unreduced %d", name, run.Name, a.Stats.States, b.Stats.States)
				}
				reduced += a.Stats.States
				anywhere += b.Stats.States
			} else {
				caught++
			}
		}
	}
	if caught == 0 || reduced == 0 {
		t.Fatalf("nothing compared: %d violations, %d states", caught, reduced)
	}
	if anywhere <= reduced {
		t.Fatalf("offering the delay anywhere explores %d states, the reduced search %d: the comparison compared nothing", anywhere, reduced)
	}
	t.Logf("passing runs: %d states with the delay reduced, %d offered anywhere; %d runs violated alike", reduced, anywhere, caught)
}
