package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// Report is the outcome of checking every selected run of a
// configuration, by exhaustive search or, when Limits.Walks asked, by
// random walks. A walk report's Runs give each run, its violation (the
// first failing walk, shrunk) and the seed that reruns that walk alone;
// Invariants and PeakResident are the exhaustive search's.
type Report struct {
	Protocol   string
	Runs       []*Result
	checkers   []*Checker
	Invariants []string
	// Reproduce holds, per run of a walk report, the command line that
	// reruns the failing walk alone: the caller knows its command line,
	// so it sets them.
	Reproduce []string
	// walks is set in a walk report: what its rendering adds.
	walks *walkReport
	// NotRun lists the selected runs that never started because the check
	// was interrupted.
	NotRun []system.Run
	// Interrupted is set when the check was stopped (Ctrl-C) before every
	// selected run completed.
	Interrupted bool
	// PeakResident is the process's peak resident memory over the whole
	// check, in bytes (0 where the system does not say).
	PeakResident uint64
	// baseline holds the same runs explored on one worker, when measured.
	baseline []*Result
}

// Checker is the checker of the i-th run of the report.
func (r *Report) Checker(i int) *Checker { return r.checkers[i] }

// setBaseline records the same runs explored with one worker, so that the
// report can state the speed-up of all workers over one (Limits.Speedup).
func (r *Report) setBaseline(one *Report) { r.baseline = one.Runs }

// speedup is the ratio of a run's one-worker time to its time, or 0.
func (r *Report) speedup(i int) float64 {
	if i >= len(r.baseline) || r.Runs[i].Stats.Elapsed <= 0 {
		return 0
	}
	return r.baseline[i].Stats.Elapsed.Seconds() / r.Runs[i].Stats.Elapsed.Seconds()
}

// mermaid renders every counterexample of the report as a Mermaid
// sequenceDiagram block.
func (r *Report) mermaid() string {
	var b strings.Builder
	for i, x := range r.Runs {
		if x.Violation == nil {
			continue
		}
		fmt.Fprintf(&b, "run %s counterexample:\n```mermaid\n%s```\n", x.Run.Name, r.checkers[i].mermaidSequence(x.Violation))
	}
	return b.String()
}

// violated reports whether some run found a violation.
func (r *Report) violated() bool {
	for _, x := range r.Runs {
		if x.Violation != nil {
			return true
		}
	}
	return false
}

// Check explores the given runs of a configuration, one after the other:
// every ordering of their moves, or seeded random walks when lim.Walks
// asks. When ctx is cancelled, the run under way stops and the runs after
// it are listed in NotRun. Selecting runs is the caller's business (see
// SelectRuns): checking nothing is refused.
func Check(ctx context.Context, p *system.Protocol, cfg *system.Config, runs []system.Run, lim Limits) (*Report, error) {
	if lim.Walks > 0 {
		return checkWalks(ctx, p, cfg, runs, lim)
	}
	var progress func(searchProgress)
	if w := lim.Progress; w != nil {
		progress = func(p searchProgress) {
			fmt.Fprintf(w, "%s: %d states, %d distinct, depth %d, queue %d, %.0f states/s\n",
				p.Run, p.Transitions, p.States, p.Depth, p.Queue, float64(p.States)/p.Elapsed.Seconds())
		}
	}
	rep := &Report{Protocol: p.Name()}
	rep.Invariants = append(append([]string(nil), model.SafetyInvariants...), model.NameQuiescence, model.NameFaultFreeCompletion)
	if lim.Liveness {
		rep.Invariants = append(rep.Invariants, model.NameEventuallyDrained)
	}
	if lim.Resume != "" {
		// A checkpoint that cannot be resumed is refused before any run
		// starts.
		for _, run := range runs {
			c, err := New(p, cfg, run)
			if err != nil {
				return nil, err
			}
			if err := c.canResume(lim.Resume, lim); err != nil {
				return nil, err
			}
		}
	}
	notRun, err := eachRun(ctx, p, cfg, runs, lim.From, func(c *Checker) {
		// Earlier runs' garbage is collected first, so that this run's
		// memory figures and its memory bound are about this run.
		settle()
		rs := sampleResident()
		r := c.checkRun(ctx, lim, progress)
		c.withPrefix(r.Violation)
		// The reading that stopped a run for its bound was of the run's
		// resident memory too: the peak the report gives is not below
		// the figure its stop names.
		r.Stats.PeakResident = max(rs.stop(), r.stopResident)
		rep.Runs = append(rep.Runs, r)
		rep.checkers = append(rep.checkers, c)
	})
	if err != nil {
		return nil, err
	}
	rep.NotRun, rep.Interrupted = notRun, len(notRun) > 0
	for _, r := range rep.Runs {
		rep.Interrupted = rep.Interrupted || r.StopReason == stopInterrupted
	}
	rep.PeakResident = processPeakResident()
	for _, r := range rep.Runs {
		rep.PeakResident = max(rep.PeakResident, r.Stats.PeakResident)
	}
	if lim.Speedup && !rep.Interrupted {
		one := lim
		one.Workers, one.Speedup, one.Progress = 1, false, nil
		if base, err := Check(ctx, p, cfg, runs, one); err == nil && !base.Interrupted {
			rep.setBaseline(base)
		}
	}
	return rep, nil
}

// eachRun gives each run's checker to do, in order, until ctx is
// cancelled; it returns the runs that did not start. Checking nothing is
// refused.
// A non-empty from starts each run's checker after those moves.
func eachRun(ctx context.Context, p *system.Protocol, cfg *system.Config, runs []system.Run, from []system.Move, do func(*Checker)) ([]system.Run, error) {
	if len(runs) == 0 {
		return nil, fmt.Errorf("%w: no run selected: checking nothing is never a pass", system.ErrConfig)
	}
	for i, run := range runs {
		if ctx.Err() != nil {
			return runs[i:], nil
		}
		c, err := New(p, cfg, run)
		if err != nil {
			return nil, err
		}
		if len(from) > 0 {
			if err := c.startAfter(from); err != nil {
				return nil, err
			}
		}
		do(c)
	}
	return nil, nil
}

// SelectRuns picks the runs of a configuration to check: those named (in
// the order named; none named means every run), of the given policies
// (none given means every policy). It refuses a name the configuration
// lacks, a name given twice, and a selection that leaves nothing to check.
func SelectRuns(cfg *system.Config, names []string, policies []spec.Policy) ([]system.Run, error) {
	var picked []system.Run
	if len(names) == 0 {
		picked = cfg.Runs
	} else {
		seen := map[string]bool{}
		for _, name := range names {
			if seen[name] {
				return nil, fmt.Errorf("%w: run %q is named twice", system.ErrConfig, name)
			}
			seen[name] = true
			i := slices.IndexFunc(cfg.Runs, func(r system.Run) bool { return r.Name == name })
			if i < 0 {
				return nil, fmt.Errorf("%w: no run %q; the configuration has runs %s", system.ErrConfig, name, runNames(cfg.Runs))
			}
			picked = append(picked, cfg.Runs[i])
		}
	}
	var out []system.Run
	for _, r := range picked {
		if len(policies) == 0 || containsPolicy(policies, r.Policy) {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		var pol []string
		for _, p := range policies {
			pol = append(pol, p.String())
		}
		return nil, fmt.Errorf("%w: no run of the selection has policy %s (selected: %s): checking nothing is never a pass",
			system.ErrConfig, strings.Join(pol, ", "), runNames(picked))
	}
	return out, nil
}

func runNames(runs []system.Run) string {
	var names []string
	for _, r := range runs {
		names = append(names, fmt.Sprintf("%s (%s)", r.Name, r.Policy))
	}
	return strings.Join(names, ", ")
}

func containsPolicy(ps []spec.Policy, p spec.Policy) bool {
	for _, x := range ps {
		if x == p {
			return true
		}
	}
	return false
}

func commas(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// TextOptions choose what a text report shows beyond the verdicts.
type TextOptions struct {
	// Stats adds the measurements: rates, memory per state, workers.
	Stats bool
	// NoTiming leaves out every measured time, rate and memory figure, so
	// that the same inputs give byte-identical reports.
	NoTiming bool
	// FullStates prints every line of the state after each step of a
	// counterexample, not only the fields that changed.
	FullStates bool
	// Mermaid adds each counterexample as a Mermaid sequenceDiagram.
	Mermaid bool
}

// Render renders the report for people, or as one JSON object when
// asJSON is set (see text and marshal, or textWalks and marshalWalks for
// a walk report): the command that prints a report asks for one form or
// the other.
func (r *Report) Render(opt TextOptions, asJSON bool) ([]byte, error) {
	switch {
	case r.walks != nil && asJSON:
		return r.marshalWalks(opt)
	case r.walks != nil:
		return []byte(r.textWalks(opt)), nil
	case asJSON:
		return r.marshal(opt)
	}
	return []byte(r.text(opt)), nil
}

// text renders the report for people.
func (r *Report) text(opt TextOptions) string {
	stats := opt.Stats && !opt.NoTiming
	var b strings.Builder
	for i, x := range r.Runs {
		c := r.checkers[i]
		verdict := "complete, no violation"
		switch {
		case x.Violation != nil:
			verdict = "VIOLATION " + x.Violation.Violation.Invariant
		case !x.Complete:
			verdict = "incomplete (" + x.StopDetail + "), no violation found"
		case x.Bitstate != nil:
			verdict = fmt.Sprintf("bitstate search done (estimated coverage %.2f%%), no violation found", 100*x.Bitstate.Coverage)
		}
		fmt.Fprintf(&b, "run %s (%s, engine %s): %s\n", x.Run.Name, x.Run.Policy, x.Run.Engine, verdict)
		s := x.Stats
		fmt.Fprintf(&b, "  %s distinct states, %s transitions, depth %d, %s quiescent states checked\n",
			commas(int64(s.States)), commas(s.Transitions), s.Depth, commas(int64(x.DeadEnds)))
		if x.Reduction {
			// A reduction that took nothing away (a budget with a
			// restart, one handoff) is not worth a line: JSON still
			// carries its zeros.
			if s.Reduced > 0 || s.Pruned > 0 {
				fmt.Fprintf(&b, "  partial-order reduction: %s states took one handoff's moves alone, %s moves left to their successors\n",
					commas(int64(s.Reduced)), commas(s.Pruned))
			}
			if x.Sleep {
				fmt.Fprintf(&b, "  sleep sets: %s moves asleep, %s states expanded again for moves that woke up\n",
					commas(s.Slept), commas(int64(s.Woken)))
			}
			if x.SleepDropped != "" {
				fmt.Fprintf(&b, "  sleep sets dropped: %s; the search started again without them\n", x.SleepDropped)
			}
			if s.ConfirmStates > 0 {
				fmt.Fprintf(&b, "  the trace is the full search's: it re-ran without reduction to the violation's depth (%s states)\n",
					commas(int64(s.ConfirmStates)))
			}
		}
		if !opt.NoTiming {
			fmt.Fprintf(&b, "  elapsed %s, %s states/s\n", s.Elapsed.Round(1e6), commas(int64(s.statesPerSecond())))
			// How the run was carried out, not what it found: with the
			// measured figures, so that a resumed run's report is the
			// uninterrupted one's without them.
			if x.Resumed {
				b.WriteString("  resumed from a checkpoint\n")
			}
			if x.Checkpoints > 0 {
				fmt.Fprintf(&b, "  checkpoints written: %d\n", x.Checkpoints)
			}
			if s.DiskAt > 0 {
				fmt.Fprintf(&b, "  fingerprints moved to disk at %s states (--max-memory); %d merges of the window with the file since\n",
					commas(int64(s.DiskAt)), s.DiskMerges)
			}
		}
		if stats {
			fmt.Fprintf(&b, "  %s transitions/s, %d workers", commas(int64(s.transitionsPerSecond())), s.Workers)
			if sp := r.speedup(i); sp > 0 {
				fmt.Fprintf(&b, ", %.2f× the speed of one worker (%s on one)", sp, r.baseline[i].Stats.Elapsed.Round(1e6))
			}
			b.WriteString("\n")
			mode := "fingerprints"
			switch {
			case x.Exact:
				mode = "exact keys"
			case x.Bitstate != nil:
				mode = "bits"
			}
			per := func(n int64) string {
				if s.States == 0 {
					return "0"
				}
				return fmt.Sprintf("%.1f", float64(n)/float64(s.States))
			}
			fmt.Fprintf(&b, "  store (%s): %s bytes/state (fingerprints alone %s), trace links %s bytes/state, liveness graph %s bytes/state\n",
				mode, per(s.StoreBytes), per(s.FingerprintBytes), per(s.TraceBytes), per(s.GraphBytes))
			fmt.Fprintf(&b, "  peak heap %s (this run's own), peak resident memory %s", FormatBytes(int64(s.PeakHeap)), residentText(s.PeakResident))
			if s.PeakResident > 0 && s.States > 0 {
				fmt.Fprintf(&b, " (%.1f bytes/state)", s.residentPerState())
			}
			b.WriteString("\n")
			if s.SpilledBytes > 0 {
				fmt.Fprintf(&b, "  frontiers, trace links, liveness graph and fingerprints written to files: %s\n", FormatBytes(s.SpilledBytes))
			}
		}
		switch {
		case x.Bitstate != nil:
			bs := x.Bitstate
			fmt.Fprintf(&b, "  bitstate: %s of bits, %d per state, %.1f%% set; estimated coverage %.2f%% (a new state is taken for a visited one with probability %.1e at the end)\n",
				FormatBytes(bs.Bytes), bs.Hashes, 100*bs.Fill, 100*bs.Coverage, bs.Omission)
			if bs.Fill > 0.5 {
				b.WriteString("  the bit array is over half full: states it omitted hide their successors, so the estimate is high; give --bitstate more\n")
			}
		case x.Exact:
			b.WriteString("  states stored as exact keys: no fingerprint collisions\n")
		default:
			fmt.Fprintf(&b, "  64-bit fingerprints: probability that two states collided ≤ %.1e\n", x.CollisionProbability)
		}
		if x.Symmetry {
			b.WriteString("  symmetry reduction: on (interchangeable handoffs and workers)\n")
		}
		if x.Liveness {
			fmt.Fprintf(&b, "  %s: checked on the explored graph\n", model.NameEventuallyDrained)
			if x.ChainsOpen > 0 {
				fmt.Fprintf(&b, "  drain chains: %s states' chains stopped short of a drained state, so the search ran again keeping every edge\n", commas(int64(x.ChainsOpen)))
			}
			if x.FairDrained {
				fmt.Fprintf(&b, "  %s in its fair form (every weakly fair run drains): checked too, without symmetry reduction\n", model.NameEventuallyDrained)
			}
			if x.Symmetry {
				b.WriteString("  warning: liveness on a symmetry-reduced graph: EventuallyDrained is a reachability property of a\n" +
					"    renaming-invariant set of states, so the quotient keeps its verdict, but fairness-based liveness would not be\n")
			}
		}
		if !x.Complete && x.Violation == nil && x.StopReason != "" && !x.Liveness {
			b.WriteString("  warning: the exploration was cut by a bound: Quiescence and EventuallyDrained verdicts cover only what was explored\n")
		}
		var parts []string
		for _, rc := range x.rowCoverage(c.Protocol().Spec()) {
			parts = append(parts, fmt.Sprintf("%s rows %d/%d fired", rc.Role, rc.Fired, rc.Total))
		}
		fmt.Fprintf(&b, "  coverage: %s\n", strings.Join(parts, ", "))
		if x.Violation != nil {
			b.WriteString(indent(c.formatCounterexampleFull(x.Violation, opt.FullStates), "  "))
		} else {
			// A run that found a violation stopped there: what it did not
			// exercise says nothing of the invariants.
			b.WriteString(vacuityText(r.exercises(i), x.vacuityLead(c.startedAfter() > 0)))
		}
	}
	for _, pc := range r.policyCoverage() {
		fmt.Fprintf(&b, "coverage under %s (runs %s): %s rows %d/%d fired", pc.Policy, strings.Join(pc.Runs, ", "), pc.Role, pc.Fired, pc.Total)
		if pc.Bitstate {
			b.WriteString(" (partial: a bitstate search may miss states, so rows that never fired are not findings)\n")
			continue
		}
		if pc.FromTrace {
			b.WriteString(" (partial: the search started from a trace's state, so rows that never fired are not findings)\n")
			continue
		}
		if pc.Partial {
			b.WriteString(" (partial: an exploration stopped early, so rows that never fired are not findings)\n")
			continue
		}
		if len(pc.Dead) == 0 {
			b.WriteString("\n")
			continue
		}
		b.WriteString("; never fired (findings):\n")
		for _, d := range pc.Dead {
			fmt.Fprintf(&b, "  %s\n", d)
		}
	}
	for _, run := range r.NotRun {
		fmt.Fprintf(&b, "run %s (%s, engine %s): not run (interrupted)\n", run.Name, run.Policy, run.Engine)
	}
	if r.Interrupted {
		b.WriteString("interrupted: the verdicts above cover only what was explored\n")
	}
	fmt.Fprintf(&b, "invariants checked: %s\n", strings.Join(r.Invariants, ", "))
	if opt.Mermaid {
		b.WriteString(r.mermaid())
	}
	if stats {
		fmt.Fprintf(&b, "peak resident memory of the process: %s\n", residentText(r.PeakResident))
	}
	return b.String()
}

func residentText(n uint64) string {
	if n == 0 {
		return "unknown"
	}
	return FormatBytes(int64(n))
}

// exercises is, for the i-th run, whether each invariant checked was
// exercised.
func (r *Report) exercises(i int) []exercise {
	var fired model.Triggers
	if cov := r.Runs[i].Coverage; cov != nil {
		fired = cov.Fired
	}
	violated := ""
	if ce := r.Runs[i].Violation; ce != nil {
		violated = ce.Violation.Invariant
	}
	return exercises(r.Invariants, fired, r.checkers[i].World(), violated)
}

// policyRowCoverage is row coverage of one role under one policy, over
// every run of that policy: a row fired if it fired in any of them.
type policyRowCoverage struct {
	Policy spec.Policy
	Runs   []string
	// Partial is set when a run of the policy did not complete, was a
	// bitstate search or started from a trace's state; Bitstate and
	// FromTrace say which when the run did complete.
	Partial, Bitstate, FromTrace bool
	roleCoverage
}

// policyCoverage reports, per policy and role, which rows fired in some
// run of the policy and which never did.
func (r *Report) policyCoverage() []policyRowCoverage {
	var out []policyRowCoverage
	for _, pol := range spec.Policies {
		var runs []string
		var merged *system.Coverage
		var sp *spec.Spec
		partial, bitstate, from := false, false, false
		for i, x := range r.Runs {
			if x.Run.Policy != pol || x.Coverage == nil {
				continue
			}
			partial = partial || !x.Complete
			bitstate = bitstate || x.Bitstate != nil
			from = from || r.checkers[i].startedAfter() > 0
			runs = append(runs, x.Run.Name)
			sp = r.checkers[i].Protocol().Spec()
			if merged == nil {
				merged = system.NewCoverage(sp)
			}
			addCoverage(merged, x.Coverage)
		}
		if merged == nil {
			continue
		}
		res := &Result{Run: system.Run{Policy: pol}, Coverage: merged}
		for _, rc := range res.rowCoverage(sp) {
			out = append(out, policyRowCoverage{Policy: pol, Runs: runs, Partial: partial || bitstate || from,
				Bitstate: bitstate && !partial, FromTrace: from && !partial && !bitstate, roleCoverage: rc})
		}
	}
	return out
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}

type jsonReport struct {
	Protocol     string               `json:"protocol"`
	Verdict      string               `json:"verdict"`
	Runs         []jsonRun            `json:"runs"`
	NotRun       []string             `json:"not_run,omitempty"`
	Coverage     []jsonPolicyCoverage `json:"coverage_by_policy"`
	Invariants   []string             `json:"invariants"`
	PeakResident *uint64              `json:"peak_resident_bytes,omitempty"`
}

type jsonPolicyCoverage struct {
	Policy  string   `json:"policy"`
	Runs    []string `json:"runs"`
	Partial bool     `json:"partial"`
	jsonCoverage
}

type jsonRun struct {
	Name        string  `json:"name"`
	Policy      string  `json:"policy"`
	Engine      string  `json:"engine"`
	Complete    bool    `json:"complete"`
	StopReason  string  `json:"stop_reason,omitempty"`
	StopDetail  string  `json:"stop_detail,omitempty"`
	States      int     `json:"states"`
	Transitions int64   `json:"transitions"`
	Depth       int     `json:"depth"`
	Quiescent   int     `json:"quiescent_states"`
	StoreBPS    float64 `json:"store_bytes_per_state"`
	FPBPS       float64 `json:"fingerprint_bytes_per_state"`
	*jsonTiming
	Symmetry bool `json:"symmetry"`
	Exact    bool `json:"exact"`
	Liveness bool `json:"liveness_checked"`
	// FairDrained: EventuallyDrained's fair form was judged too.
	FairDrained bool `json:"fair_drained_checked,omitempty"`
	// ChainsOpen counts the states whose drain chains stopped short of a
	// drained state: the run was searched again keeping every edge.
	ChainsOpen int            `json:"drain_chains_open,omitempty"`
	Collision  float64        `json:"collision_probability"`
	Bitstate   *jsonBitstate  `json:"bitstate,omitempty"`
	Reduction  *jsonReduction `json:"reduction,omitempty"`
	Coverage   []jsonCoverage `json:"coverage"`
	// Vacuity says, per invariant checked, whether its trigger fired.
	Vacuity   []jsonExercise `json:"vacuity"`
	Violation *jsonViolation `json:"violation,omitempty"`
}

// jsonReduction is what partial-order reduction took away (present only
// when it was on).
type jsonReduction struct {
	ReducedStates int   `json:"reduced_states"`
	PrunedMoves   int64 `json:"pruned_moves"`
	ConfirmStates int   `json:"confirm_states"`
	// Sleep is present when sleep sets were on; SleepDropped says why a
	// search started again without them.
	Sleep        *jsonSleep `json:"sleep_sets,omitempty"`
	SleepDropped string     `json:"sleep_dropped,omitempty"`
}

// jsonSleep is what sleep sets took away.
type jsonSleep struct {
	SleptMoves  int64 `json:"slept_moves"`
	WokenStates int   `json:"woken_states"`
}

// jsonTiming holds the measured figures of a run, left out with
// --timing=false so that the same inputs give byte-identical reports.
type jsonTiming struct {
	ElapsedMS    float64 `json:"elapsed_ms"`
	StatesPerS   float64 `json:"states_per_second"`
	TransPerS    float64 `json:"transitions_per_second"`
	Workers      int     `json:"workers"`
	PeakHeap     uint64  `json:"peak_heap_bytes"`
	PeakResident uint64  `json:"peak_resident_bytes"`
	// ResidentPerState is the peak resident memory over distinct states.
	ResidentPerState float64 `json:"resident_bytes_per_state"`
	SpilledBytes     int64   `json:"spilled_bytes"`
	Resumed          bool    `json:"resumed,omitempty"`
	Checkpoints      int     `json:"checkpoints_written,omitempty"`
	DiskAt           int     `json:"fingerprints_to_disk_at,omitempty"`
	DiskMerges       int     `json:"disk_merges,omitempty"`
	Speedup          float64 `json:"speedup_over_one_worker,omitempty"`
}

type jsonBitstate struct {
	Bytes    int64   `json:"bytes"`
	Hashes   int     `json:"hashes"`
	Fill     float64 `json:"bits_set_fraction"`
	Omission float64 `json:"omission_probability"`
	Coverage float64 `json:"estimated_coverage"`
}

type jsonCoverage struct {
	Role  string   `json:"role"`
	Fired int      `json:"fired"`
	Total int      `json:"total"`
	Dead  []string `json:"never_fired"`
}

type jsonViolation struct {
	Invariant string     `json:"invariant"`
	Attempts  []string   `json:"attempts"`
	Handoff   int        `json:"handoff"`
	Worker    int        `json:"worker"`
	Detail    string     `json:"detail"`
	Trace     []jsonStep `json:"trace"`
	Loop      []jsonStep `json:"loop,omitempty"`
	Mermaid   string     `json:"mermaid"`
	// FromTrace is how many of the trace's first steps are the ones the
	// search started after (--from-trace).
	FromTrace int `json:"from_trace_steps,omitempty"`
}

type jsonStep struct {
	Move  string   `json:"move"`
	Fired []string `json:"fired,omitempty"`
	State []string `json:"state"`
}

// marshal renders the report as one JSON object. With opt.NoTiming it
// leaves out every measured figure (times, rates, memory, workers).
func (r *Report) marshal(opt TextOptions) ([]byte, error) {
	out := jsonReport{Protocol: r.Protocol, Verdict: "pass", Invariants: r.Invariants, Runs: []jsonRun{}}
	if !opt.NoTiming {
		out.PeakResident = &r.PeakResident
	}
	for _, run := range r.NotRun {
		out.NotRun = append(out.NotRun, run.Name)
	}
	for i, x := range r.Runs {
		c := r.checkers[i]
		s := x.Stats
		per := func(n int64) float64 {
			if s.States == 0 {
				return 0
			}
			return float64(n) / float64(s.States)
		}
		jr := jsonRun{Name: x.Run.Name, Policy: x.Run.Policy.String(), Engine: x.Run.Engine.String(), Complete: x.Complete,
			StopReason: x.StopReason, StopDetail: x.StopDetail, States: s.States, Transitions: s.Transitions, Depth: s.Depth, Quiescent: x.DeadEnds,
			StoreBPS: per(s.StoreBytes), FPBPS: per(s.FingerprintBytes),
			Symmetry: x.Symmetry, Exact: x.Exact, Liveness: x.Liveness, FairDrained: x.FairDrained, ChainsOpen: x.ChainsOpen, Collision: x.CollisionProbability}
		if x.Reduction {
			jr.Reduction = &jsonReduction{ReducedStates: s.Reduced, PrunedMoves: s.Pruned, ConfirmStates: s.ConfirmStates, SleepDropped: x.SleepDropped}
			if x.Sleep {
				jr.Reduction.Sleep = &jsonSleep{SleptMoves: s.Slept, WokenStates: s.Woken}
			}
		}
		if bs := x.Bitstate; bs != nil {
			jr.Bitstate = &jsonBitstate{Bytes: bs.Bytes, Hashes: bs.Hashes, Fill: bs.Fill, Omission: bs.Omission, Coverage: bs.Coverage}
		}
		if !opt.NoTiming {
			jr.jsonTiming = &jsonTiming{ElapsedMS: float64(s.Elapsed.Microseconds()) / 1e3, StatesPerS: s.statesPerSecond(),
				TransPerS: s.transitionsPerSecond(), Workers: s.Workers, PeakHeap: s.PeakHeap, PeakResident: s.PeakResident,
				ResidentPerState: s.residentPerState(), SpilledBytes: s.SpilledBytes, Resumed: x.Resumed, Checkpoints: x.Checkpoints,
				DiskAt: s.DiskAt, DiskMerges: s.DiskMerges, Speedup: r.speedup(i)}
		}
		if !x.Complete && x.Violation == nil {
			out.Verdict = "incomplete"
		}
		for _, rc := range x.rowCoverage(c.Protocol().Spec()) {
			dead := rc.Dead
			if dead == nil {
				dead = []string{}
			}
			jr.Coverage = append(jr.Coverage, jsonCoverage{Role: rc.Role.String(), Fired: rc.Fired, Total: rc.Total, Dead: dead})
		}
		jr.Vacuity = jsonExercises(r.exercises(i))
		if ce := x.Violation; ce != nil {
			v := ce.Violation
			jv := &jsonViolation{Invariant: v.Invariant, Attempts: c.Attempts(), Handoff: v.Handoff, Worker: v.Worker, Detail: v.Detail}
			jv.Trace, jv.Loop = c.jsonSteps(ce.Steps), c.jsonSteps(ce.Loop)
			jv.Mermaid = c.mermaidSequence(ce)
			jv.FromTrace = ce.From
			jr.Violation = jv
		}
		out.Runs = append(out.Runs, jr)
	}
	if r.Interrupted {
		out.Verdict = "interrupted"
	}
	if r.violated() {
		out.Verdict = "violation"
	}
	out.Coverage = []jsonPolicyCoverage{}
	for _, pc := range r.policyCoverage() {
		dead := pc.Dead
		if dead == nil {
			dead = []string{}
		}
		out.Coverage = append(out.Coverage, jsonPolicyCoverage{Policy: pc.Policy.String(), Runs: pc.Runs, Partial: pc.Partial,
			jsonCoverage: jsonCoverage{Role: pc.Role.String(), Fired: pc.Fired, Total: pc.Total, Dead: dead}})
	}
	return json.MarshalIndent(out, "", "  ")
}

// roleCoverage is how many of a role's rows that apply to a run's policy
// fired during the exploration, and which never did.
type roleCoverage struct {
	Role  spec.Role
	Fired int
	Total int
	// Dead names each applicable row that never fired, e.g. "row 12
	// (Primed × Cancelled): why".
	Dead []string
}

// rowCoverage reports row coverage per role under the run's policy.
func (r *Result) rowCoverage(s *spec.Spec) []roleCoverage {
	var out []roleCoverage
	for _, role := range spec.Roles {
		t := s.Table(role)
		rc := roleCoverage{Role: role}
		for i, row := range t.Rows {
			if !containsPolicy(row.Policies, r.Run.Policy) {
				continue
			}
			rc.Total++
			if r.Coverage != nil && r.Coverage.Rows[role][i+1] > 0 {
				rc.Fired++
				continue
			}
			rc.Dead = append(rc.Dead, fmt.Sprintf("%s: %s", t.RowLabel(i), row.Why))
		}
		out = append(out, rc)
	}
	return out
}
