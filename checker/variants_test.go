package checker

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/spec"
)

// variantChecker is a shipped spec file on one run of the small
// configuration (testdata/configs/small.json), with the fault budget
// given.
func variantChecker(t *testing.T, file, run string, budget system.Budget) *Checker {
	t.Helper()
	path := "../testdata/variants/" + file
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := spec.Parse(path, data)
	if err != nil {
		t.Fatal(err)
	}
	cfgData, err := os.ReadFile("../testdata/configs/small.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := system.ParseConfig("small.json", cfgData)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Budget = budget
	return checkerFor(t, interpreted(t, s), cfg, run)
}

// The shipped variants of real bug shapes, each written with rows from a
// terminal state or a deferred step and nothing else changed, break the
// invariant their rows' why describes with the shortest trace below, on
// the small configuration's budget (duplicate, cancel and early timer,
// one each). With the fault their bug needs taken out of the budget, the
// same run is clean: what reacts late is the bug, nothing else.
func TestVariants_RealBugShapes(t *testing.T) {
	small := budgetOf(t, "duplicate=1", "cancel=1", "early_timer=1")
	prefix := []string{"route-prefill h=0 worker=0", "deliver-request h=0", "compute h=0", "route-decode h=0 worker=1", "reserve h=0"}
	decoded := append(slices.Clone(prefix), "transfer h=0", "decode-finish h=0")
	cases := []struct {
		name      string
		file, run string
		budget    system.Budget
		invariant string // "" for a clean run
		check     string
		trace     []string
	}{
		// A cancel that arrives after decode finished (the source still
		// waits for the reader's acknowledgement) finalizes again.
		{"late cancel", "late-cancel-finalizes-twice.json", "vllm", small, "ExactlyOnceRelease", "%s released twice",
			append(slices.Clone(decoded), "cancel h=0", "deliver-cancel h=0 side=destination")},
		{"no cancel", "late-cancel-finalizes-twice.json", "vllm", budgetOf(t, "duplicate=1", "early_timer=1"), "", "", nil},

		// The source gives up after decode finished (its lease expires
		// early, or the client cancels) and tells the destination,
		// whose finished request turns failed.
		{"late lease expiry", "late-peer-cancel-fails-done.json", "vllm", small, "AttemptIsolation", "a stale fact changed a role machine",
			append(slices.Clone(decoded), "timer h=0 timer=lease", "deliver h=0 to=destination msg=Cancelled")},
		{"late cancel of the source", "late-peer-cancel-fails-done.json", "vllm", budgetOf(t, "duplicate=1", "cancel=1"), "AttemptIsolation", "a stale fact changed a role machine",
			append(slices.Clone(decoded), "cancel h=0", "deliver-cancel h=0 side=source", "deliver h=0 to=destination msg=Cancelled")},
		{"the source never gives up", "late-peer-cancel-fails-done.json", "vllm", budgetOf(t, "duplicate=1"), "", "", nil},

		// Destination-first: the source's bootstrap deadline fires and it
		// reports its abort; the reservation it waited for arrives after.
		{"reservation after the abort", "prefill-after-early-outcome.json", "sglang", small, "ExactlyOnceRelease", "%s began after the %s reported its terminal outcome",
			[]string{"route-prefill h=0 worker=0", "deliver-request h=0", "route-decode h=0 worker=1", "reserve h=0", "timer h=0 timer=bootstrap", "deliver h=0 to=source msg=DestinationReserved"}},
		{"no early outcome", "prefill-after-early-outcome.json", "sglang", budgetOf(t, "duplicate=1"), "", "", nil},

		// Cancelled while pulling, the destination reports and queues
		// the free; the deferred step runs while the pull still writes.
		{"free before the reads stop", "deferred-free-during-pull.json", "vllm", small, "DestinationHeldWhileWritten", "reserved pages freed while their registration was valid and the transfer %s",
			append(slices.Clone(prefix), "cancel h=0", "deliver-cancel h=0 side=destination", "deferred h=0 side=destination")},
		{"no cancel while pulling", "deferred-free-during-pull.json", "vllm", budgetOf(t, "duplicate=1", "early_timer=1"), "", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.file+"/"+tc.name, func(t *testing.T) {
			c := variantChecker(t, tc.file, tc.run, tc.budget)
			r := c.checkRun(context.Background(), Limits{Liveness: true}, nil)
			if tc.invariant == "" {
				if r.Violation != nil || !r.Complete {
					t.Fatalf("want a complete, clean run; complete=%v, violation:\n%s", r.Complete, formatIf(c, r.Violation))
				}
				return
			}
			if r.Violation == nil {
				t.Fatalf("no violation in %d states", r.Stats.States)
			}
			ce := r.Violation
			var moves []string
			for _, st := range ce.Steps {
				moves = append(moves, st.Move.String())
			}
			if v := ce.Violation; v.Invariant != tc.invariant || v.Check != tc.check || !slices.Equal(moves, tc.trace) || !ce.Steps[len(ce.Steps)-1].Failed {
				t.Fatalf("want %s (%s) with the trace\n  %s\ngot:\n%s", tc.invariant, tc.check, strings.Join(tc.trace, "\n  "), c.formatCounterexample(ce))
			}
		})
	}
}

func formatIf(c *Checker, ce *Counterexample) string {
	if ce == nil {
		return "none"
	}
	return c.formatCounterexample(ce)
}
