package cluster

import (
	"slices"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// A fault aimed at a phase is held until the side named logs the fact it
// waits for, then marked (on that side, for a kind whose move names one)
// and struck where the request next offers it; another side's fact, or
// another fact, sets nothing.
func TestMarks_AimedAtAPhase(t *testing.T) {
	for _, tc := range []struct {
		kind string
		k    system.Fault
	}{{"cancel", system.Cancel}, {"abort", system.Abort}, {"delay", system.Delay}, {"evict", system.Evict}} {
		var m Marks
		f := Fault{File: "plan.jsonl", Line: 2, Kind: tc.kind, Request: 0, Worker: -1, Side: "destination", After: "outcome_reported"}
		if err := m.Mark(&f); err != nil {
			t.Fatalf("%s: %v", tc.kind, err)
		}
		if !m.AwaitsPhase() || m.Left() != 1 || m.Has(tc.k, model.DestinationSide) {
			t.Fatalf("%s: before the phase: awaits %v, %d left, marked %v", tc.kind, m.AwaitsPhase(), m.Left(), m.Has(tc.k, model.DestinationSide))
		}
		if got := m.Logged(model.SourceSide, "outcome_reported"); got != nil {
			t.Fatalf("%s: the source's fact set %v", tc.kind, got)
		}
		if got := m.Logged(model.DestinationSide, "reserved"); got != nil {
			t.Fatalf("%s: another fact set %v", tc.kind, got)
		}
		if got := m.Logged(model.DestinationSide, "outcome_reported"); !slices.Equal(got, []system.Fault{tc.k}) {
			t.Fatalf("%s: the phase set %v", tc.kind, got)
		}
		if m.AwaitsPhase() || m.Left() != 1 || !m.Has(tc.k, model.DestinationSide) {
			t.Fatalf("%s: after the phase: awaits %v, %d left, marked %v", tc.kind, m.AwaitsPhase(), m.Left(), m.Has(tc.k, model.DestinationSide))
		}
	}
	// A kind that is not struck where offered takes no phase of this
	// form: a restart's is RestartAfter.
	var m Marks
	if err := m.Mark(&Fault{File: "plan.jsonl", Line: 2, Kind: "restart", Request: 0, Worker: -1, Side: "source", After: "pinned"}); err != nil || m.RestartAfter[model.SourceSide] != "pinned" || m.AwaitsPhase() {
		t.Fatalf("a restart at a phase: %v, %+v", err, m)
	}
}
