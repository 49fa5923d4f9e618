package system

import (
	"sync"
	"testing"

	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// judgedSystem is one system the fast judgements are held to the full
// ones on, with the sample of its states they are held on.
type judgedSystem struct {
	name   string
	c      *System
	states []State
}

// judged keeps the systems and samples of judgedSystems: the two tests
// below ask different questions of the same states, and building the
// mutants' systems and sampling them is a third of their time. Only
// read once complete.
var judged struct {
	sync.Mutex
	list []judgedSystem
}

// judgedSystems calls f with the systems the fast judgements are held to
// the full ones on: every run of several configurations under the
// generated tables, and, so that violations are met, every run of one of
// them under a sample of the default spec's mutants (every eighth); each
// with its sample of states (porSample: 1500 of each configuration's,
// 300 of each mutant's).
func judgedSystems(t *testing.T, f func(name string, c *System, states []State)) {
	for _, j := range judgedList(t) {
		f(j.name, j.c, j.states)
	}
}

func judgedList(t *testing.T) []judgedSystem {
	judged.Lock()
	defer judged.Unlock()
	if judged.list != nil {
		return judged.list
	}
	var list []judgedSystem
	files := []string{"two-handoffs-faults.json", "decode-first.json", "max-shape.json", "headroom-binds.json"}
	everyRun(t, files, func(file, run string, c *System) {
		list = append(list, judgedSystem{file + " " + run, c, porSample(c, 1500)})
	})
	cfg := testdataConfig(t, "two-handoffs-faults.json")
	all := spec.Mutants(spec.Default(), spec.Operators)
	for i := 0; i < len(all); i += 8 {
		p := interpreted(t, all[i].Spec)
		for _, run := range cfg.Runs {
			c, err := New(p, cfg, run)
			if err != nil {
				t.Fatal(err)
			}
			list = append(list, judgedSystem{all[i].Name + " " + run.Name, c, porSample(c, 300)})
		}
	}
	judged.list = list
	return list
}

// TestStepClear_EqualsCheckStep holds the one-pass judgement of a step,
// which JudgeStep asks first, to the step halves judged one by one, on
// every transition out of a sample of states of each system.
func TestStepClear_EqualsCheckStep(t *testing.T) {
	checked, refused := 0, 0
	judgedSystems(t, func(name string, c *System, states []State) {
		for _, s := range states {
			for _, m := range c.MovesInto(&s, nil) {
				succ := s
				j, _, err := c.Step(&succ, m, nil)
				if err != nil {
					t.Fatal(err)
				}
				clear, v := model.StepClear(&succ.W, &j), model.CheckStep(&succ.W, &j)
				if clear != (v == nil) {
					t.Fatalf("%s: move %v: StepClear says %v, CheckStep reports %v", name, m, clear, v)
				}
				if !clear {
					refused++
				}
				checked++
			}
		}
	})
	if refused == 0 {
		t.Error("no transition of the sample violated a step invariant: the comparison never met a refusal")
	}
	t.Logf("%d transitions, %d refused", checked, refused)
}

// TestStateClearFrom_EqualsCheckState holds the judgement of what a step
// changed, which the explorer asks of every new state, to the state
// halves judged on the whole world, on every transition out of a sample
// of states that pass them, each state unpacked from its canonical key
// as the explorer expands it.
func TestStateClearFrom_EqualsCheckState(t *testing.T) {
	checked, refused := 0, 0
	judgedSystems(t, func(name string, c *System, states []State) {
		for _, s := range states {
			k := c.Key(&s)
			var p State
			c.UnpackTo(&k, &p)
			prec := c.Records(&p)
			if model.CheckState(&p.W, &prec) != nil {
				continue
			}
			for _, m := range c.MovesInto(&p, nil) {
				succ := p
				if _, _, err := c.Step(&succ, m, nil); err != nil {
					t.Fatal(err)
				}
				rec := c.Records(&succ)
				clear, v := model.StateClearFrom(&p.W, &succ.W, &prec, &rec), model.CheckState(&succ.W, &rec)
				if clear != (v == nil) {
					t.Fatalf("%s: move %v: StateClearFrom says %v, CheckState reports %v", name, m, clear, v)
				}
				if !clear {
					refused++
				}
				checked++
			}
		}
	})
	if refused == 0 {
		t.Error("no transition of the sample violated a state invariant: the comparison never met a refusal")
	}
	t.Logf("%d transitions, %d refused", checked, refused)
}

// Quiescence judges the quiescence invariants on a quiescent state only:
// a state with a protocol move enabled is not quiescent, whatever
// Quiescence's invariant would say of it, and a quiescent one is judged
// as the invariants judge it.
func TestQuiescence_JudgesOnlyQuiescentStates(t *testing.T) {
	quiet, spared := 0, 0
	judgedSystems(t, func(name string, c *System, states []State) {
		for _, s := range states {
			var ms MoveSet
			want := c.Enabled(&s, &ms) == 0
			rec := c.Records(&s)
			inv := model.Quiescence(&s.W, &rec)
			if inv == nil && s.B == c.budget {
				inv = model.FaultFreeCompletion(&s.W)
			}
			q, v := c.Quiescence(&s)
			switch {
			case q != want:
				t.Fatalf("%s: Quiescence says quiescent %v with %d protocol moves enabled", name, q, ms.N)
			case !q && v != nil:
				t.Fatalf("%s: a state with moves enabled was judged: %v", name, v)
			case q && (v == nil) != (inv == nil):
				t.Fatalf("%s: a quiescent state judged %v, its invariants say %v", name, v, inv)
			}
			if q {
				quiet++
			} else if inv != nil {
				spared++
			}
		}
	})
	if quiet == 0 || spared == 0 {
		t.Errorf("the sample held %d quiescent states and %d busy ones the invariants would refuse: a case was never met", quiet, spared)
	}
	t.Logf("%d quiescent states, %d busy ones spared", quiet, spared)
}
