package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/spec"
)

type walkJSON struct {
	Mode     string `json:"mode"`
	Schedule string `json:"schedule"`
	Verdict  string `json:"verdict"`
	Steps    int    `json:"steps"`
	Seed     uint64 `json:"seed"`
	Runs     []struct {
		Run       string   `json:"run"`
		Walks     int      `json:"walks"`
		Moves     int64    `json:"moves"`
		Distinct  int      `json:"distinct_states"`
		ElapsedMS *float64 `json:"elapsed_ms"`
		Failing   int      `json:"failing_walk"`
		Seed      uint64   `json:"seed"`
		Faults    []string `json:"faults"`
		Invariant string   `json:"invariant"`
		Trace     []struct {
			Move string `json:"move"`
		} `json:"trace"`
		Reproduce string `json:"reproduce"`
		Schedule  []struct {
			Fault string `json:"fault"`
			Step  int    `json:"step"`
		} `json:"fault_schedule"`
		Horizon   int              `json:"fault_horizon"`
		Coverage  []jsonCoverage   `json:"coverage"`
		Lengths   lengthSummary    `json:"walk_lengths"`
		Ends      map[string]int   `json:"walk_ends"`
		MoveKinds map[string]int64 `json:"move_kinds"`
		Committed map[string]int64 `json:"faults_committed"`
	} `json:"runs"`
}

func walkReportJSON(t *testing.T, rep *Report, opt TextOptions) *walkJSON {
	t.Helper()
	data, err := rep.marshalWalks(opt)
	if err != nil {
		t.Fatal(err)
	}
	var j walkJSON
	if err := json.Unmarshal(data, &j); err != nil {
		t.Fatalf("the walk JSON report does not parse: %v\n%s", err, data)
	}
	if len(j.Runs) != len(rep.Runs) {
		t.Fatalf("%d runs in JSON, %d in the report", len(j.Runs), len(rep.Runs))
	}
	return &j
}

// Walks that find nothing: the figures on a fixed seed are pinned, for
// every schedule, and they are the sums of the walks run one at a time
// (walk i runs on seed Seed+i): moves, lengths, move kinds and row
// firings add up, and every state a walk visits is one the exhaustive
// search reaches, so the distinct states lie between the most one walk
// visits and the run's reachable states.
func TestWalk_ReportFigures(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/small.json")
	runs := []system.Run{runNamed(t, cfg, "vllm"), runNamed(t, cfg, "sglang")}
	pinned := map[schedule]map[string][2]int64{
		scheduleUniform:   {"vllm": {146, 40}, "sglang": {162, 68}},
		schedulePositions: {"vllm": {321, 91}, "sglang": {377, 129}},
		schedulePCT:       {"vllm": {354, 113}, "sglang": {401, 131}},
	}
	for _, sched := range []schedule{scheduleUniform, schedulePositions, schedulePCT} {
		t.Run(sched.name(), func(t *testing.T) {
			opts := Limits{Seed: 7, Walks: 40, Steps: 30, Schedule: sched.name(), Workers: 2}
			rep, err := Check(context.Background(), system.Generated(), cfg, runs, opts)
			if err != nil {
				t.Fatal(err)
			}
			j := walkReportJSON(t, rep, TextOptions{})
			text := rep.textWalks(TextOptions{})
			if rep.violated() || rep.Interrupted || j.Verdict != "pass" || j.Mode != "walks" || j.Schedule != sched.name() || j.Steps != 30 || j.Seed != 7 {
				t.Fatalf("walks of the correct tables: violated=%v interrupted=%v, JSON %q %q %q steps %d seed %d", rep.violated(), rep.Interrupted, j.Verdict, j.Mode, j.Schedule, j.Steps, j.Seed)
			}
			for i, x := range rep.walks.Runs {
				c := rep.Checker(i)
				t.Logf("%s: %d walks, %d moves, %d distinct", x.Run.Name, x.Walks, x.Moves, x.Distinct)
				if got := [2]int64{x.Moves, int64(x.Distinct)}; got != pinned[sched][x.Run.Name] {
					t.Errorf("%s: %d moves, %d distinct states; pinned %v", x.Run.Name, x.Moves, x.Distinct, pinned[sched][x.Run.Name])
				}
				if x.Walks != opts.Walks || x.Failing != -1 || x.Violation != nil || x.Interrupted {
					t.Errorf("%s: %d walks, failing %d", x.Run.Name, x.Walks, x.Failing)
				}
				if (sched == scheduleUniform) != (x.stats.Horizon == 0) {
					t.Errorf("%s: horizon %d under the %s schedule", x.Run.Name, x.stats.Horizon, sched.name())
				}
				var moves int64
				most := 0
				alone := system.NewCoverage(c.Protocol().Spec())
				var kinds [system.NumMoveKinds]int64
				var ended [numWalkEnds]int
				for w := 0; w < opts.Walks; w++ {
					one := c.walk(context.Background(), walkOptions{Seed: opts.Seed + uint64(w), Walks: 1, Steps: opts.Steps, sched: sched, Workers: 1})
					if one.Walks != 1 || one.Moves > int64(opts.Steps) || one.Moves == 0 || one.Distinct > int(one.Moves) {
						t.Errorf("%s walk %d alone: %d walks, %d moves, %d distinct", x.Run.Name, w, one.Walks, one.Moves, one.Distinct)
					}
					if len(one.stats.Lengths) != 1 || int64(one.stats.Lengths[0]) != one.Moves || x.stats.Lengths[w] != one.stats.Lengths[0] {
						t.Errorf("%s walk %d alone: lengths %v, %d moves; in the run: %d", x.Run.Name, w, one.stats.Lengths, one.Moves, x.stats.Lengths[w])
					}
					if one.stats.Horizon != x.stats.Horizon {
						t.Errorf("%s walk %d alone: horizon %d, in the run %d", x.Run.Name, w, one.stats.Horizon, x.stats.Horizon)
					}
					moves += one.Moves
					most = max(most, one.Distinct)
					addCoverage(alone, one.stats.Coverage)
					for k, n := range one.stats.Kinds {
						kinds[k] += n
					}
					for e, n := range one.stats.Ended {
						ended[e] += n
					}
				}
				reachable := len(exploreRef(t, c, 0).keys)
				if x.Moves != moves || x.Distinct < most || x.Distinct > reachable || int64(x.Distinct) > x.Moves {
					t.Errorf("%s: %d moves, %d distinct; walks alone: %d moves, at most %d distinct each; %d states reachable",
						x.Run.Name, x.Moves, x.Distinct, moves, most, reachable)
				}
				var sum int64
				for _, n := range x.stats.Kinds {
					sum += n
				}
				if sum != x.Moves || kinds != x.stats.Kinds || ended != x.stats.Ended || ended[endNothingEnabled]+ended[endStepBound] != opts.Walks {
					t.Errorf("%s: move kinds add up to %d of %d moves; alone %v, in the run %v; ends alone %v, in the run %v",
						x.Run.Name, sum, x.Moves, kinds, x.stats.Kinds, ended, x.stats.Ended)
				}
				if fmt.Sprint(alone.Rows) != fmt.Sprint(x.stats.Coverage.Rows) {
					t.Errorf("%s: row firings of the walks alone %v, in the run %v", x.Run.Name, alone.Rows, x.stats.Coverage.Rows)
				}
				l := x.stats.lengthSummary()
				if l.Min > l.Median || l.Median > l.P90 || l.P90 > l.Max || l.Max > opts.Steps || l.Min < 1 {
					t.Errorf("%s: walk lengths %+v", x.Run.Name, l)
				}
				jr := j.Runs[i]
				if jr.Run != x.Run.Name || jr.Walks != x.Walks || jr.Moves != x.Moves || jr.Distinct != x.Distinct || jr.Failing != -1 || jr.ElapsedMS == nil || jr.Invariant != "" ||
					jr.Horizon != x.stats.Horizon || jr.Lengths != l || jr.Ends["nothing_enabled"] != x.stats.Ended[endNothingEnabled] || jr.Ends["step_bound"] != x.stats.Ended[endStepBound] ||
					jr.MoveKinds["route-prefill"] != x.stats.Kinds[system.MvRoutePrefill] || len(jr.MoveKinds) != len(system.MoveKinds()) || len(jr.Committed) != int(system.NumFaults) {
					t.Errorf("%s: JSON %+v differs from the result", x.Run.Name, jr)
				}
				rc := x.rowCoverage(c.Protocol().Spec())
				if len(jr.Coverage) != 2 || jr.Coverage[0].Fired != rc[0].Fired || jr.Coverage[1].Total != rc[1].Total || len(jr.Coverage[1].Dead) != len(rc[1].Dead) {
					t.Errorf("%s: JSON coverage %+v, result %+v", x.Run.Name, jr.Coverage, rc)
				}
				wantLine(t, text, fmt.Sprintf("run %s (%s, engine %s): 40 random walks of up to 30 moves (seed 7, schedule %s): no violation\n  %s moves, %s distinct states visited, elapsed ",
					x.Run.Name, x.Run.Policy, x.Run.Engine, sched.name(), commas(x.Moves), commas(int64(x.Distinct))))
				wantLine(t, text, fmt.Sprintf("\n  coverage: source rows %d/%d fired, destination rows %d/%d fired\n", rc[0].Fired, rc[0].Total, rc[1].Fired, rc[1].Total))
				stats := rep.textWalks(TextOptions{Stats: true})
				wantLine(t, stats, fmt.Sprintf("  walk lengths: min %d, median %d, p90 %d, max %d moves; ended: %d with nothing enabled, %d at the step bound, 0 on a violation\n",
					l.Min, l.Median, l.P90, l.Max, x.stats.Ended[endNothingEnabled], x.stats.Ended[endStepBound]))
				wantLine(t, stats, fmt.Sprintf("  moves taken: route-prefill %d, ", x.stats.Kinds[system.MvRoutePrefill]))
				wantLine(t, stats, "  "+rc[1].Dead[0]+"\n")
			}
			// Every walk ran: the text does not narrow the figures to a prefix.
			wantNoLine(t, text, "in walks")
			wantNoLine(t, text, "walk lengths")
			wantNoLine(t, rep.textWalks(TextOptions{NoTiming: true}), "elapsed")
			if q := walkReportJSON(t, rep, TextOptions{NoTiming: true}); q.Runs[0].ElapsedMS != nil {
				t.Errorf("JSON without timing has an elapsed time")
			}
		})
	}
}

// A failing walk: the figures cover walks 0 to the failing one, the
// report names it, its seed reproduces it alone, and both reports show
// the shrunk counterexample.
func TestWalk_FailingReport(t *testing.T) {
	s := spec.Default()
	override(t, s, spec.Source, "Pinned", "LeaseRenewed", spec.SourceFirst, "Released",
		"DisarmLease", "ReleaseSource", "ReportSourceReleased", "Complete")
	cfg := mustConfig(t, twoByTwo)
	for _, sched := range []schedule{scheduleUniform, schedulePositions, schedulePCT} {
		t.Run(sched.name(), func(t *testing.T) { failingReport(t, interpreted(t, s), cfg, sched) })
	}
}

func failingReport(t *testing.T, p *system.Protocol, cfg *system.Config, sched schedule) {
	opts := Limits{Seed: 11, Walks: 300, Steps: 80, Schedule: sched.name(), Workers: 2}
	rep, err := Check(context.Background(), p, cfg, cfg.Runs[:1], opts)
	if err != nil {
		t.Fatal(err)
	}
	rep.Reproduce[0] = "handoffcheck walk --seed N --walks 1"
	x := rep.walks.Runs[0]
	c := rep.Checker(0)
	if x.Violation == nil || x.Failing < 0 {
		t.Fatalf("300 walks found nothing")
	}
	if x.Walks != x.Failing+1 || x.Seed != opts.Seed+uint64(x.Failing) || x.Original == 0 || len(x.Violation.Steps) > x.Original || len(x.Faults) == 0 {
		t.Errorf("failing walk %d of %d counted, seed %d, %d moves shrunk to %d, faults %v", x.Failing, x.Walks, x.Seed, x.Original, len(x.Violation.Steps), x.Faults)
	}
	// The figures are those of walks 0..failing run on their own.
	prefix := c.walk(context.Background(), walkOptions{Seed: opts.Seed, Walks: x.Failing, Steps: opts.Steps, sched: sched, Workers: 1})
	alone := c.walk(context.Background(), walkOptions{Seed: x.Seed, Walks: 1, Steps: opts.Steps, sched: sched, Workers: 1})
	if prefix.Violation != nil || alone.Failing != 0 || alone.Original != x.Original || x.Moves != prefix.Moves+int64(alone.Original) ||
		fmt.Sprint(alone.schedule) != fmt.Sprint(x.schedule) {
		t.Errorf("%d moves in walks 0-%d; the %d walks before: %d moves (violation %v); the failing one alone: walk %d, %d moves",
			x.Moves, x.Failing, x.Failing, prefix.Moves, prefix.Violation != nil, alone.Failing, alone.Original)
	}
	// The failing walk is counted: it ended on the violation, after the
	// moves it took before shrinking.
	st := x.stats
	if st.Ended[endViolation] != 1 || len(st.Lengths) != x.Walks || st.Lengths[x.Failing] != x.Original {
		t.Errorf("walks ended %v, lengths %v; failing walk %d took %d moves", st.Ended, st.Lengths, x.Failing, x.Original)
	}
	// A schedule places the faults the failing walk could commit; the
	// uniform one has none.
	if (sched == scheduleUniform) != (len(x.schedule) == 0) {
		t.Errorf("%s: failing walk's schedule %v", sched.name(), x.schedule)
	}
	sch := ""
	if len(x.schedule) > 0 {
		var at []string
		for _, f := range x.schedule {
			if f.Step < 0 || f.Step >= st.Horizon {
				t.Errorf("%s comes due outside the horizon of %d moves", f.text(), st.Horizon)
			}
			at = append(at, fmt.Sprintf("%s at %d", f.Fault, f.Step))
		}
		sch = "; schedule: " + strings.Join(at, ", ")
	}
	text := rep.textWalks(TextOptions{})
	wantLine(t, text, fmt.Sprintf("): 300 random walks of up to 80 moves (seed 11, schedule %s): VIOLATION %s\n", sched.name(), x.Violation.Violation.Invariant))
	wantLine(t, text, fmt.Sprintf("  %s moves, %s distinct states visited in walks 0-%d, elapsed ", commas(x.Moves), commas(int64(x.Distinct)), x.Failing))
	wantLine(t, text, fmt.Sprintf("  walk %d failed after %d moves (faults: %s%s); shrunk to %d steps\n", x.Failing, x.Original, strings.Join(x.Faults, ", "), sch, len(x.Violation.Steps)))
	wantLine(t, text, "  reproduce: handoffcheck walk --seed N --walks 1\n")
	wantLine(t, text, indent(c.formatCounterexampleFull(x.Violation, false), "  "))
	j := walkReportJSON(t, rep, TextOptions{})
	jr := j.Runs[0]
	if j.Verdict != "violation" || jr.Walks != x.Walks || jr.Moves != x.Moves || jr.Distinct != x.Distinct || jr.Failing != x.Failing ||
		jr.Seed != x.Seed || jr.Invariant != x.Violation.Violation.Invariant || len(jr.Trace) != len(x.Violation.Steps) || jr.Reproduce != rep.Reproduce[0] ||
		len(jr.Schedule) != len(x.schedule) || jr.Ends["violation"] != 1 {
		t.Errorf("JSON verdict %q, %+v; result %+v", j.Verdict, jr, x)
	}
	// Each JSON step names the rows it fired.
	data, err := rep.marshalWalks(TextOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range x.Violation.Steps {
		for _, f := range st.Fired {
			d, _ := json.Marshal(c.describeFiring(f))
			if !strings.Contains(string(data), string(d)) {
				t.Errorf("the JSON report lacks the firing %s", d)
			}
		}
	}
}

// Swarm walks switch off exactly the fault moves the table lets them.
func TestFaultKinds_Swarm(t *testing.T) {
	var want []system.MoveKind
	for f := system.Fault(0); f < system.NumFaults; f++ {
		if system.FaultKinds[f].Swarm {
			want = append(want, f.Move())
		}
	}
	if !slices.Equal(faultKinds, want) || len(want) == 0 {
		t.Errorf("walks switch off %v, want %v", faultKinds, want)
	}
}
