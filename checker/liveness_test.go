package checker

import (
	"context"
	"os"
	"testing"

	"github.com/handoffcheck/handoffcheck/spec"
)

// A liveness counterexample whose first trapped state is not on the cycle
// (here: the destination re-arms its reservation deadline instead of
// giving the reservation up, after the cancel that would end it was lost)
// still shows the path into the trap, the stem from the entry to the
// cycle, and a loop that replays: the state after the loop is the state
// the loop started from.
func TestLiveness_LoopReplaysWhenEntryIsOffTheCycle(t *testing.T) {
	file := "../testdata/variants/rearm-reservation.json"
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s, err := spec.Parse(file, data)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig("mutation.json", MutationConfigJSON())
	if err != nil {
		t.Fatal(err)
	}
	var run Run
	for _, r := range cfg.Runs {
		if r.Name == "sglang" {
			run = r
		}
	}
	c, err := New(interpreted(t, s), cfg, run)
	if err != nil {
		t.Fatal(err)
	}
	r := c.Explore(context.Background(), Limits{Liveness: true, Workers: 2}, nil)
	if r.Violation == nil || r.Violation.Violation.Invariant != "EventuallyDrained" {
		t.Fatalf("want an EventuallyDrained violation, got %+v", r.Violation)
	}
	ce := r.Violation
	text := c.FormatCounterexample(ce)
	if len(ce.Loop) == 0 {
		t.Fatalf("the loop was dropped:\n%s", text)
	}
	entered := -1
	for i, st := range ce.Steps {
		if st.Failed {
			entered = i
		}
	}
	if entered < 0 || entered == len(ce.Steps)-1 {
		t.Fatalf("want a trap entered before the cycle (a stem), entered at step %d of %d:\n%s", entered+1, len(ce.Steps), text)
	}
	// Replay the whole counterexample through the session, as 'replay'
	// does: every step must be enabled, and the loop must close.
	sess := c.NewSession()
	var atLoop Key
	for i, st := range append(append([]TraceStep(nil), ce.Steps...), ce.Loop...) {
		if _, err := sess.Apply(st.Move); err != nil {
			t.Fatalf("step %d (%s) does not replay: %v\n%s", i+1, st.Move, err, text)
		}
		if i == len(ce.Steps)-1 {
			atLoop = c.Key(sess.State())
		}
	}
	if got := c.Key(sess.State()); got != atLoop {
		t.Fatalf("the loop does not return to the state after step %d:\n%s", len(ce.Steps), text)
	}
}
