package checker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// levelViolation is one violation a breadth-first scan finds at the depth
// of the first one: the index of the state it is found from (in the order
// states are first reached) and the index of the move among that state's
// enabled moves (-1: the state itself is quiescent and fails Quiescence).
type levelViolation struct {
	state, move int
	inv         string
}

// violationsAtFirstFailingDepth scans c breadth first, taking states in
// the order they were first reached and their moves in order, and lists
// every violation found from the states at the depth of the first one.
func violationsAtFirstFailingDepth(t testing.TB, c *Checker) []levelViolation {
	t.Helper()
	ids := map[system.Key]bool{}
	states := []system.State{c.Initial()}
	depth := []int{0}
	ids[c.Key(&states[0])] = true
	var out []levelViolation
	for i := 0; i < len(states); i++ {
		if len(out) > 0 && depth[i] > depth[out[0].state] {
			break
		}
		s := states[i]
		if _, v := c.Quiescence(&s); v != nil {
			out = append(out, levelViolation{i, -1, v.Invariant})
		}
		for mi, m := range c.MovesInto(&s, nil) {
			u := s
			_, v, err := c.Step(&u, m, nil)
			if err != nil {
				t.Fatal(err)
			}
			if v == nil && !ids[c.Key(&u)] {
				v = c.CheckState(&u)
			}
			if v != nil {
				out = append(out, levelViolation{i, mi, v.Invariant})
				continue
			}
			if !ids[c.Key(&u)] {
				ids[c.Key(&u)] = true
				states = append(states, u)
				depth = append(depth, depth[i]+1)
			}
		}
	}
	return out
}

// When several states of a level break invariants, the checker reports the
// first in breadth-first order: by the state it is found from, and only
// then by the move. Here (a source that, cancelled while pinned, releases
// its blocks without fencing its registration first) the failing level holds
// violations whose move indices do not grow with their states: a later
// state fails by an earlier move, or by being quiescent. Ordering by move
// first, or letting whichever worker finishes first win, would report
// another trace; the one reported must be the independent scan's first,
// for one worker and for two.
func TestExplore_FirstOfSeveralViolationsInALevel(t *testing.T) {
	s := spec.Default()
	override(t, s, spec.Source, "Pinned", "Cancelled", spec.SourceFirst, "Aborting",
		"DisarmTransferDeadline", "DisarmLease", "ReleaseSource")
	cfg := mustConfig(t, smallConfig)
	c, err := New(interpreted(t, s), cfg, runNamed(t, cfg, "vllm"))
	if err != nil {
		t.Fatal(err)
	}
	all := violationsAtFirstFailingDepth(t, c)
	if len(all) < 2 {
		t.Fatalf("the failing level holds %d violations; the case needs several", len(all))
	}
	first := all[0]
	out := slices.IndexFunc(all, func(v levelViolation) bool { return v.state > first.state && v.move < first.move })
	if out < 0 {
		t.Fatalf("no later state of the failing level fails by an earlier move than the first (%+v): %+v", first, all)
	}
	ref := firstViolationRef(t, c)
	if ref == nil || ref.inv != first.inv {
		t.Fatalf("the scans disagree: %+v and %+v", ref, first)
	}
	for _, workers := range []int{1, 2} {
		r := c.checkRun(context.Background(), Limits{Workers: workers}, nil)
		if r.Violation == nil {
			t.Fatalf("workers %d: no violation; the scan finds %s", workers, ref.inv)
		}
		var moves []string
		for _, st := range r.Violation.Steps {
			moves = append(moves, st.Move.String())
		}
		got, want := strings.Join(moves, "\n"), strings.Join(ref.moves, "\n")
		if r.Violation.Violation.Invariant != ref.inv || got != want || !r.Violation.Steps[len(moves)-1].Failed {
			t.Errorf("workers %d: %s after\n%s\nthe scan's first: %s after\n%s", workers, r.Violation.Violation.Invariant, got, ref.inv, want)
		}
		if r.Stats.Depth != ref.depth || r.Stats.States != ref.states {
			t.Errorf("workers %d: depth %d, %d states; the scan: depth %d, %d states", workers, r.Stats.Depth, r.Stats.States, ref.depth, ref.states)
		}
	}
	t.Logf("%d violations in the failing level; the first %+v, a later one %+v", len(all), first, all[out])
}

// A quiescent state one step from the initial state that fails
// Quiescence (the source cannot take its request: the row is gone) is
// reported on a one-step trace whose only step is marked as the failing
// one, in the trace and in its text.
func TestExplore_QuiescenceAfterOneStep(t *testing.T) {
	s := spec.Default()
	tb := s.Table(spec.Source)
	i := tb.Lookup(spec.SourceFirst, "Idle", "RequestArrived")
	if i < 0 {
		t.Fatal("no source row for Idle × RequestArrived under source-first")
	}
	tb.Rows = slices.Delete(tb.Rows, i, i+1)
	cfg := mustConfig(t, smallConfig)
	cfg.Budget = system.Budget{}
	c, err := New(interpreted(t, s), cfg, runNamed(t, cfg, "vllm"))
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 2} {
		r := c.checkRun(context.Background(), Limits{Workers: workers}, nil)
		ce := r.Violation
		if ce == nil || ce.Violation.Invariant != model.NameQuiescence || len(ce.Steps) != 1 {
			t.Fatalf("workers %d: want Quiescence after one step, got %+v", workers, ce)
		}
		if !ce.Steps[0].Failed || ce.Steps[0].Move.String() != "route-prefill h=0 worker=0" {
			t.Errorf("workers %d: the one step is %s, failed=%v", workers, ce.Steps[0].Move, ce.Steps[0].Failed)
		}
		if r.Complete || r.Stats.Depth != 1 || r.DeadEnds != 1 {
			t.Errorf("workers %d: complete=%v depth %d, %d dead ends", workers, r.Complete, r.Stats.Depth, r.DeadEnds)
		}
		text := c.formatCounterexample(ce)
		wantLine(t, text, "shortest trace (1 steps):\n")
		wantLine(t, text, "  1. route-prefill h=0 worker=0   <-- Quiescence\n")
		// The JSON report carries the trace and its sequence diagram.
		rep := &Report{Protocol: c.Protocol().Name(), Runs: []*Result{r}, checkers: []*Checker{c}}
		jv := parseReportJSON(t, rep, TextOptions{NoTiming: true}).Runs[0].Violation
		mermaid := c.mermaidSequence(ce)
		if jv == nil || len(jv.Trace) != 1 || jv.Trace[0].Move != "route-prefill h=0 worker=0" || jv.Mermaid != mermaid || !strings.Contains(mermaid, "sequenceDiagram") {
			t.Errorf("workers %d: JSON violation %+v; the diagram:\n%s", workers, jv, mermaid)
		}
	}
}

// A world that breaks an invariant before anything happens (here: the
// decode worker holds more background load at start than it has blocks)
// is reported in its initial state: no step, the initial state alone
// explored, and the violation as the state shows it. The reports say so,
// and give the one state's memory as it is, not as zero.
func TestExplore_ViolationInTheInitialState(t *testing.T) {
	cfg := mustConfig(t, smallConfig)
	run := runNamed(t, cfg, "vllm")
	c, err := New(system.Generated(), cfg, run)
	if err != nil {
		t.Fatal(err)
	}
	// Past what the configuration could say: Prepare refuses such a
	// world, so it is set on the prepared one.
	w := c.World()
	w.Workers[1].BackgroundAtStart, w.Workers[1].BackgroundBlocks = true, w.Workers[1].Capacity
	init := c.Initial()
	want := c.CheckState(&init)
	if want == nil || want.Invariant != model.NameCapacityRespected {
		t.Fatalf("the initial state breaks %v; the case wants CapacityRespected", want)
	}
	var r *Result
	for _, workers := range []int{1, 2} {
		r = c.checkRun(context.Background(), Limits{Workers: workers, Liveness: true}, nil)
		ce := r.Violation
		if ce == nil || ce.Violation.Invariant != want.Invariant || ce.Violation.Worker != 1 || len(ce.Steps) != 0 {
			t.Fatalf("workers %d: want %s on worker 1 with no step, got %+v", workers, want.Invariant, ce)
		}
		if fmt.Sprint(ce.Initial) != fmt.Sprint(c.DescribeState(&init)) || ce.Violation.Detail != want.Detail {
			t.Errorf("workers %d: initial %v, detail %q; want %v, %q", workers, ce.Initial, ce.Violation.Detail, c.DescribeState(&init), want.Detail)
		}
		if r.Complete || r.StopReason != "" || r.Liveness || r.Stats.States != 1 || r.Stats.Transitions != 0 || r.Stats.Depth != 0 || r.DeadEnds != 0 {
			t.Errorf("workers %d: complete=%v stop=%q liveness=%v, %d states, %d transitions, depth %d, %d dead ends",
				workers, r.Complete, r.StopReason, r.Liveness, r.Stats.States, r.Stats.Transitions, r.Stats.Depth, r.DeadEnds)
		}
	}
	rep := &Report{Protocol: system.Generated().Name(), Runs: []*Result{r}, checkers: []*Checker{c}, Invariants: []string{model.NameCapacityRespected}}
	text := rep.text(TextOptions{Stats: true})
	wantLine(t, text, "run vllm (source-first, engine vllm): VIOLATION CapacityRespected\n")
	wantLine(t, text, "shortest trace (0 steps):\n")
	s := r.Stats
	if s.StoreBytes <= 0 || s.TraceBytes != 5 {
		t.Fatalf("one state: store %d bytes, trace links %d", s.StoreBytes, s.TraceBytes)
	}
	wantLine(t, text, fmt.Sprintf("  store (fingerprints): %.1f bytes/state (fingerprints alone %.1f), trace links 5.0 bytes/state, ",
		float64(s.StoreBytes), float64(s.FingerprintBytes)))
	j := parseReportJSON(t, rep, TextOptions{})
	jr := j.Runs[0]
	if j.Verdict != "violation" || jr.StoreBPS != float64(s.StoreBytes) || jr.FPBPS != float64(s.FingerprintBytes) {
		t.Errorf("JSON: verdict %q, store %g (fingerprints %g) bytes/state; want %d and %d", j.Verdict, jr.StoreBPS, jr.FPBPS, s.StoreBytes, s.FingerprintBytes)
	}
	if jr.Violation == nil || jr.Violation.Invariant != want.Invariant || jr.Violation.Worker != 1 || len(jr.Violation.Trace) != 0 {
		t.Errorf("JSON violation %+v", jr.Violation)
	}
}
