package checker

import (
	"context"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"
)

// The horizon is one and a half times the length of a walk that commits
// no fault, within the step bound, whatever the seed: on the small
// configuration a fault-free vllm handoff takes 8 moves.
func TestSchedule_Horizon(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/small.json")
	c := checkerFor(t, system.Generated(), cfg, "vllm")
	if h := c.horizon(200); h != 12 {
		t.Errorf("horizon %d, want 12 (8 moves without faults, times 1.5)", h)
	}
	if h := c.horizon(4); h != 6 {
		t.Errorf("horizon with walks of at most 4 moves: %d, want 6", h)
	}
	for _, seed := range []uint64{1, 99} {
		r := c.walk(context.Background(), walkOptions{Seed: seed, Walks: 3, Steps: 200})
		if r.stats.Horizon != 12 {
			t.Errorf("seed %d: horizon %d", seed, r.stats.Horizon)
		}
	}
}

// Under a schedule a fault comes no earlier than its position: replaying
// each walk, every fault it committed had a unit of its kind due (a
// position at or before that step, not yet used). Every position lies
// within the horizon, a swarm walk places only the kinds it may use, and
// a walk places one position per unit of budget.
func TestSchedule_FaultsWaitForTheirPositions(t *testing.T) {
	cfg := mustConfig(t, twoByTwo)
	cfg.Budget = budgetOf(t, "duplicate=2", "loss=2", "reorder=2", "cancel=1", "abort=2", "transfer_failure=1", "restart=1", "early_timer=2", "no_show=1")
	for _, run := range cfg.Runs {
		c, err := New(system.Generated(), cfg, run)
		if err != nil {
			t.Fatal(err)
		}
		hz := c.horizon(200)
		for _, sched := range []schedule{schedulePositions, schedulePCT} {
			var committed, placed [system.NumFaults]int
			for seed := uint64(0); seed < 300; seed++ {
				swarm := seed%2 == 1
				w := c.walkOnce(walkSpec{seed: seed, steps: 200, swarm: swarm, sched: sched, horizon: hz, keep: true})
				var pos [system.NumFaults][]int
				for _, f := range w.schedule {
					if f.Step < 0 || f.Step >= hz {
						t.Fatalf("%s %s seed %d: %s outside the horizon %d", run.Name, sched.name(), seed, f.text(), hz)
					}
					pos[f.Fault] = append(pos[f.Fault], f.Step)
					placed[f.Fault]++
				}
				allowed := map[string]bool{}
				for _, n := range w.allowed {
					allowed[n] = true
				}
				for f := system.Fault(0); f < system.NumFaults; f++ {
					want := int(cfg.Budget[f])
					if mv := f.Move(); mv != 0 && !allowed[mv.String()] {
						want = 0
					}
					if len(pos[f]) != want {
						t.Fatalf("%s %s seed %d: %d positions for %s, want %d (swarm %v, allowed %v)", run.Name, sched.name(), seed, len(pos[f]), f, want, swarm, w.allowed)
					}
				}
				s := c.Initial()
				var spent [system.NumFaults]int
				var ms system.MoveSet
				for i, m := range w.moves {
					c.Enabled(&s, &ms)
					if f, fault := m.SpendsAt(&s, ms.Stuck); fault {
						due := 0
						for _, p := range pos[f] {
							if p <= i {
								due++
							}
						}
						if due <= spent[f] {
							t.Fatalf("%s %s seed %d step %d: %s committed before its position (positions %v, %d committed)", run.Name, sched.name(), seed, i, m, pos[f], spent[f])
						}
						spent[f]++
						committed[f]++
					}
					if _, _, err := c.Step(&s, m, nil); err != nil {
						t.Fatalf("%s %s seed %d step %d: %v", run.Name, sched.name(), seed, i, err)
					}
				}
				if len(w.moves) != w.n || spent != toInts(w.faults) {
					t.Fatalf("%s %s seed %d: %d moves kept of %d; faults %v, counted %v", run.Name, sched.name(), seed, len(w.moves), w.n, spent, w.faults)
				}
			}
			t.Logf("%s %s: faults placed %v, committed %v", run.Name, sched.name(), placed, committed)
			for f := range committed {
				if cfg.Budget[f] > 0 && committed[f] == 0 {
					t.Errorf("%s %s: no walk committed %s", run.Name, sched.name(), system.Fault(f))
				}
			}
		}
	}
}

func toInts(a [system.NumFaults]int32) (out [system.NumFaults]int) {
	for i, n := range a {
		out[i] = int(n)
	}
	return out
}

// Every schedule name parses back to its schedule, the empty name to the
// default; an unknown name is refused with the names that exist, by
// Check before it walks.
func TestSchedule_Names(t *testing.T) {
	for _, n := range scheduleNames {
		s, err := parseSchedule(n)
		if err != nil || s.name() != n {
			t.Errorf("%q parsed to %v (%v)", n, s, err)
		}
	}
	if _, err := parseSchedule("random"); err == nil || err.Error() != `unknown schedule "random" (want positions, uniform, pct)` {
		t.Errorf("unknown schedule: %v", err)
	}
	if schedule(0) != schedulePositions {
		t.Errorf("the zero schedule is %s, want positions (the default)", schedule(0).name())
	}
	if s, err := parseSchedule(""); err != nil || s != schedulePositions {
		t.Errorf("the empty name parsed to %s (%v), want positions (the default)", s.name(), err)
	}
	cfg := mustConfig(t, smallConfig)
	rep, err := Check(context.Background(), system.Generated(), cfg, cfg.Runs[:1], Limits{Seed: 1, Walks: 1, Steps: 1, Schedule: "random"})
	if rep != nil || err == nil || err.Error() != `unknown schedule "random" (want positions, uniform, pct)` {
		t.Errorf("Check with an unknown walk schedule: report %v, error %v", rep, err)
	}
}
