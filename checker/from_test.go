package checker

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/machines/interp"
)

// fromTraceFile reads a shipped trace and the protocol it runs.
func fromTraceFile(t *testing.T, file string) (*Trace, *system.Protocol) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := ParseTrace(file, data)
	if err != nil {
		t.Fatal(err)
	}
	proto := system.Generated()
	if tr.Spec != nil {
		it, err := interp.New(tr.Spec)
		if err != nil {
			t.Fatal(err)
		}
		if proto, err = system.FromStepper("variant", tr.Spec, it); err != nil {
			t.Fatal(err)
		}
	}
	return tr, proto
}

func runOf(t *testing.T, tr *Trace) []system.Run {
	t.Helper()
	runs, err := SelectRuns(tr.Config, []string{tr.Run}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// A search started before a trace's violating step finds that violation
// one step on; its counterexample begins with the trace's steps, says how
// many are the trace's, and replays from the run's initial state. Walks
// started there find it too.
func TestFrom_SearchContinuesATrace(t *testing.T) {
	tr, proto := fromTraceFile(t, "../testdata/traces/release-on-heartbeat.jsonl")
	prefix := tr.Moves[:len(tr.Moves)-1]
	rep, err := Check(context.Background(), proto, tr.Config, runOf(t, tr), Limits{Liveness: true, Workers: 1, From: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ce := rep.Runs[0].Violation
	if ce == nil || ce.Violation.Invariant != tr.Violation {
		t.Fatalf("from before the violating step: %+v, want %s", ce, tr.Violation)
	}
	if ce.From != len(prefix) || len(ce.Steps) != len(tr.Moves) {
		t.Fatalf("the counterexample has %d steps, %d of them the trace's; want %d and %d", len(ce.Steps), ce.From, len(tr.Moves), len(prefix))
	}
	for i, m := range prefix {
		if ce.Steps[i].Move != m {
			t.Fatalf("step %d is %s, the trace's is %s", i+1, ce.Steps[i].Move, m)
		}
	}
	if rep.Runs[0].Stats.States != 1 {
		t.Errorf("the violation is one step from the start, found after %d states", rep.Runs[0].Stats.States)
	}
	c := rep.Checker(0)
	if !slices.Equal(ce.Initial, func() []string { s := c.System.Initial(); return c.DescribeState(&s) }()) {
		t.Errorf("the counterexample does not begin at the run's initial state:\n%s", strings.Join(ce.Initial, "\n"))
	}
	// What the trace file gets replays from the initial state.
	var moves []system.Move
	for _, st := range ce.Steps {
		moves = append(moves, st.Move)
	}
	fresh, err := New(proto, tr.Config, runOf(t, tr)[0])
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(fresh)
	for i, m := range moves {
		r, err := s.Apply(m)
		if err != nil {
			t.Fatalf("replaying step %d: %v", i+1, err)
		}
		if i == len(moves)-1 && (r.Violation == nil || r.Violation.Invariant != tr.Violation) {
			t.Fatalf("the replayed last step gives %v", r.Violation)
		}
	}
	if text := rep.text(TextOptions{NoTiming: true}); !strings.Contains(text, "the 5 steps the search started after, then the shortest from there") ||
		!strings.Contains(text, "(the search started here)") {
		t.Errorf("the report does not say where the search started:\n%s", text)
	}

	wrep, err := Check(context.Background(), proto, tr.Config, runOf(t, tr), Limits{Seed: 1, Walks: 8, Steps: 50, Workers: 1, From: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if w := wrep.Runs[0].Violation; w == nil || w.From != len(prefix) || w.Violation.Invariant != tr.Violation {
		t.Fatalf("walks from the trace's state: %+v", w)
	}
}

// From a state part way through a run, the search explores what is
// reachable from there: fewer states than from the initial state, every
// invariant judged, and with an empty path it is the search from the
// initial state.
func TestFrom_ReachesLessThanTheWholeRun(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/small.json")
	runs, err := SelectRuns(cfg, []string{"vllm"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(system.Generated(), cfg, runs[0])
	if err != nil {
		t.Fatal(err)
	}
	// Four steps along the first enabled move each time.
	s := newSession(c)
	var path []system.Move
	for range 4 {
		m := c.MovesInto(s.State(), nil)[0]
		if _, err := s.Apply(m); err != nil {
			t.Fatal(err)
		}
		path = append(path, m)
	}
	check := func(from []system.Move) *Result {
		t.Helper()
		rep, err := Check(context.Background(), system.Generated(), cfg, runs, Limits{Workers: 1, Liveness: true, From: from})
		if err != nil {
			t.Fatal(err)
		}
		if r := rep.Runs[0]; !r.Complete || r.Violation != nil || !r.Liveness {
			t.Fatalf("from %v: complete %v, violation %v", from, r.Complete, r.Violation)
		}
		if len(from) > 0 && !strings.Contains(rep.text(TextOptions{NoTiming: true}), "the search started from a trace's state, so rows that never fired are not findings") {
			t.Errorf("the coverage of a search from a trace's state is offered as findings")
		}
		return rep.Runs[0]
	}
	whole, none, from := check(nil), check([]system.Move{}), check(path)
	if none.Stats.States != whole.Stats.States {
		t.Errorf("an empty path explores %d states, the whole run %d", none.Stats.States, whole.Stats.States)
	}
	if from.Stats.States >= whole.Stats.States || from.Stats.States < 2 {
		t.Errorf("after %d steps: %d states, from the initial state %d", len(path), from.Stats.States, whole.Stats.States)
	}
}

// A path the run does not allow is refused: a move that is not enabled,
// and a step that already violates an invariant.
func TestFrom_RefusesABadPath(t *testing.T) {
	tr, proto := fromTraceFile(t, "../testdata/traces/release-on-heartbeat.jsonl")
	runs := runOf(t, tr)
	swapped := slices.Clone(tr.Moves)
	swapped[0], swapped[1] = swapped[1], swapped[0]
	if _, err := Check(context.Background(), proto, tr.Config, runs, Limits{Workers: 1, From: swapped}); err == nil ||
		!strings.Contains(err.Error(), "the trace's step 1 (deliver-request h=0)") {
		t.Errorf("a move not enabled: %v", err)
	}
	if _, err := Check(context.Background(), proto, tr.Config, runs, Limits{Workers: 1, From: tr.Moves}); err == nil ||
		!strings.Contains(err.Error(), "already violates SourcePinnedUntilRead") {
		t.Errorf("a path through a violation: %v", err)
	}
}
