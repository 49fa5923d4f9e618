package checker

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"
)

// drainsObligation is EventuallyDrained's fair form written as an
// obligation: true leads to a drained state.
func drainsObligation() Obligation {
	return Obligation{Name: "Drains", Sides: func(sys *system.System, s *system.State) (uint64, uint64, error) {
		if sys.Drained(s) {
			return 1, 1, nil
		}
		return 1, 0, nil
	}}
}

// replayLasso replays a fair counterexample through a session, as
// 'replay' does, and checks that its loop returns to where it starts,
// is made of moves the system makes on its own, and is weakly fair.
func replayLasso(t *testing.T, c *Checker, ce *Counterexample) {
	t.Helper()
	text := c.formatCounterexample(ce)
	sess := newSession(c)
	var atLoop system.Key
	var start system.State
	var loop []system.Move
	for i, st := range append(append([]TraceStep(nil), ce.Steps...), ce.Loop...) {
		if i == len(ce.Steps) {
			start = *sess.State()
		}
		if i >= len(ce.Steps) {
			loop = append(loop, st.Move)
		}
		if _, err := sess.Apply(st.Move); err != nil {
			t.Fatalf("step %d (%s) does not replay: %v\n%s", i+1, st.Move, err, text)
		}
		if i == len(ce.Steps)-1 {
			atLoop = c.Key(sess.State())
		}
	}
	if len(ce.Loop) == 0 {
		return
	}
	if got := c.Key(sess.State()); got != atLoop {
		t.Fatalf("the loop does not return to the state after step %d:\n%s", len(ce.Steps), text)
	}
	unfair, own := c.Unfair(start, loop)
	if !own || len(unfair) > 0 {
		t.Fatalf("the loop is not a fair run of the system's own moves (own %v, never moving: %v):\n%s", own, unfair, text)
	}
}

// On the rearm-reservation variant, where a lost Cancelled leaves the
// destination re-arming its deadline for ever, "true leads to drained"
// fails under fairness with a lasso that replays, is fair and never
// drains, the same with one worker and with two.
func TestFair_RearmLassoReplays(t *testing.T) {
	c := rearmChecker(t)
	var texts []string
	defer func() {
		// The same run whatever the number of workers.
		if len(texts) == 2 && texts[0] != texts[1] {
			t.Errorf("one worker and two give different fair runs:\n%s\n%s", texts[0], texts[1])
		}
	}()
	for _, workers := range []int{1, 2} {
		r := c.checkRun(context.Background(), Limits{Liveness: true, Workers: workers, Fair: []Obligation{drainsObligation()}}, nil)
		if len(r.Fair) != 1 {
			t.Fatalf("want one fair verdict, got %+v (violation %+v)", r.Fair, r.Violation)
		}
		fv := r.Fair[0]
		if fv.Violation == nil || !fv.Held || !fv.Pending || fv.Err != nil {
			t.Fatalf("want a violation of Drains, got %+v", fv)
		}
		ce := fv.Violation
		if len(ce.Loop) == 0 {
			t.Fatalf("no loop:\n%s", c.formatCounterexample(ce))
		}
		for _, st := range ce.Loop {
			if _, fault := st.Move.Kind.Spends(); fault {
				t.Fatalf("the loop takes a fault: %s", st.Move)
			}
		}
		replayLasso(t, c, ce)
		texts = append(texts, c.formatCounterexample(ce))
	}
}

// On the built-in tables every fair run drains, on every run of the
// mutation configuration.
func TestFair_BuiltinTablesDrain(t *testing.T) {
	cfg, err := system.ParseConfig("mutation.json", ConfigJSON("mutation.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Symmetry = false
	rep, err := Check(context.Background(), system.Generated(), cfg, cfg.Runs, Limits{Liveness: true, Workers: 2, FairDrained: true, Fair: []Obligation{drainsObligation()}})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range rep.Runs {
		if x.Violation != nil {
			t.Fatalf("run %s: %s\n%s", x.Run.Name, x.Violation.Violation.Invariant, x.Violation.Violation.Detail)
		}
		if !x.FairDrained || len(x.Fair) != 1 || x.Fair[0].Violation != nil || !x.Fair[0].Pending {
			t.Fatalf("run %s: fair drained %v, verdicts %+v", x.Run.Name, x.FairDrained, x.Fair)
		}
	}
}

// EventuallyDrained's fair form is the obligation "true leads to
// drained": on the rearm-reservation variant (where the reachability form
// finds its trap first, and so is reported) it finds the same fair run as
// that obligation.
func TestFair_DrainedFormIsTheObligation(t *testing.T) {
	c := rearmChecker(t)
	e := c.newExploration(Limits{Liveness: true, Workers: 1, FairDrained: true, Fair: []Obligation{drainsObligation()}})
	defer e.release()
	e.root()
	defer func() { e.frontier.close() }()
	e.search(context.Background(), nil)
	if e.cut || e.viol != nil {
		t.Fatalf("the search did not complete: cut %v, violation %+v", e.cut, e.viol)
	}
	drained, verdicts, err := e.checkFair()
	if err != nil {
		t.Fatal(err)
	}
	if drained == nil || drained.Violation.Invariant != "EventuallyDrained" || drained.Fair != "drain" || len(verdicts) != 1 || verdicts[0].Violation == nil {
		t.Fatalf("drained %+v, verdicts %+v", drained, verdicts)
	}
	ob := verdicts[0].Violation
	if len(drained.Steps) != len(ob.Steps) || len(drained.Loop) != len(ob.Loop) {
		t.Fatalf("the fair form's run (%d steps, loop %d) is not the obligation's (%d, %d)", len(drained.Steps), len(drained.Loop), len(ob.Steps), len(ob.Loop))
	}
	for i := range ob.Steps {
		if drained.Steps[i].Move != ob.Steps[i].Move {
			t.Fatalf("step %d: %s, the obligation's %s", i+1, drained.Steps[i].Move, ob.Steps[i].Move)
		}
	}
	replayLasso(t, c, drained)
}

// On a graph made by hand: a component is a target only when every
// process moves in it or is disabled somewhere in it, and the cycle built
// in it goes round every edge fairness needs before coming back.
func TestFair_CycleCoversEveryProcess(t *testing.T) {
	// States 0-2 form one component. Process 0 moves 0->1 and 2->0,
	// process 1 moves 1->2 and is enabled only at 1, process 2 moves only
	// on the self-loop at 2 and is enabled everywhere. State 3, reached
	// by the environment from 0, loops by process 0 while process 3 is
	// enabled there and never moves: not fair.
	type e struct {
		from, to uint32
		lab      uint8
	}
	edges := []e{{0, 1, 0}, {0, 3, envLabel}, {1, 2, 1}, {2, 0, 0}, {2, 2, 2}, {3, 3, 0}}
	fg := &fairGraph{n: 4, off: make([]uint32, 5), enabled: []uint64{0b101, 0b111, 0b101, 0b1001}}
	for _, ed := range edges {
		fg.off[ed.from+1]++
	}
	for i := 0; i < 4; i++ {
		fg.off[i+1] += fg.off[i]
	}
	for _, ed := range edges {
		fg.dst = append(fg.dst, ed.to)
		fg.lab = append(fg.lab, ed.lab)
	}
	tj := newTarjan(fg)
	all := pendingRegion{start: func(v uint32) bool { return v == 0 }, in: func(uint32) bool { return true }}
	if s := tj.run(all); s != 0 {
		t.Fatalf("first violating start %d, want 0", s)
	}
	if want := []bool{true, true, true, false}; !slices.Equal(tj.target, want) {
		t.Fatalf("targets %v, want %v", tj.target, want)
	}
	tj.targets()
	cyc := tj.fairCycle(0)
	if cyc.ids[0] != 0 || cyc.ids[len(cyc.ids)-1] != 0 {
		t.Fatalf("the cycle %v does not start and end at 0", cyc.ids)
	}
	var taken uint64
	for _, p := range cyc.proc {
		taken |= 1 << p
	}
	if taken != 0b111 {
		t.Fatalf("the cycle %v moves processes %b, want 0, 1 and 2", cyc, taken)
	}
	// Without the self-loop, process 2 is enabled throughout and never
	// moves: the component is not fair, and only 3's environment path
	// remains, which is not fair either.
	fg.lab[4] = envLabel
	if s := tj.run(all); s != -1 {
		t.Fatalf("an unfair component was taken for a fair one (start %d, targets %v)", s, tj.target)
	}
}

// Fairness is not judged on a symmetry-reduced graph: each verdict says
// why, and the search is complete all the same.
func TestFair_RefusedUnderSymmetry(t *testing.T) {
	data, err := os.ReadFile("../testdata/configs/two-handoffs.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := system.ParseConfig("two-handoffs.json", data)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Symmetry = true
	c, err := New(system.Generated(), cfg, cfg.Runs[0])
	if err != nil {
		t.Fatal(err)
	}
	if !c.Symmetric() {
		t.Fatal("two-handoffs.json's first run is not reduced by symmetry")
	}
	r := c.checkRun(context.Background(), Limits{Liveness: true, Workers: 1, FairDrained: true, Fair: []Obligation{drainsObligation()}}, nil)
	if !r.Complete || r.FairDrained || len(r.Fair) != 1 || r.Fair[0].Err == nil || r.Fair[0].Violation != nil {
		t.Fatalf("complete %v, fair drained %v, verdicts %+v", r.Complete, r.FairDrained, r.Fair)
	}
}
