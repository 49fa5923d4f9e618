package checker

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/internal/steps"
	"github.com/handoffcheck/handoffcheck/checker/system"

	"github.com/handoffcheck/handoffcheck/machines/interp"
	"github.com/handoffcheck/handoffcheck/spec"
)

// lateFaultVariants are spec variants (testdata/variants) whose bug needs
// a fault late in a handoff's life, after most of its protocol ran: what
// uniform walks almost never reach, because they spend their faults in
// the first moves. Each must be found by lateFaultWalks swarm walks under
// the default schedule, on every run listed, with the invariant named.
var lateFaultVariants = []struct {
	file      string
	config    string // a configuration file; empty for the embedded default
	runs      []string
	invariant string
}{
	// A destination that, instead of ending in Done, waits in a
	// non-terminal Finishing and releases the finished request's blocks
	// again on a cancel or an abort: found only when one comes after
	// decode finished.
	{"late-cancel-standin.json", "", []string{"vllm", "sglang"}, "ExactlyOnceRelease"},
	{"late-cancel-standin.json", "../testdata/configs/small.json", []string{"vllm", "sglang"}, "ExactlyOnceRelease"},
	// The same bug shapes written directly, with a terminal Done that
	// keeps reacting: a client cancel that arrives after decode finished
	// reports a second outcome; a late Cancelled from a source that gave
	// up turns Done into Aborted.
	{"late-cancel-finalizes-twice.json", "", []string{"vllm"}, "ExactlyOnceRelease"},
	{"late-cancel-finalizes-twice.json", "../testdata/configs/small.json", []string{"vllm"}, "ExactlyOnceRelease"},
	{"late-peer-cancel-fails-done.json", "", []string{"vllm"}, "AttemptIsolation"},
	{"late-peer-cancel-fails-done.json", "../testdata/configs/small.json", []string{"vllm"}, "AttemptIsolation"},
}

const lateFaultWalks = 2000

// walkTally runs n walks of a run from seed 1, every one of them (not only
// up to the first failure), and counts the walks that broke each
// invariant; first is the index of the first walk that broke inv, or -1
// (with inv empty, of the first that broke any).
func walkTally(c *Checker, n int, swarm bool, sched schedule, inv string) (found map[string]int, first int) {
	hz := 0
	if sched != scheduleUniform {
		hz = c.horizon(200)
	}
	invs := make([]string, n)
	var wg sync.WaitGroup
	const workers = 2
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				if o := c.walkOnce(walkSpec{seed: 1 + uint64(i), steps: 200, swarm: swarm, sched: sched, horizon: hz}); o.v != nil {
					invs[i] = o.v.Invariant
				}
			}
		}()
	}
	wg.Wait()
	found, first = map[string]int{}, -1
	for i, v := range invs {
		if v == "" {
			continue
		}
		found[v]++
		if (v == inv || inv == "") && first < 0 {
			first = i
		}
	}
	return found, first
}

// The proof that fault schedules reach late faults: 2,000 swarm walks
// under the default schedule find every late-fault variant with its
// invariant, and the first walk that finds it shrinks to a trace that
// still breaks it. The walks under every schedule are counted and logged
// (go test -run TestWalk_LateFaultVariants -v), plain and swarm, for
// comparison; only the default schedule's swarm walks are held to finding
// the bug.
func TestWalk_LateFaultVariants(t *testing.T) {
	for _, v := range lateFaultVariants {
		data, err := os.ReadFile(filepath.Join("..", "testdata", "variants", v.file))
		if err != nil {
			t.Fatal(err)
		}
		s, err := spec.Parse(v.file, data)
		if err != nil {
			t.Fatal(err)
		}
		p := interpreted(t, s)
		cfg, cfgName := defaultParsed(), "default"
		if v.config != "" {
			cfg, cfgName = loadConfigFile(t, v.config), filepath.Base(v.config)
		}
		for _, name := range v.runs {
			c := checkerFor(t, p, cfg, name)
			t.Run(v.file+"/"+cfgName+"/"+name, func(t *testing.T) {
				for _, swarm := range []bool{true, false} {
					for _, sched := range []schedule{schedulePositions, scheduleUniform, schedulePCT} {
						found, first := walkTally(c, lateFaultWalks, swarm, sched, v.invariant)
						mode := "random"
						if swarm {
							mode = "swarm"
						}
						t.Logf("%d %s walks, schedule %-9s: %4d found %s (first walk %d); all violations %v",
							lateFaultWalks, mode, sched.name(), found[v.invariant], v.invariant, first, found)
						if !swarm || sched != schedulePositions {
							continue
						}
						if first < 0 {
							t.Fatalf("%d swarm walks under the %s schedule did not find %s", lateFaultWalks, sched.name(), v.invariant)
						}
						r := c.walk(context.Background(), walkOptions{Seed: 1 + uint64(first), Walks: 1, Steps: 200, Swarm: true, sched: sched, Workers: 1})
						if r.Violation == nil || r.Violation.Violation.Invariant != v.invariant || !r.Violation.Steps[len(r.Violation.Steps)-1].Failed ||
							len(r.Violation.Steps) > r.Original {
							t.Fatalf("walk %d alone: %+v", first, r)
						}
					}
				}
			})
		}
	}
}

// The late-cancel stand-in's bug needs a cancel or an abort after decode
// finished: with every fault kind but those two (the mutation
// configuration: one handoff, every fault kind with a budget of one) the
// exhaustive search finds nothing, liveness included; with them, its
// shortest trace ends with the cancel delivered to, or the abort of, a
// destination whose decode finished.
func TestLateCancelStandIn_NeedsALateFault(t *testing.T) {
	data, err := os.ReadFile("../testdata/variants/late-cancel-standin.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := spec.Parse("late-cancel-standin.json", data)
	if err != nil {
		t.Fatal(err)
	}
	p := interpreted(t, s)
	cfg := loadConfigFile(t, "mutation.json")
	for _, run := range cfg.Runs {
		quiet := *cfg
		quiet.Budget[system.Cancel], quiet.Budget[steps.Fault(t, "abort")] = 0, 0
		c, err := New(p, &quiet, run)
		if err != nil {
			t.Fatal(err)
		}
		r := c.checkRun(context.Background(), Limits{Workers: 2, Liveness: true}, nil)
		if r.Violation != nil || !r.Complete {
			t.Fatalf("%s without cancel and abort: complete=%v, violation %v", run.Name, r.Complete, r.Violation)
		}
		quietStates := r.Stats.States
		c, err = New(p, cfg, run)
		if err != nil {
			t.Fatal(err)
		}
		r = c.checkRun(context.Background(), Limits{Workers: 2}, nil)
		if run.Engine.String() == "trtllm" {
			// No reservation, no decode: nothing finishes to be cancelled.
			if r.Violation != nil {
				t.Fatalf("%s: %v", run.Name, r.Violation.Violation)
			}
			continue
		}
		if r.Violation == nil || r.Violation.Violation.Invariant != "ExactlyOnceRelease" {
			t.Fatalf("%s with cancel and abort: %+v", run.Name, r.Violation)
		}
		steps := r.Violation.Steps
		last := steps[len(steps)-1].Move
		finished := false
		for _, st := range steps[:len(steps)-1] {
			finished = finished || st.Move.Kind.String() == "decode-finish"
		}
		if !finished || (last.Kind.String() != "abort" && last.Kind.String() != "deliver-cancel") {
			t.Fatalf("%s: shortest trace %v: want decode-finish, then the cancel or abort that breaks it", run.Name, steps)
		}
		t.Logf("%s: %d states without cancel and abort, no violation; with them, %s after %d steps, last %s", run.Name, quietStates, r.Violation.Violation.Invariant, len(steps), last)
	}
}

var compareSchedules = flag.Bool("compare-schedules", false,
	"run TestWalk_CompareSchedules: every schedule on every variant and on every mutant of the built-in tables (a few minutes)")

// TestWalk_CompareSchedules measures the schedules against each other, on
// request (go test ./checker -run TestWalk_CompareSchedules -compare-schedules -v):
//
//   - for every variant of testdata/variants that parses, on the default
//     and the small configuration, every run: how many of 2,000 walks from
//     seed 1 find a violation, per schedule, plain and swarm;
//   - for every mutant of the built-in tables (handoffcheck mutate's), on
//     the mutation configuration and the default one: how many mutants 200
//     walks per run detect, per schedule, plain and swarm.
//
// It holds the default schedule to detecting at least as many mutants as
// the uniform one, in every mode.
func TestWalk_CompareSchedules(t *testing.T) {
	if !*compareSchedules {
		t.Skip("a measurement: give -compare-schedules")
	}
	scheds := []schedule{scheduleUniform, schedulePositions, schedulePCT}
	configs := []struct {
		name string
		cfg  *system.Config
	}{{"default", defaultParsed()}, {"small", loadConfigFile(t, "../testdata/configs/small.json")}}
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "variants", "*.json"))
	t.Logf("walks of 2,000 from seed 1 that find a violation: random walks (uniform, positions, pct) | swarm walks (uniform, positions, pct)")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		s, err := spec.Parse(file, data)
		if err != nil {
			continue
		}
		p := interpreted(t, s)
		for _, cf := range configs {
			for _, run := range cf.cfg.Runs {
				c := checkerFor(t, p, cf.cfg, run.Name)
				line := fmt.Sprintf("%-26s %-7s %-24s", filepath.Base(file), cf.name, run.Name)
				for _, swarm := range []bool{false, true} {
					for _, sched := range scheds {
						found, _ := walkTally(c, lateFaultWalks, swarm, sched, "")
						n := 0
						for _, k := range found {
							n += k
						}
						line += fmt.Sprintf(" %5d", n)
					}
					line += " |"
				}
				t.Log(line)
			}
		}
	}
	mutants := spec.Mutants(spec.Default(), spec.Operators)
	for _, cf := range []struct {
		name string
		cfg  *system.Config
	}{{"mutation", loadConfigFile(t, "mutation.json")}, configs[0]} {
		for _, swarm := range []bool{false, true} {
			detected := map[schedule]int{}
			for _, sched := range scheds {
				var mu sync.Mutex
				parallel(2, len(mutants), func(i int) {
					it, err := interp.New(mutants[i].Spec)
					if err != nil {
						panic(err)
					}
					p, err := system.FromStepper(mutants[i].Name, mutants[i].Spec, it)
					if err != nil {
						panic(err)
					}
					for _, run := range cf.cfg.Runs {
						c, err := New(p, cf.cfg, run)
						if err != nil {
							panic(err)
						}
						hz := 0
						if sched != scheduleUniform {
							hz = c.horizon(200)
						}
						for w := 0; w < 200; w++ {
							if c.walkOnce(walkSpec{seed: 1 + uint64(w), steps: 200, swarm: swarm, sched: sched, horizon: hz}).v != nil {
								mu.Lock()
								detected[sched]++
								mu.Unlock()
								return
							}
						}
					}
				})
				t.Logf("%-8s swarm=%-5v %-9s: %d of %d mutants detected by 200 walks per run", cf.name, swarm, sched.name(), detected[sched], len(mutants))
			}
			if detected[schedulePositions] < detected[scheduleUniform] {
				t.Errorf("%s swarm=%v: the default schedule detected %d mutants, uniform %d", cf.name, swarm, detected[schedulePositions], detected[scheduleUniform])
			}
		}
	}
}
