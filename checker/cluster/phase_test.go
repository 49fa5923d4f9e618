package cluster

import (
	"slices"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/internal/steps"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// A fault aimed at a phase is held until the side named logs the fact it
// waits for, then marked (on that side, for a kind whose move names one)
// and struck where the request next offers it; another side's fact, or
// another fact, sets nothing.
func TestMarks_AimedAtAPhase(t *testing.T) {
	for _, kind := range []string{"cancel", "abort", "delay", "evict"} {
		tc := struct {
			kind string
			k    system.Fault
		}{kind, steps.Fault(t, kind)}
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

// Faults one phase sets strike in the plan's order, whatever order the
// world offers their moves in: a delay planned before an abort at the
// same phase strikes first (it slows the command the abort sends), and
// the abort waits for it; the drivers hand the marks on in that order.
func TestMarks_OnePhaseStrikesInThePlansOrder(t *testing.T) {
	abort, delay := steps.Move(t, "abort h=0 side=source"), steps.Move(t, "delay h=0 side=source")
	for _, order := range [][]string{{"delay", "abort"}, {"abort", "delay"}} {
		var m Marks
		for i, kind := range order {
			if err := m.Mark(&Fault{File: "plan.jsonl", Line: i + 2, Kind: kind, Request: 0, Worker: -1, Side: "source", After: "prefill_dispatched"}); err != nil {
				t.Fatal(err)
			}
		}
		var handed []string
		m.PhaseMarks(func(k system.Fault, _ model.Side, _ string) { handed = append(handed, k.String()) })
		if !slices.Equal(handed, order) {
			t.Fatalf("%v: the marks are handed on as %v", order, handed)
		}
		if got := m.Logged(model.SourceSide, "prefill_dispatched"); len(got) != 2 {
			t.Fatalf("%v: the phase set %v", order, got)
		}
		// Only the later one offered: it waits.
		later := abort
		if order[1] == "delay" {
			later = delay
		}
		if _, _, ok := m.Offered([]system.Move{later}, nil); ok {
			t.Fatalf("%v: %s struck before the fault planned before it", order, order[1])
		}
		// Both offered, the abort first in the world's order: the plan's
		// first strikes, then the other.
		for _, want := range order {
			_, k, ok := m.Offered([]system.Move{abort, delay}, nil)
			if !ok || k.String() != want {
				t.Fatalf("%v: struck %v (%v), want %s", order, k, ok, want)
			}
		}
		if m.Left() != 0 {
			t.Fatalf("%v: %d marks left", order, m.Left())
		}
	}
	// Marks set at different phases keep the first offered first.
	var m Marks
	for i, f := range []Fault{{Kind: "delay", After: "prefill_dispatched"}, {Kind: "abort", After: "request_accepted"}} {
		f.File, f.Line, f.Request, f.Worker, f.Side = "plan.jsonl", i+2, 0, -1, "source"
		if err := m.Mark(&f); err != nil {
			t.Fatal(err)
		}
	}
	m.Logged(model.SourceSide, "request_accepted")
	m.Logged(model.SourceSide, "prefill_dispatched")
	if _, k, ok := m.Offered([]system.Move{abort, delay}, nil); !ok || k != steps.Fault(t, "abort") {
		t.Fatalf("marks of two phases: struck %v (%v), want the first offered", k, ok)
	}
}

// A fault aimed at the other side's fact (after_side) is set when that
// side logs it, on the side it strikes: the source's abort right after
// the destination logs reserved. The striking side's own fact of that
// name sets nothing, and PhaseMarksBy names both sides.
func TestMarks_AimedAtTheOtherSidesPhase(t *testing.T) {
	for _, kind := range []string{"abort", "delay", "evict"} {
		tc := struct {
			kind string
			k    system.Fault
		}{kind, steps.Fault(t, kind)}
		var m Marks
		f := Fault{File: "plan.jsonl", Line: 2, Kind: tc.kind, Request: 0, Worker: -1, Side: "source", After: "registered", AfterSide: "destination"}
		if err := m.Mark(&f); err != nil {
			t.Fatalf("%s: %v", tc.kind, err)
		}
		var seen []string
		m.PhaseMarksBy(func(k system.Fault, sd, by model.Side, after string) {
			seen = append(seen, k.String()+" "+sideName(sd)+" "+sideName(by)+" "+after)
		})
		if want := []string{tc.kind + " source destination registered"}; !slices.Equal(seen, want) {
			t.Fatalf("%s: PhaseMarksBy %v, want %v", tc.kind, seen, want)
		}
		if got := m.Logged(model.SourceSide, "registered"); got != nil {
			t.Fatalf("%s: the striking side's own fact set %v", tc.kind, got)
		}
		if got := m.Logged(model.DestinationSide, "registered"); !slices.Equal(got, []system.Fault{tc.k}) {
			t.Fatalf("%s: the destination's fact set %v", tc.kind, got)
		}
		if m.AwaitsPhase() || !m.Has(tc.k, model.SourceSide) || m.Has(tc.k, model.DestinationSide) || m.Left() != 1 {
			t.Fatalf("%s: after the phase: awaits %v, source %v, destination %v, %d left", tc.kind, m.AwaitsPhase(), m.Has(tc.k, model.SourceSide), m.Has(tc.k, model.DestinationSide), m.Left())
		}
	}
}

// CheckPhase, which simulate and live both ask, refuses a phase no run
// could reach, naming the plan's line: a fact the named side never logs
// (its own or after_side's), a side that is none, a restart aimed at the
// other side's fact, after_side without after.
func TestCheckPhase(t *testing.T) {
	for _, tc := range []struct {
		f    Fault
		want string
	}{
		{Fault{Kind: "abort", Request: 0, Worker: -1, Side: "source", After: "reserved", AfterSide: "destination"}, ""},
		{Fault{Kind: "abort", Request: 0, Worker: -1, Side: "source", After: "registered", AfterSide: "source"}, ""},
		{Fault{Kind: "cancel", Request: 0, Worker: -1, Side: "destination", After: "reserved"}, ""},
		{Fault{Kind: "abort", Request: 0, Worker: -1, Side: "source", After: "reserved"}, `p.jsonl:3: sim: input does not fit the configuration: after "reserved", but the source never logs it; want a fact the source logs, or after_side "destination"`},
		{Fault{Kind: "delay", Request: 0, Worker: -1, Side: "destination", After: "pinned", AfterSide: "destination"}, `p.jsonl:3: sim: input does not fit the configuration: after "pinned", but the destination never logs it; want a fact the destination logs, or after_side "source"`},
		{Fault{Kind: "abort", Request: 0, Worker: -1, Side: "source", After: "reserved", AfterSide: "decode"}, `p.jsonl:3: sim: input does not fit the configuration: after_side "decode", want source or destination (the side that logs "reserved")`},
		{Fault{Kind: "abort", Request: 0, Worker: -1, Side: "source", After: "routed"}, `p.jsonl:3: sim: input does not fit the configuration: after "routed", want a kind of the observation log a worker logs for a request`},
		{Fault{Kind: "restart", Request: 0, Worker: -1, Side: "source", After: "reserved", AfterSide: "destination"}, `p.jsonl:3: sim: input does not fit the configuration: a restart of the source after the destination logs "reserved"; want a restart aimed at its own side's facts (after_side left out or "source")`},
		{Fault{Kind: "abort", Request: 0, Worker: -1, Side: "source", AfterSide: "destination"}, `p.jsonl:3: sim: input does not fit the configuration: after_side "destination" without after; want after_side only with a fact after which the fault strikes`},
	} {
		tc.f.File, tc.f.Line = "p.jsonl", 3
		err := CheckPhase(&tc.f)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if tc.want == "" && got != "" || tc.want != "" && !strings.HasPrefix(got, tc.want) {
			t.Errorf("%+v: got %q, want %q", tc.f, got, tc.want)
		}
	}
}
