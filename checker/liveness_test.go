package checker

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"

	"github.com/handoffcheck/handoffcheck/spec"
)

// A liveness counterexample whose first trapped state is not on the cycle
// (here: the destination re-arms its reservation deadline instead of
// giving the reservation up, after the cancel that would end it was lost)
// still shows the path into the trap, the stem from the entry to the
// cycle, and a loop that replays: the state after the loop is the state
// the loop started from.
func TestLiveness_LoopReplaysWhenEntryIsOffTheCycle(t *testing.T) {
	c := rearmChecker(t)
	r := c.checkRun(context.Background(), Limits{Liveness: true, Workers: 2}, nil)
	if r.Violation == nil || r.Violation.Violation.Invariant != "EventuallyDrained" {
		t.Fatalf("want an EventuallyDrained violation, got %+v", r.Violation)
	}
	ce := r.Violation
	text := c.formatCounterexample(ce)
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
	sess := newSession(c)
	var atLoop system.Key
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

// rearmChecker is the rearm-reservation variant on the mutation
// configuration's sglang run: it violates EventuallyDrained with a trap
// entered before its cycle.
func rearmChecker(t *testing.T) *Checker {
	t.Helper()
	file := "../testdata/variants/rearm-reservation.json"
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s, err := spec.Parse(file, data)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := system.ParseConfig("mutation.json", ConfigJSON("mutation.json"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(interpreted(t, s), cfg, runNamed(t, cfg, "sglang"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The liveness counterexample is checked against an independent search of
// the same run: its trace replays from the initial state, the step marked
// as failing is the one that enters the trap (from the state before it a
// drained state can still be reached, from the state after it none can)
// and no trap is nearer the initial state; every later state of the stem
// and every state of the loop is inside the trap; every step after the
// entry is a move the system makes on its own (no fault, no early timer),
// so that nothing forces it to leave; and the loop returns to the state it
// started from. A loop that left the trap, or that needed the environment
// to go round, would fail here.
func TestLiveness_CounterexampleStaysInsideTheTrap(t *testing.T) {
	c := rearmChecker(t)
	ref := exploreRef(t, c, 0)
	trapped := ref.trapped()
	nearest := -1
	for id, in := range trapped {
		if in && (nearest < 0 || ref.depthOf[id] < nearest) {
			nearest = ref.depthOf[id]
		}
	}
	if nearest < 0 {
		t.Fatal("the independent search finds no trap in the rearm-reservation variant")
	}
	for _, workers := range []int{1, 2} {
		r := c.checkRun(context.Background(), Limits{Liveness: true, Workers: workers}, nil)
		if r.Violation == nil || r.Violation.Violation.Invariant != "EventuallyDrained" {
			t.Fatalf("want an EventuallyDrained violation, got %+v", r.Violation)
		}
		// The whole graph was explored before it was judged: the
		// exploration is complete, its verdict a violation.
		if r.Stats.States != len(ref.keys) || r.Stats.Transitions != ref.transitions || !r.Complete || !r.Liveness || r.StopReason != "" {
			t.Errorf("%d states, %d transitions, complete=%v liveness=%v stop=%q; the independent search: %d states, %d transitions",
				r.Stats.States, r.Stats.Transitions, r.Complete, r.Liveness, r.StopReason, len(ref.keys), ref.transitions)
		}
		if r.Stats.GraphBytes != int64(8*ref.ownEdges+len(ref.keys)) {
			t.Errorf("liveness graph %d bytes, want %d", r.Stats.GraphBytes, 8*ref.ownEdges+len(ref.keys))
		}
		ce := r.Violation
		text := c.formatCounterexample(ce)
		if v := ce.Violation; v.Handoff != -1 || v.Worker != -1 {
			t.Errorf("a trap is about the whole state, yet the violation names handoff %d, worker %d", v.Handoff, v.Worker)
		}
		entry := -1
		for i, st := range ce.Steps {
			if st.Failed {
				if entry >= 0 {
					t.Fatalf("steps %d and %d are both marked failing:\n%s", entry+1, i+1, text)
				}
				entry = i
			}
		}
		if entry < 0 || len(ce.Loop) == 0 {
			t.Fatalf("entry step %d, %d loop steps:\n%s", entry+1, len(ce.Loop), text)
		}
		// idOf is the independent search's id of a concrete state.
		idOf := func(s *system.State) int {
			id, ok := ref.ids[c.Key(s)]
			if !ok {
				t.Fatalf("the counterexample reaches a state the independent search never reached:\n%s", text)
			}
			return id
		}
		sess := newSession(c)
		var loopFrom system.Key
		prev := idOf(sess.State())
		steps := append(append([]TraceStep(nil), ce.Steps...), ce.Loop...)
		for i, st := range steps {
			var ms system.MoveSet
			protocol := c.Enabled(sess.State(), &ms)
			own := false
			for mi := 0; mi < ms.N; mi++ {
				if ms.M[mi] == st.Move {
					own = ownMove(&ms, protocol, mi)
				}
			}
			res, err := sess.Apply(st.Move)
			if err != nil {
				t.Fatalf("step %d (%s) does not replay: %v\n%s", i+1, st.Move, err, text)
			}
			if res.Violation != nil {
				t.Fatalf("step %d (%s) breaks %s: a liveness trace must not break safety", i+1, st.Move, res.Violation.Invariant)
			}
			if got := strings.Join(c.DescribeState(sess.State()), "\n"); got != strings.Join(st.State, "\n") {
				t.Fatalf("step %d (%s): the trace shows a state the move does not lead to:\n%s\nreplayed:\n%s", i+1, st.Move, strings.Join(st.State, "\n"), got)
			}
			id := idOf(sess.State())
			switch {
			case i < entry && trapped[id]:
				t.Errorf("step %d (%s) is in the trap before the step marked as entering it (%d)", i+1, st.Move, entry+1)
			case i == entry && (trapped[prev] || !trapped[id]):
				t.Errorf("step %d (%s), marked as entering the trap, goes from a state trapped=%v to one trapped=%v", i+1, st.Move, trapped[prev], trapped[id])
			case i > entry && !trapped[id]:
				t.Errorf("step %d (%s) leaves the trap: a drained state can be reached from it", i+1, st.Move)
			}
			if i > entry && !own {
				t.Errorf("step %d (%s) after the entry is not a move the system makes on its own", i+1, st.Move)
			}
			if i == len(ce.Steps)-1 {
				loopFrom = c.Key(sess.State())
			}
			prev = id
		}
		if got := c.Key(sess.State()); got != loopFrom {
			t.Errorf("the loop does not return to its first state")
		}
		if entry+1 != nearest {
			t.Errorf("the trap is entered after %d steps; the nearest trapped state is %d steps from the initial state", entry+1, nearest)
		}
	}
}

// The reports of a liveness violation carry the whole counterexample: the
// text shows it as formatCounterexample does, the JSON has the trace, the
// loop and the rows each step fired, and both say the verdict.
func TestLiveness_ReportsCarryTheCounterexample(t *testing.T) {
	c := rearmChecker(t)
	cfg, err := system.ParseConfig("mutation.json", ConfigJSON("mutation.json"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Check(context.Background(), c.Protocol(), cfg, []system.Run{c.Run()}, Limits{Liveness: true, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	x := rep.Runs[0]
	ce := x.Violation
	if ce == nil || ce.Violation.Invariant != "EventuallyDrained" || !rep.violated() {
		t.Fatalf("want an EventuallyDrained violation, got %+v", ce)
	}
	text := rep.text(TextOptions{Mermaid: true})
	wantLine(t, text, "run sglang (destination-first, engine sglang): VIOLATION EventuallyDrained\n")
	wantLine(t, text, indent(rep.Checker(0).formatCounterexampleFull(ce, false), "  "))
	wantLine(t, text, "run sglang counterexample:\n```mermaid\n")
	j := parseReportJSON(t, rep, TextOptions{})
	v := j.Runs[0].Violation
	if j.Verdict != "violation" || v == nil || v.Invariant != "EventuallyDrained" || v.Handoff != -1 || v.Worker != -1 ||
		len(v.Trace) != len(ce.Steps) || len(v.Loop) != len(ce.Loop) || len(v.Loop) == 0 {
		t.Fatalf("JSON verdict %q, violation %+v", j.Verdict, v)
	}
	for i, st := range ce.Steps {
		if v.Trace[i].Move != st.Move.String() {
			t.Errorf("JSON step %d is %s, the trace's %s", i+1, v.Trace[i].Move, st.Move)
		}
	}
	data, err := rep.marshal(TextOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fired := 0
	for _, st := range append(append([]TraceStep(nil), ce.Steps...), ce.Loop...) {
		for _, f := range st.Fired {
			d, _ := json.Marshal(c.describeFiring(f))
			if !strings.Contains(string(data), string(d)) {
				t.Errorf("the JSON report lacks the firing %s", d)
			}
			fired++
		}
	}
	if fired == 0 {
		t.Errorf("no step of the counterexample fired a row")
	}
}
