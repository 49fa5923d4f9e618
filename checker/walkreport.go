package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// walkReport is what the walk form of a Report (Limits.Walks) adds to
// it: the options the walks ran with, and each run's walks.
type walkReport struct {
	Opts walkOptions
	Runs []*walkResult
}

// checkWalks runs seeded random walks on each of the given runs. The
// report's Runs give each run's violation and the seed of its failing
// walk, for the caller's Reproduce.
func checkWalks(ctx context.Context, p *system.Protocol, cfg *system.Config, runs []system.Run, lim Limits) (*Report, error) {
	opts := walkOptionsOf(lim)
	var err error
	if opts.sched, err = parseSchedule(opts.Schedule); err != nil {
		return nil, err
	}
	w := &walkReport{Opts: opts}
	rep := &Report{Protocol: p.Name(), walks: w}
	notRun, err := eachRun(ctx, p, cfg, runs, opts.From, func(c *Checker) {
		r := c.walk(ctx, opts)
		c.withPrefix(r.Violation)
		w.Runs = append(w.Runs, r)
		rep.Runs = append(rep.Runs, &Result{Run: r.Run, Violation: r.Violation, Seed: r.Seed, Coverage: r.stats.Coverage})
		rep.checkers = append(rep.checkers, c)
	})
	if err != nil {
		return nil, err
	}
	rep.NotRun, rep.Interrupted = notRun, len(notRun) > 0
	for _, r := range w.Runs {
		rep.Interrupted = rep.Interrupted || r.Interrupted
	}
	rep.Reproduce = make([]string, len(rep.Runs))
	return rep, nil
}

func (r *walkReport) mode() string {
	if r.Opts.Swarm {
		return "swarm walks"
	}
	return "random walks"
}

// textWalks renders a walk report for people. With opt.Stats it
// describes the walks of each run: the rows that never fired, the walk
// lengths and why the walks ended, the moves taken and the faults
// committed by kind.
func (r *Report) textWalks(opt TextOptions) string {
	w := r.walks
	var b strings.Builder
	for i, x := range w.Runs {
		c := r.checkers[i]
		verdict := "no violation"
		if x.Violation != nil {
			verdict = "VIOLATION " + x.Violation.Violation.Invariant
		} else if x.Interrupted {
			verdict = "interrupted, no violation found"
		}
		walks, shard := w.Opts.Walks, ""
		if w.Opts.Shards > 0 {
			lo, hi := shardRange(w.Opts.Walks, w.Opts.Shard, w.Opts.Shards)
			walks, shard = hi-lo, fmt.Sprintf("shard %d of %d: walks %d-%d of %d, ", w.Opts.Shard, w.Opts.Shards, lo, hi-1, w.Opts.Walks)
		}
		fmt.Fprintf(&b, "run %s (%s, engine %s): %d %s of up to %d moves (%sseed %d, schedule %s): %s\n",
			x.Run.Name, x.Run.Policy, x.Run.Engine, walks, w.mode(), w.Opts.Steps, shard, w.Opts.Seed, w.Opts.sched.name(), verdict)
		fmt.Fprintf(&b, "  %s moves, %s distinct states visited", commas(x.Moves), commas(int64(x.Distinct)))
		if x.Walks < walks {
			// Walks after the first failure (or the interrupt) are not
			// counted: which of them ran depends on scheduling.
			fmt.Fprintf(&b, " in walks %d-%d", x.FirstWalk, x.FirstWalk+x.Walks-1)
		}
		if !opt.NoTiming {
			fmt.Fprintf(&b, ", elapsed %s", x.Elapsed.Round(1e6))
		}
		b.WriteString("\n")
		var parts []string
		for _, rc := range x.rowCoverage(c.Protocol().Spec()) {
			parts = append(parts, fmt.Sprintf("%s rows %d/%d fired", rc.Role, rc.Fired, rc.Total))
		}
		fmt.Fprintf(&b, "  coverage: %s\n", strings.Join(parts, ", "))
		if x.Violation == nil {
			b.WriteString(vacuityText(x.exercises(c), walksLead))
		}
		if opt.Stats {
			b.WriteString(x.statsText(c))
		}
		if x.Violation != nil {
			sched := ""
			if len(x.schedule) > 0 {
				var at []string
				for _, f := range x.schedule {
					at = append(at, f.text())
				}
				sched = "; schedule: " + strings.Join(at, ", ")
			}
			fmt.Fprintf(&b, "  walk %d failed after %d moves (faults: %s%s); shrunk to %d steps\n",
				x.Failing, x.Original, strings.Join(x.Faults, ", "), sched, len(x.Violation.Steps))
			if r.Reproduce[i] != "" {
				fmt.Fprintf(&b, "  reproduce: %s\n", r.Reproduce[i])
			}
			b.WriteString(indent(c.formatCounterexampleFull(x.Violation, opt.FullStates), "  "))
			if opt.Mermaid {
				fmt.Fprintf(&b, "```mermaid\n%s```\n", c.mermaidSequence(x.Violation))
			}
		}
	}
	for _, run := range r.NotRun {
		fmt.Fprintf(&b, "run %s (%s, engine %s): not run (interrupted)\n", run.Name, run.Policy, run.Engine)
	}
	if r.Interrupted {
		b.WriteString("interrupted: the verdicts above cover only the walks that ran\n")
	}
	return b.String()
}

// rowCoverage reports which rows of each role table the walks counted
// fired, under the run's policy.
func (r *walkResult) rowCoverage(s *spec.Spec) []roleCoverage {
	return (&Result{Run: r.Run, Coverage: r.stats.Coverage}).rowCoverage(s)
}

// exercises is whether the walks exercised each invariant they judge.
func (r *walkResult) exercises(c *Checker) []exercise {
	var fired model.Triggers
	if cov := r.stats.Coverage; cov != nil {
		fired = cov.Fired
	}
	violated := ""
	if r.Violation != nil {
		violated = r.Violation.Violation.Invariant
	}
	return exercises(walkInvariants, fired, c.World(), violated)
}

// walksLead introduces the invariants walks did not exercise: walks
// sample, so that is no proof that nothing could trigger them.
const walksLead = "not exercised by these walks"

// statsText is the --stats part of a run's text: rows never fired, walk
// lengths and ends, moves and faults by kind.
func (r *walkResult) statsText(c *Checker) string {
	var b strings.Builder
	for _, rc := range r.rowCoverage(c.Protocol().Spec()) {
		if len(rc.Dead) == 0 {
			continue
		}
		fmt.Fprintf(&b, "  %s rows never fired (%d):\n", rc.Role, len(rc.Dead))
		for _, d := range rc.Dead {
			fmt.Fprintf(&b, "    %s\n", d)
		}
	}
	st := &r.stats
	l := st.lengthSummary()
	fmt.Fprintf(&b, "  walk lengths: min %d, median %d, p90 %d, max %d moves; ended: %s with nothing enabled, %s at the step bound, %s on a violation\n",
		l.Min, l.Median, l.P90, l.Max, commas(int64(st.Ended[endNothingEnabled])), commas(int64(st.Ended[endStepBound])), commas(int64(st.Ended[endViolation])))
	if st.Horizon > 0 {
		fmt.Fprintf(&b, "  fault positions drawn over the first %d moves (one and a half times a fault-free walk)\n", st.Horizon)
	}
	var kinds []string
	for _, k := range st.moveKinds() {
		if k.Count > 0 {
			kinds = append(kinds, fmt.Sprintf("%s %s", k.Kind, commas(k.Count)))
		}
	}
	fmt.Fprintf(&b, "  moves taken: %s\n", strings.Join(kinds, ", "))
	var faults []string
	for f, n := range st.Faults {
		if n > 0 {
			faults = append(faults, fmt.Sprintf("%s %s", system.Fault(f), commas(n)))
		}
	}
	if len(faults) == 0 {
		faults = []string{"none"}
	}
	fmt.Fprintf(&b, "  faults committed: %s\n", strings.Join(faults, ", "))
	return b.String()
}

type jsonWalk struct {
	Run         string     `json:"run"`
	Policy      string     `json:"policy"`
	Engine      string     `json:"engine"`
	Walks       int        `json:"walks"`
	Moves       int64      `json:"moves"`
	Distinct    int        `json:"distinct_states"`
	ElapsedMS   *float64   `json:"elapsed_ms,omitempty"`
	Interrupted bool       `json:"interrupted,omitempty"`
	Failing     int        `json:"failing_walk"`
	Seed        uint64     `json:"seed,omitempty"`
	Faults      []string   `json:"faults,omitempty"`
	Invariant   string     `json:"invariant,omitempty"`
	Detail      string     `json:"detail,omitempty"`
	Trace       []jsonStep `json:"trace,omitempty"`
	// FromTrace is how many of the trace's first steps are the ones the
	// walks started after (--from-trace).
	FromTrace int    `json:"from_trace_steps,omitempty"`
	Reproduce string `json:"reproduce,omitempty"`
	// FaultSchedule is the failing walk's fault schedule.
	FaultSchedule []jsonScheduledFault `json:"fault_schedule,omitempty"`
	FaultHorizon  int                  `json:"fault_horizon,omitempty"`
	Coverage      []jsonCoverage       `json:"coverage"`
	Vacuity       []jsonExercise       `json:"vacuity"`
	Lengths       jsonLengths          `json:"walk_lengths"`
	Ends          map[string]int       `json:"walk_ends"`
	MoveKinds     map[string]int64     `json:"move_kinds"`
	Committed     map[string]int64     `json:"faults_committed"`
	// FirstWalk and LengthCounts (walks by length) are given by a shard,
	// for merge: a median is not made of medians.
	FirstWalk    int   `json:"first_walk,omitempty"`
	LengthCounts []int `json:"walk_length_counts,omitempty"`
}

// jsonWalkReport is a walk report as JSON, and what merge reads.
type jsonWalkReport struct {
	Mode     string     `json:"mode"`
	Schedule string     `json:"schedule"`
	Verdict  string     `json:"verdict"`
	Steps    int        `json:"steps"`
	Seed     uint64     `json:"seed"`
	Shard    *jsonShard `json:"shard,omitempty"`
	Runs     []jsonWalk `json:"runs"`
	NotRun   []string   `json:"not_run,omitempty"`
}

// jsonShard says which part of a search a report covers: shard Index of
// Count over Walks walks, or, merged, every shard (Merged).
type jsonShard struct {
	Index  int  `json:"index"`
	Count  int  `json:"count"`
	Walks  int  `json:"walks_total"`
	Merged bool `json:"merged,omitempty"`
}

type jsonScheduledFault struct {
	Fault string `json:"fault"`
	Step  int    `json:"step"`
}

type jsonLengths struct {
	Min    int `json:"min"`
	Median int `json:"median"`
	P90    int `json:"p90"`
	Max    int `json:"max"`
}

// marshalWalks renders a walk report as one JSON object. With
// opt.NoTiming it leaves out the elapsed times.
func (r *Report) marshalWalks(opt TextOptions) ([]byte, error) {
	w := r.walks
	out := jsonWalkReport{Mode: "walks", Schedule: w.Opts.sched.name(), Verdict: "pass", Steps: w.Opts.Steps, Seed: w.Opts.Seed, Runs: []jsonWalk{}}
	if w.Opts.Shards > 0 {
		out.Shard = &jsonShard{Index: w.Opts.Shard, Count: w.Opts.Shards, Walks: w.Opts.Walks}
	}
	if w.Opts.Swarm {
		out.Mode = "swarm"
	}
	if r.Interrupted {
		out.Verdict = "interrupted"
	}
	if r.violated() {
		out.Verdict = "violation"
	}
	for i, x := range w.Runs {
		c := r.checkers[i]
		jw := jsonWalk{Run: x.Run.Name, Policy: x.Run.Policy.String(), Engine: x.Run.Engine.String(), Walks: x.Walks,
			Moves: x.Moves, Distinct: x.Distinct, Interrupted: x.Interrupted, Failing: x.Failing}
		if !opt.NoTiming {
			ms := float64(x.Elapsed.Microseconds()) / 1e3
			jw.ElapsedMS = &ms
		}
		st := &x.stats
		jw.FaultHorizon = st.Horizon
		for _, rc := range x.rowCoverage(c.Protocol().Spec()) {
			dead := rc.Dead
			if dead == nil {
				dead = []string{}
			}
			jw.Coverage = append(jw.Coverage, jsonCoverage{Role: rc.Role.String(), Fired: rc.Fired, Total: rc.Total, Dead: dead})
		}
		jw.Vacuity = jsonExercises(x.exercises(c))
		jw.Lengths = jsonLengths(st.lengthSummary())
		if w.Opts.Shards > 0 {
			jw.FirstWalk = x.FirstWalk
			jw.LengthCounts = make([]int, w.Opts.Steps+1)
			for _, n := range st.Lengths {
				jw.LengthCounts[min(n, w.Opts.Steps)]++
			}
		}
		jw.Ends = map[string]int{}
		for e, n := range st.Ended {
			jw.Ends[walkEnd(e).name()] = n
		}
		jw.MoveKinds = map[string]int64{}
		for _, k := range st.moveKinds() {
			jw.MoveKinds[k.Kind] = k.Count
		}
		jw.Committed = map[string]int64{}
		for f, n := range st.Faults {
			jw.Committed[system.Fault(f).String()] = n
		}
		if ce := x.Violation; ce != nil {
			jw.Seed, jw.Faults = x.Seed, x.Faults
			for _, f := range x.schedule {
				jw.FaultSchedule = append(jw.FaultSchedule, jsonScheduledFault{Fault: f.Fault.String(), Step: f.Step})
			}
			jw.Invariant, jw.Detail = ce.Violation.Invariant, ce.Violation.Detail
			jw.Trace = c.jsonSteps(ce.Steps)
			jw.FromTrace = ce.From
			jw.Reproduce = r.Reproduce[i]
		}
		out.Runs = append(out.Runs, jw)
	}
	for _, run := range r.NotRun {
		out.NotRun = append(out.NotRun, run.Name)
	}
	return json.MarshalIndent(out, "", "  ")
}

// jsonSteps renders trace steps for JSON reports.
func (c *Checker) jsonSteps(steps []TraceStep) []jsonStep {
	var js []jsonStep
	for _, st := range steps {
		var fired []string
		for _, f := range st.Fired {
			fired = append(fired, c.describeFiring(f))
		}
		js = append(js, jsonStep{Move: st.Move.String(), Fired: fired, State: st.State})
	}
	return js
}
