package checker

import (
	"context"
	"os"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// fairRef is an independent judge of leads_to under weak fairness, for
// the tests: its own breadth-first search keeps every state and every
// edge, labelled with its process (or as the environment's), and judges
// a region by Kosaraju's two passes over the own edges, recursive, and
// plain reachability, none of which fair.go shares.
type fairRef struct {
	states  []system.State
	ids     map[system.Key]int
	own     [][]refEdge // the system's own moves
	env     [][]int     // faults and early timers
	enabled []uint64
}

type refEdge struct {
	to   int
	proc uint8
}

func newFairRef(t *testing.T, c *Checker) *fairRef {
	t.Helper()
	r := &fairRef{ids: map[system.Key]int{}}
	add := func(s system.State) int {
		k := c.Key(&s)
		if id, ok := r.ids[k]; ok {
			return id
		}
		r.ids[k] = len(r.states)
		r.states = append(r.states, s)
		r.own, r.env, r.enabled = append(r.own, nil), append(r.env, nil), append(r.enabled, 0)
		return len(r.states) - 1
	}
	add(c.Initial())
	for i := 0; i < len(r.states); i++ {
		s := r.states[i]
		var ms system.MoveSet
		protocol := c.Enabled(&s, &ms)
		for mi := 0; mi < ms.N; mi++ {
			u := s
			if _, _, err := c.Step(&u, ms.M[mi], nil); err != nil {
				t.Fatal(err)
			}
			j := add(u)
			if ownMove(&ms, protocol, mi) {
				p, _ := ms.Process(mi, protocol)
				r.own[i] = append(r.own[i], refEdge{to: j, proc: p})
				r.enabled[i] |= 1 << p
			} else {
				r.env[i] = append(r.env[i], j)
			}
		}
	}
	return r
}

// violated judges "P leads to Q" of one region: some state where P holds
// and Q does not reaches, staying where Q does not (by any edge), a
// state with no own move or a state of a fair own component.
func (r *fairRef) violated(p, q func(s *system.State) bool) bool {
	n := len(r.states)
	in := make([]bool, n)
	for i := range r.states {
		in[i] = !q(&r.states[i])
	}
	// Kosaraju: finishing order on the own edges, then components on the
	// reversed own edges in reverse finishing order.
	seen := make([]bool, n)
	var order []int
	var dfs1 func(v int)
	dfs1 = func(v int) {
		seen[v] = true
		for _, e := range r.own[v] {
			if in[e.to] && !seen[e.to] {
				dfs1(e.to)
			}
		}
		order = append(order, v)
	}
	for v := 0; v < n; v++ {
		if in[v] && !seen[v] {
			dfs1(v)
		}
	}
	rev := make([][]int, n)
	for v := 0; v < n; v++ {
		for _, e := range r.own[v] {
			if in[v] && in[e.to] {
				rev[e.to] = append(rev[e.to], v)
			}
		}
	}
	comp := make([]int, n)
	for i := range comp {
		comp[i] = -1
	}
	nc := 0
	var dfs2 func(v int)
	dfs2 = func(v int) {
		comp[v] = nc
		for _, u := range rev[v] {
			if comp[u] < 0 {
				dfs2(u)
			}
		}
	}
	for i := len(order) - 1; i >= 0; i-- {
		if v := order[i]; comp[v] < 0 {
			dfs2(v)
			nc++
		}
	}
	taken, disabled := make([]uint64, nc), make([]uint64, nc)
	for v := 0; v < n; v++ {
		if !in[v] {
			continue
		}
		disabled[comp[v]] |= ^r.enabled[v]
		for _, e := range r.own[v] {
			if in[e.to] && comp[e.to] == comp[v] {
				taken[comp[v]] |= 1 << e.proc
			}
		}
	}
	target := make([]bool, n)
	for v := 0; v < n; v++ {
		c := comp[v]
		target[v] = in[v] && (r.enabled[v] == 0 || taken[c] != 0 && taken[c]|disabled[c] == ^uint64(0))
	}
	// Reachability, in the region, by any edge, from the P states.
	reach := make([]bool, n)
	var work []int
	for v := 0; v < n; v++ {
		if in[v] && p(&r.states[v]) {
			reach[v] = true
			work = append(work, v)
		}
	}
	for len(work) > 0 {
		v := work[len(work)-1]
		work = work[:len(work)-1]
		if target[v] {
			return true
		}
		next := append([]int(nil), r.env[v]...)
		for _, e := range r.own[v] {
			next = append(next, e.to)
		}
		for _, w := range next {
			if in[w] && !reach[w] {
				reach[w] = true
				work = append(work, w)
			}
		}
	}
	return false
}

// refProps are per-handoff leads_to properties over the world, some of
// which the shipped runs violate and some of which they keep.
var refProps = []struct {
	name string
	p, q func(x *model.Handoff) bool
}{
	{"ReservationEnds", func(x *model.Handoff) bool { return x.Dst == model.DstReserved }, func(x *model.Handoff) bool { return x.Dst != model.DstReserved }},
	{"CancelFreesSlot", func(x *model.Handoff) bool { return x.Cancelled }, func(x *model.Handoff) bool { return !x.Running }},
	{"SlotFrees", func(x *model.Handoff) bool { return x.Running }, func(x *model.Handoff) bool { return !x.Running }},
	{"RoutedActivates", func(x *model.Handoff) bool { return x.Prefill >= 0 }, func(x *model.Handoff) bool { return x.Dst == model.DstActive }},
	{"PinReleased", func(x *model.Handoff) bool { return x.Src == model.SrcPinned }, func(x *model.Handoff) bool { return x.Src != model.SrcPinned }},
	{"PinnedActivates", func(x *model.Handoff) bool { return x.Src == model.SrcPinned }, func(x *model.Handoff) bool { return x.Dst == model.DstActive }},
}

func refObligations() []Obligation {
	var out []Obligation
	for _, rp := range refProps {
		out = append(out, Obligation{Name: rp.name, PerHandoff: true, Sides: func(sys *system.System, s *system.State) (uint64, uint64, error) {
			var p, q uint64
			for h := 0; h < sys.World().NumHandoffs(); h++ {
				if rp.p(&s.W.H[h]) {
					p |= 1 << h
				}
				if rp.q(&s.W.H[h]) {
					q |= 1 << h
				}
			}
			return p, q, nil
		}})
	}
	return out
}

// The search's fair verdicts agree with the independent judge's, on every
// run of small.json and on the rearm-reservation variant, for properties
// some of which fail; and every fair run it reports replays, is weakly
// fair, and never meets Q after the step it marks.
func TestFair_AgreesWithIndependentJudge(t *testing.T) {
	data, err := os.ReadFile("../testdata/configs/small.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := system.ParseConfig("small.json", data)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Symmetry = false
	var checkers []*Checker
	for _, run := range cfg.Runs {
		c, err := New(system.Generated(), cfg, run)
		if err != nil {
			t.Fatal(err)
		}
		checkers = append(checkers, c)
	}
	checkers = append(checkers, rearmChecker(t))
	data, err = os.ReadFile("../testdata/configs/two-handoffs.json")
	if err != nil {
		t.Fatal(err)
	}
	two, err := system.ParseConfig("two-handoffs.json", data)
	if err != nil {
		t.Fatal(err)
	}
	two.Symmetry = false
	c, err := New(system.Generated(), two, runNamed(t, two, "vllm"))
	if err != nil {
		t.Fatal(err)
	}
	checkers = append(checkers, c)
	violations := 0
	for _, c := range checkers {
		ref := newFairRef(t, c)
		r := c.checkRun(context.Background(), Limits{Liveness: true, Workers: 2, Fair: refObligations()}, nil)
		if !r.Complete && r.Violation == nil || len(r.Fair) != len(refProps) {
			t.Fatalf("run %s: complete %v, %d verdicts", c.Run().Name, r.Complete, len(r.Fair))
		}
		if r.Stats.States != len(ref.states) {
			t.Fatalf("run %s: %d states, the independent search %d", c.Run().Name, r.Stats.States, len(ref.states))
		}
		for i, rp := range refProps {
			fv := r.Fair[i]
			want := false
			for h := 0; h < c.World().NumHandoffs(); h++ {
				hh := h
				if ref.violated(func(s *system.State) bool { return rp.p(&s.W.H[hh]) }, func(s *system.State) bool { return rp.q(&s.W.H[hh]) }) {
					want = true
				}
			}
			if got := fv.Violation != nil; got != want {
				t.Errorf("run %s, %s: violated %v, the independent judge says %v", c.Run().Name, rp.name, got, want)
				continue
			}
			if fv.Violation == nil {
				continue
			}
			violations++
			ce := fv.Violation
			t.Logf("run %s, %s: violated on handoff %d, %d steps, a loop of %d", c.Run().Name, rp.name, fv.Handoff, len(ce.Steps), len(ce.Loop))
			replayLasso(t, c, ce)
			// Q never holds of the handoff from the marked step on.
			s := newSession(c)
			marked := false
			for _, st := range append(append([]TraceStep(nil), ce.Steps...), ce.Loop...) {
				if _, err := s.Apply(st.Move); err != nil {
					t.Fatal(err)
				}
				marked = marked || st.Failed
				if x := &s.State().W.H[fv.Handoff]; marked && rp.q(x) {
					t.Fatalf("run %s, %s: Q holds after the marked step at %s:\n%s", c.Run().Name, rp.name, st.Move, c.formatCounterexample(ce))
				}
			}
			if x := &s.State().W.H[fv.Handoff]; len(ce.Loop) == 0 && !ends(c, s.State()) {
				t.Fatalf("run %s, %s: the run without a loop does not end (handoff %v):\n%s", c.Run().Name, rp.name, x, c.formatCounterexample(ce))
			}
		}
	}
	if violations == 0 {
		t.Fatal("no property failed anywhere: the comparison judged only passes")
	}
	t.Logf("%d fair runs checked", violations)
}

// ends reports whether a run may end at s: no process is enabled there.
func ends(c *Checker, s *system.State) bool {
	enabled, _ := c.Unfair(*s, nil)
	return len(enabled) == 0
}
