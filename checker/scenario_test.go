package checker

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// TestScenarios runs the named scenarios of docs/lifecycle.md section 5, one
// file each in testdata/scenarios. Each file opens with a paragraph saying
// what it shows; its commands step the composed system move by move and
// its golden output is the rows fired and the ledgers after each step.
// Rewrite the goldens with: go test ./checker -run TestScenarios -rewrite
//
// Commands:
//
//	config run=NAME        (input: a configuration, as for check --config)
//	step                   (input: one move per line, as in traces)
//	state                  full state: machines, handoffs, workers
//	moves                  the moves enabled now
//	quote                  what each handoff would move to each decode worker
//	drained                whether everything is released
//	reset                  start the same configuration over
//	drain                  take protocol moves (no faults), the first
//	                       enabled each time, heartbeats last, until
//	                       nothing can happen: cleanup needs no help
//	explore [max-states=N] explore every ordering from the configuration
//
// A violation on any step fails the test, whatever the golden says: the
// scenarios show the lifecycle holding.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "scenarios", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario files: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txt")
		t.Run(name, func(t *testing.T) {
			var cfg *system.Config
			var sess *session
			var prev []string
			// apply performs one move and renders it with the lines of the
			// state that changed.
			apply := func(d *datadriven.TestData, m system.Move) []string {
				r, err := sess.Apply(m)
				if err != nil {
					return []string{fmt.Sprintf("%s\n  error: %v", m, err)}
				}
				if r.Violation != nil {
					t.Errorf("%s: %s violated %s", d.Pos, m, r.Violation.Error())
				}
				out := sess.FormatStep(r)
				now := sess.checker().DescribeState(sess.State())
				for i, l := range now {
					if i >= len(prev) || prev[i] != l {
						out = append(out, "  "+l)
					}
				}
				prev = now
				return out
			}
			datadriven.RunTest(t, file, func(t *testing.T, d *datadriven.TestData) string {
				need := func() bool {
					if sess == nil {
						d.Fatalf(t, "%s: no config yet", d.Pos)
					}
					return true
				}
				switch d.Cmd {
				case "config":
					var run string
					d.ScanArgs(t, "run", &run)
					c, err := system.ParseConfig(d.Pos, []byte(d.Input))
					if err != nil {
						return "error: " + err.Error()
					}
					cfg = c
					var chosen *system.Run
					for i := range c.Runs {
						if c.Runs[i].Name == run {
							chosen = &c.Runs[i]
						}
					}
					if chosen == nil {
						return fmt.Sprintf("error: no run named %q", run)
					}
					ck, err := New(system.Generated(), c, *chosen)
					if err != nil {
						return "error: " + err.Error()
					}
					sess = newSession(ck)
					prev = sess.checker().DescribeState(sess.State())
					return strings.Join(prev, "\n")
				case "step":
					need()
					var out []string
					for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
						line = strings.TrimSpace(line)
						if line == "" {
							continue
						}
						m, err := system.ParseMove(line, nil)
						if err != nil {
							d.Fatalf(t, "%s: %q: %v", d.Pos, line, err)
						}
						out = append(out, apply(d, m)...)
					}
					return strings.Join(out, "\n")
				case "reset":
					need()
					sess = newSession(sess.checker())
					prev = sess.checker().DescribeState(sess.State())
					return strings.Join(prev, "\n")
				case "drain":
					need()
					var out []string
					for i := 0; i < 200; i++ {
						var pick *system.Move
						for _, m := range sess.checker().MovesInto(sess.State(), nil) {
							if _, fault := m.Kind.Spends(); fault {
								continue
							}
							if m.Kind == system.MvTimer && m.Arg == int8(model.TimerHeartbeat) {
								if pick == nil {
									mm := m
									pick = &mm
								}
								continue
							}
							mm := m
							pick = &mm
							break
						}
						if pick == nil {
							break
						}
						out = append(out, apply(d, *pick)...)
					}
					if sess.checker().Drained(sess.State()) {
						out = append(out, "drained")
					} else {
						out = append(out, "NOT DRAINED: "+sess.State().W.DescribeHeld())
						t.Errorf("%s: drain did not drain", d.Pos)
					}
					return strings.Join(out, "\n")
				case "state":
					need()
					return strings.Join(sess.checker().DescribeState(sess.State()), "\n")
				case "moves":
					need()
					var out []string
					for _, m := range sess.checker().MovesInto(sess.State(), nil) {
						out = append(out, m.String())
					}
					return strings.Join(out, "\n")
				case "quote":
					need()
					var out []string
					w := sess.checker().World()
					for h := 0; h < w.NumHandoffs(); h++ {
						q := w.SourceQuote(h)
						out = append(out, fmt.Sprintf("h%d source: prompt=%d transferred=%d compute_blocks=%d pinned_blocks=%d",
							h, q.PromptTokens, q.TransferredTokens, q.ComputeBlocks, q.PinnedBlocks))
						for _, dw := range w.DecodeWorkers() {
							dq := w.DestQuote(h, dw, false)
							out = append(out, fmt.Sprintf("h%d on decode%d: hit_tokens=%d locked=%d reserved=%d bytes=%d full_hit=%v",
								h, dw, dq.HitTokens, dq.LockedBlocks, dq.ReservedBlocks, dq.PayloadBytes, dq.FullHit))
						}
					}
					return strings.Join(out, "\n")
				case "drained":
					need()
					if sess.checker().Drained(sess.State()) {
						return "drained"
					}
					return "not drained: " + sess.State().W.DescribeHeld()
				case "explore":
					if cfg == nil {
						d.Fatalf(t, "%s: no config yet", d.Pos)
					}
					lim := Limits{Liveness: true, Workers: 2}
					if d.HasArg("max-states") {
						d.ScanArgs(t, "max-states", &lim.MaxStates)
					}
					rep, err := Check(context.Background(), system.Generated(), cfg, cfg.Runs, lim)
					if err != nil {
						return "error: " + err.Error()
					}
					var out []string
					for _, r := range rep.Runs {
						verdict := "complete, no violation"
						if r.Violation != nil {
							verdict = "VIOLATION " + r.Violation.Violation.Invariant
							t.Errorf("%s: run %s violated %s", d.Pos, r.Run.Name, r.Violation.Violation.Error())
						} else if !r.Complete {
							verdict = "incomplete (" + r.StopReason + ")"
						}
						out = append(out, fmt.Sprintf("run %s: %s: %d distinct states, %d transitions, depth %d",
							r.Run.Name, verdict, r.Stats.States, r.Stats.Transitions, r.Stats.Depth))
					}
					return strings.Join(out, "\n")
				}
				d.Fatalf(t, "%s: unknown command %q", d.Pos, d.Cmd)
				return ""
			})
		})
	}
}
