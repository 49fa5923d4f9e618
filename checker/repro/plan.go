package repro

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/sim"
	"github.com/handoffcheck/handoffcheck/checker/sim/faultplan"
	"github.com/handoffcheck/handoffcheck/checker/sim/workload"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// The files of a reproduction on the clock derived from the trace: what
// simulate reads, and live too.
const (
	WorkloadFile = "workload.jsonl"
	FaultsFile   = "faults.jsonl"
	SimFile      = "sim.json"
)

// Plan is a reproduction on the clock derived from the trace itself: a
// cluster of the trace's workers, one request per handoff in the order
// the trace starts them, and the trace's faults, each aimed at the
// request and the phase the trace strikes it at. The clock decides the
// order of everything else, so the plan is only kept when its run breaks
// the same invariant; Why says why there is none otherwise.
type Plan struct {
	// retired names, when the trace's violating step is a fact delivered
	// to a side that had reported its outcome and held nothing, that
	// fact and side: a live worker has retired the side by then, and
	// takes the fact in the machine it kept ("" otherwise).
	retired  string
	Config   *cluster.Config
	Requests []cluster.Request
	Faults   []faultplan.Fault
	// Timers names the deadlines the plan shortens, so that the clock
	// fires the timers the trace fires while other steps are still to
	// come ("" when it shortens none).
	Timers string
	// Shape says how the plan's clock differs from the default one
	// ("" when it does not).
	Shape string
	// Skipped lists the trace's no-show steps the plan leaves out (the
	// clock needs no stuck state to fire a timer).
	Skipped []string
	// Result is the plan's run, which broke the invariant.
	Result *sim.Result
	// KeepGoing: the plan's run breaks a bound on time first
	// (BoundedReclaim, BoundedGiveUp) and the invariant only as it goes on
	// past it (simulate --keep-going): a loop that never drains is judged
	// an hour of virtual time after the last arrival, long after the
	// blocks it keeps outlast their bound; a side that keeps what it
	// holds is judged by the bound while it owes it, and by the
	// invariant once nothing is left to happen for its request.
	KeepGoing bool
	// LoopCaps names the deadlines a loop's plan caps at loopCapUS, so
	// that a live run of it ends soon after the loop begins (live's
	// stall bound is four times the longest deadline); "" when it caps
	// none, or the loop does not reach the invariant with them capped.
	LoopCaps string
	// Pinned says the abort or restart pinLive added, "" for none; pinWhy, when
	// pinLive tried one and kept none, why not.
	Pinned string
	pinWhy string
	// loop: the trace is a loop that never drains (NeverDrains).
	loop   bool
	target string // the invariant looked for
	// Runs counts the candidate plans run to find it.
	Runs int
	Why  string
	// Other lists the invariants candidate runs broke first, when none
	// broke the one looked for.
	Other []string
	// timedWhy says why the plan's faults placed by time are not aimed
	// at a phase.
	timedWhy string
	// fitsLive: the plan's deadlines were chosen for live (fitLive).
	fitsLive bool
	// Judged is what conform says of the plan's run cut as a live run's
	// logs are.
	Judged *LiveJudged
	// liveClock, when set, is the time scale a live run of the plan
	// runs at and why its logs are judged with a clock error
	// (clockLive).
	liveClock *liveClock
}

// planLadder is the deadlines, in microseconds, a candidate plan gives
// each timer the trace fires (0: the configuration's own): from well
// under one delivery to many, so that one of them fires the timer where
// the trace does, between the steps around it.
var planLadder = []int64{0, 100, 300, 1_000, 3_000, 10_000, 30_000, 100_000, 300_000}

// planShape is how long the clock's other steps take in a candidate
// plan: a delivery, a command on a scheduler core, and the output a
// request decodes. The trace may take a fact's delivery after a decode
// finished or after a command the destination applies; the clock orders
// them so only when the one is slower than the other.
type planShape struct {
	name                 string
	latencyUS, commandUS int64
	output               model.Tokens
}

// planShapes are the shapes tried, the configuration's own first.
var planShapes = []planShape{
	{name: ""},
	{name: "facts slower than a decode (2 s latency, one output token)", latencyUS: 2_000_000, output: 1},
	{name: "commands slower than facts (5 ms per command)", commandUS: 5_000},
}

// faultOffsets are how a fault is placed after the phase the trace
// strikes it at: aimed at the phase itself (-1: right after the side's
// worker logs the fact, which simulate and live strike at the same
// point; a kind that cannot be so aimed is placed a microsecond after
// the time of the phase), then at the other side's phase (otherSide:
// right after the last fact either side logs before it, the peer's fact
// named by after_side, for a violation that needs the fault between a
// step of the peer and the fact that step sends), or a microsecond after
// the time a run logs the phase (the fault strikes once the phase's step
// is done), or at the same instant. A restart is always aimed at its
// phase.
var faultOffsets = []int64{-1, otherSide, 1, 0}

// maxPast bounds the candidates whose run breaks a bound on time first
// that a plan going on past it is tried on.
const maxPast = 8

// otherSide is the offset of faultOffsets that aims a fault at the last
// fact either side logs before it (Fault.AfterSide).
const otherSide = -2

// maxPlanRuns bounds the simulations run to find a plan, so that a
// reproduction stays quick: a count, not a time, so that the same trace
// always gives the same plan.
const maxPlanRuns = 400

// planStep is one step of the trace as the plan reads it.
type planStep struct {
	m system.Move
	// labels are the facts the step makes observable, for its handoff.
	labels []obslog.Label
	// h is the handoff the step moves (a restart: the handoff on the
	// worker restarted), side the side of it a restart strikes.
	h    int
	side model.Side
	// arms lists the timers the step armed for its handoff.
	arms []model.Timer
	// worker is the simulator's number of the worker a restart restarts:
	// prefill workers are numbered first.
	worker int
	// retired: the step delivers a fact to a side that had reported its
	// terminal outcome and held nothing (Plan.retired).
	retired bool
}

// DerivePlan derives a plan from the moves of a counterexample on its
// configuration and runs it; a plan that does not break the invariant is
// no plan, and Why says why. For a loop (its moves the prefix and one
// round of it), the plan keeps the configured deadlines: the clock judges
// a loop that never drains an hour of virtual time after the last
// arrival.
func DerivePlan(ctx context.Context, proto *system.Protocol, cfg *system.Config, run system.Run, moves []system.Move, invariant string, loop bool) (*Plan, error) {
	p := &Plan{target: invariant}
	c, err := checker.New(proto, cfg, run)
	if err != nil {
		return nil, err
	}
	steps, skipped, why := planSteps(c, cfg, moves)
	if why != "" {
		p.Why = why
		return p, nil
	}
	p.Skipped = skipped
	if len(steps) > 0 && steps[len(steps)-1].retired {
		last := steps[len(steps)-1]
		p.retired = fmt.Sprintf("%s to the %s", last.m.Msg, sideName(model.Side(last.m.Arg)))
	}
	base, err := planConfig(cfg, run)
	if err != nil {
		return nil, err
	}
	order := requestOrder(steps)
	reqs := make([]cluster.Request, len(order))
	for i, h := range order {
		hc := cfg.World.Handoffs[h]
		// Arrivals a microsecond apart keep the trace's order; the
		// output is short, so that a run ends soon after its handoff.
		reqs[i] = cluster.Request{Index: i, ArrivalUS: int64(i), PromptTokens: hc.PromptTokens, OutputTokens: 16, CancelUS: -1}
	}
	reqOf := map[int]int{}
	for i, h := range order {
		reqOf[h] = i
	}
	var fired []model.Timer
	for _, st := range steps {
		if st.m.Kind == system.MvTimer && !slices.Contains(fired, model.Timer(st.m.Arg)) {
			fired = append(fired, model.Timer(st.m.Arg))
		}
	}
	var others []string
	// past is the candidates whose run breaks a bound on time first, for
	// a plan that goes on past it when no candidate reaches the invariant
	// first.
	type candidate struct {
		cc     cluster.Config
		rs     []cluster.Request
		faults []faultplan.Fault
		named  []string
		shape  string
	}
	var past []candidate
	for _, shape := range planShapes {
		cands := ladder(len(fired))
		if loop {
			// A loop that never drains is judged on the clock an hour
			// of virtual time after the last arrival (EventuallyDrained):
			// its timers keep their own deadlines, which that hour
			// repeats a bounded number of times.
			cands = cands[:1]
		} else if len(fired) > 0 {
			d, err := p.deadlines(ctx, proto, shaped(base, shape), shapedReqs(reqs, shape), steps, reqOf, fired)
			if err != nil {
				return nil, err
			}
			cands = append([][]int64{d}, cands...)
		}
		for _, deadlines := range cands {
			for _, offset := range faultOffsets {
				if p.Runs >= maxPlanRuns || ctx.Err() != nil {
					break
				}
				cc := *shaped(base, shape)
				var named []string
				for i, t := range fired {
					if deadlines[i] > 0 {
						cc.Timers.Set(t, deadlines[i])
						named = append(named, fmt.Sprintf("%s %s ms", t, workload.FormatMillis(deadlines[i])))
					}
				}
				rs := shapedReqs(reqs, shape)
				faults, res, err := p.aim(ctx, proto, &cc, rs, steps, reqOf, offset)
				if err != nil {
					return nil, err
				}
				if res == nil {
					continue
				}
				if v := res.Violation; v != nil && v.Invariant == invariant {
					// What is written is what simulate reads: the plan
					// is kept when its file form breaks the invariant too.
					back, err := cluster.ParseConfig(SimFile, cc.JSON())
					if err != nil {
						return nil, fmt.Errorf("repro: the plan's configuration: %w", err)
					}
					p.Runs++
					_, again, err := runPlan(ctx, proto, back, rs, faults, false)
					if err != nil {
						return nil, err
					}
					if again.Violation != nil && again.Violation.Invariant == invariant {
						p.Config, p.Requests, p.Faults, p.Result, p.Timers, p.Shape = back, rs, faults, again, strings.Join(named, ", "), shape.name
						if offset >= 0 {
							p.timedWhy = "aimed at the phases the trace strikes them at, the simulator's run does not break " + invariant
						} else {
							p.timedWhy = "its side logs nothing for the request before it, or it is of a kind not aimed at a phase"
						}
						if err := p.fitLive(ctx, proto, base, reqs, steps, reqOf, fired, invariant); err != nil {
							return nil, err
						}
						if err := p.judgeAsLive(ctx, proto); err != nil {
							return nil, err
						}
						if err := p.pinLive(ctx, proto, steps, reqOf, invariant); err != nil {
							return nil, err
						}
						if err := p.clockLive(ctx, proto, invariant); err != nil {
							return nil, err
						}
						return p, nil
					}
				} else if v != nil && loop && sim.LateInvariant(v.Invariant) {
					// Live first: the loop with its deadlines capped,
					// then with the configuration's own.
					capped, caps := loopCapped(&cc)
					ok := false
					if caps != "" {
						if ok, err = p.keepsGoingTo(ctx, proto, capped, rs, faults, invariant); err != nil {
							return nil, err
						}
						if ok {
							p.LoopCaps = caps
						}
					}
					if !ok {
						if ok, err = p.keepsGoingTo(ctx, proto, &cc, rs, faults, invariant); err != nil {
							return nil, err
						}
					}
					if ok {
						p.Timers, p.Shape, p.loop = strings.Join(named, ", "), shape.name, true
						return p, nil
					}
				} else if v != nil && sim.LateInvariant(v.Invariant) && len(past) < maxPast {
					past = append(past, candidate{cc, rs, faults, named, shape.name})
				}
				if v := res.Violation; v != nil && v.Invariant != invariant && !slices.Contains(others, v.Invariant) {
					others = append(others, v.Invariant)
				}
				if !hasTimedFault(steps) {
					break // the offset moves no fault
				}
			}
		}
	}
	// A side the clock judges by a bound on time first (a give-up or a
	// peer's outcome leaves it owing what it holds) keeps its request
	// busy until that bound; going on past it, the request is judged once
	// nothing is left to happen for it.
	for _, c := range past {
		if ctx.Err() != nil {
			break
		}
		ok, err := p.keepsGoingTo(ctx, proto, &c.cc, c.rs, c.faults, invariant)
		if err != nil {
			return nil, err
		}
		if ok {
			p.Timers, p.Shape = strings.Join(c.named, ", "), c.shape
			return p, nil
		}
	}
	deadlines := fmt.Sprintf("the timers it fires at %d deadlines each", len(planLadder))
	if loop {
		deadlines = "the timers at their configured deadlines, as a loop keeps them"
	}
	p.Why = fmt.Sprintf("none of the %d runs of the trace's requests and faults on the clock (%d shapes of the clock, %s, every fault aimed at the phase it strikes) reaches %s", p.Runs, len(planShapes), deadlines, invariant)
	if len(others) > 0 {
		p.Why += " (some broke " + strings.Join(others, ", ") + " first)"
	}
	p.Other = others
	p.Why += ": the clock does not order the steps as the trace does"
	return p, nil
}

// keepsGoingTo runs a loop's candidate plan past the bound on time it
// breaks first, and keeps the plan when the run goes on to break the
// invariant, its file form too. Live is not tried: a live run is judged
// by its first violation.
func (p *Plan) keepsGoingTo(ctx context.Context, proto *system.Protocol, cc *cluster.Config, rs []cluster.Request, faults []faultplan.Fault, invariant string) (bool, error) {
	p.Runs++
	res, err := runKeptGoing(ctx, proto, cc, rs, faults)
	if err != nil || res.Summary.KeptGoing.First(invariant) == nil {
		return false, err
	}
	back, err := cluster.ParseConfig(SimFile, cc.JSON())
	if err != nil {
		return false, fmt.Errorf("repro: the plan's configuration: %w", err)
	}
	p.Runs++
	again, err := runKeptGoing(ctx, proto, back, rs, faults)
	if err != nil || again.Summary.KeptGoing.First(invariant) == nil {
		return false, err
	}
	p.Config, p.Requests, p.Faults, p.Result, p.KeepGoing = back, rs, faults, again, true
	return true, nil
}

// loopCapUS is the longest deadline a loop's plan keeps: a live run of a
// loop ends only once its coordinator heard nothing for three times its
// stall bound, four times the configuration's longest deadline (scaled),
// so the configuration's deadlines of minutes would keep it running for
// minutes, and longer still at the larger time scales a loaded machine
// takes. Five seconds, the default heartbeat, leaves the heartbeat's
// tenth, the lateness a live run absorbs, as it was.
const loopCapUS = 5_000_000

// loopCapped is a configuration with every deadline longer than
// loopCapUS capped at it, and the deadlines it caps ("" for none).
func loopCapped(base *cluster.Config) (*cluster.Config, string) {
	cc := *base
	var named []string
	for _, x := range []struct {
		name string
		us   *int64
	}{{"lease", &cc.Timers.LeaseUS}, {"heartbeat", &cc.Timers.HeartbeatUS}, {"bootstrap", &cc.Timers.BootstrapUS}, {"reservation", &cc.Timers.ReservationUS},
		{"transfer", &cc.Timers.TransferDeadlineUS}, {"health check", &cc.HealthCheckUS}} {
		if *x.us > loopCapUS {
			named = append(named, fmt.Sprintf("%s %s ms", x.name, workload.FormatMillis(*x.us)))
			*x.us = loopCapUS
		}
	}
	return &cc, strings.Join(named, ", ")
}

// NeverDrains reports whether the plan's trace is a loop that never
// drains, which a run that keeps going judges an hour of virtual time
// after the last arrival.
func (p *Plan) NeverDrains() bool { return p.loop }

// Target is the violation of the invariant the plan's run reaches: its
// first, or with KeepGoing the first of the invariant after the bound on
// time broken before it.
func (p *Plan) Target() *sim.Violation {
	if p.Result == nil || p.Result.Violation == nil {
		return nil
	}
	if p.KeepGoing {
		return p.Result.Summary.KeptGoing.First(p.target)
	}
	return p.Result.Violation
}

// ladder lists the deadlines of n timers to try, the configuration's own
// first, then every pair of the ladder's (all n timers at the same rung
// for n above two, which bounds the runs).
func ladder(n int) [][]int64 { return rungs(planLadder, n) }

// rungs lists the deadlines of n timers at the given rungs: every
// combination for one or two timers (the first timer's rung changing
// fastest), all n at the same rung beyond two.
func rungs(steps []int64, n int) [][]int64 {
	var out [][]int64
	switch {
	case n == 0:
		return [][]int64{nil}
	case n <= 2:
		idx := make([]int, n)
		for {
			d := make([]int64, n)
			for i, j := range idx {
				d[i] = steps[j]
			}
			out = append(out, d)
			i := 0
			for ; i < n; i++ {
				idx[i]++
				if idx[i] < len(steps) {
					break
				}
				idx[i] = 0
			}
			if i == n {
				return out
			}
		}
	default:
		for _, v := range steps {
			d := make([]int64, n)
			for i := range d {
				d[i] = v
			}
			out = append(out, d)
		}
		return out
	}
}

// aim places the trace's faults on the clock, one at a time: each is
// aimed at its request right after the last fact the trace logged for
// that request before it, at the time a run with the faults before it
// logs that fact. It returns the plan's faults and the run with all of
// them (nil when the runs ran out).
func (p *Plan) aim(ctx context.Context, proto *system.Protocol, cfg *cluster.Config, reqs []cluster.Request, steps []planStep, reqOf map[int]int, offset int64) ([]faultplan.Fault, *sim.Result, error) {
	var faults []faultplan.Fault
	cross := false
	for i, st := range steps {
		if _, fault := st.m.Kind.Spends(); !fault {
			continue
		}
		k, _ := st.m.Kind.Spends()
		r := reqOf[st.h]
		f := faultplan.Fault{Kind: k.String(), Request: r, Worker: -1}
		var want []obslog.Label
		for _, prev := range steps[:i] {
			if prev.h == st.h {
				want = append(want, prev.labels...)
			}
		}
		if k == system.Restart {
			// Aimed at the side's phase, as live strikes it too: right
			// after the side's worker logs its last fact before the
			// restart.
			by := obslog.BySource
			if st.side == model.DestinationSide {
				by = obslog.ByDestination
			}
			f.Side = sideName(st.side)
			for _, l := range want {
				if l.By == by {
					f.After = l.Kind.String()
				}
			}
			if f.After != "" {
				if n := len(faults); n > 0 {
					f.AtUS = faults[n-1].AtUS
				}
				faults = append(faults, f)
				continue
			}
			f.Side = ""
		}
		if offset < 0 && k != system.Restart && system.FaultKinds[k].Phase {
			if sd, by, after := phaseOf(want, k, st.m, offset == otherSide); after != "" {
				f.Side, f.After = sideName(sd), after
				if by != sd {
					f.AfterSide = sideName(by)
					cross = true
				}
				if n := len(faults); n > 0 {
					f.AtUS = faults[n-1].AtUS
				}
				faults = append(faults, f)
				continue
			}
		}
		if p.Runs >= maxPlanRuns {
			return nil, nil, nil
		}
		p.Runs++
		log, _, err := runPlan(ctx, proto, cfg, reqs, faults, true)
		if err != nil {
			return nil, nil, err
		}
		off := offset
		if off < 0 {
			off = 1 // a kind not aimed at a phase: just after its time
		}
		at := phaseTime(log, r, want) + off
		if n := len(faults); n > 0 && at < faults[n-1].AtUS {
			at = faults[n-1].AtUS
		}
		f.AtUS = at
		switch {
		case cluster.NamesFact(k):
			f.To, f.Msg = sideName(model.Side(st.m.Arg)), st.m.Msg.String()
		case k == system.Restart:
			f.Request, f.Worker = -1, st.worker
		case cluster.NamesSide(k):
			f.Side = sideName(model.Side(st.m.Arg))
		}
		faults = append(faults, f)
	}
	if offset == otherSide && !cross {
		// Every fault's phase is its own side's: the plan of offset -1,
		// which was run already.
		return nil, nil, nil
	}
	if p.Runs >= maxPlanRuns {
		return nil, nil, nil
	}
	p.Runs++
	_, res, err := runPlan(ctx, proto, cfg, reqs, faults, false)
	return faults, res, err
}

func sideName(sd model.Side) string {
	if sd == model.SourceSide {
		return "source"
	}
	return "destination"
}

// phaseOf is the phase a fault of kind k, the trace's move m, is aimed
// at: the side it strikes (sd), the side that logged the fact (by) and
// the last fact logged for the request before the fault, of the side
// the move names, or of either side for a kind whose move names none, or,
// with other, of either side for any kind (by is then the peer when the
// peer logged last: after_side) ("" when no such side logged anything
// yet).
func phaseOf(want []obslog.Label, k system.Fault, m system.Move, other bool) (sd, by model.Side, after string) {
	for _, l := range want {
		var logger model.Side
		switch l.By {
		case obslog.BySource:
			logger = model.SourceSide
		case obslog.ByDestination:
			logger = model.DestinationSide
		default:
			continue
		}
		on := logger
		if cluster.NamesSide(k) {
			on = model.Side(m.Arg)
			if logger != on && !other {
				continue
			}
		}
		sd, by, after = on, logger, l.Kind.String()
	}
	return sd, by, after
}

// runPlan runs a plan; with log, it returns the run's observation log.
func runPlan(ctx context.Context, proto *system.Protocol, cfg *cluster.Config, reqs []cluster.Request, faults []faultplan.Fault, log bool) ([]obslog.Fact, *sim.Result, error) {
	opt := sim.Options{Protocol: proto, Faults: toCluster(faults)}
	var buf bytes.Buffer
	if log {
		w, err := obslog.NewWriter(&buf, cfg.LogHeader(obslog.All))
		if err != nil {
			return nil, nil, err
		}
		opt.Log = w
	}
	res, err := sim.Run(ctx, cfg, &sim.SliceSource{Reqs: slices.Clone(reqs)}, opt)
	if err != nil {
		return nil, nil, fmt.Errorf("repro: the plan's run: %w", err)
	}
	if !log {
		return nil, res, nil
	}
	if err := opt.Log.Flush(); err != nil {
		return nil, nil, err
	}
	rd, err := obslog.NewReader(&buf, "plan")
	if err != nil {
		return nil, nil, fmt.Errorf("repro: the plan's log: %w", err)
	}
	var facts []obslog.Fact
	for {
		f, err := rd.Next()
		if err == io.EOF {
			return facts, res, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("repro: the plan's log: %w", err)
		}
		facts = append(facts, f)
	}
}

func toCluster(fs []faultplan.Fault) []cluster.Fault {
	out := make([]cluster.Fault, len(fs))
	for i, f := range fs {
		out[i] = cluster.Fault{File: FaultsFile, Line: i + 2, AtUS: f.AtUS, Kind: f.Kind, Request: f.Request, Worker: f.Worker, To: f.To, Side: f.Side, Msg: f.Msg, After: f.After, AfterSide: f.AfterSide}
	}
	return out
}

// phaseTime is when the run logged, for request r, the last of the facts
// the trace logged for it (matched in order, each at or after the one
// before), or the request's arrival when the trace logged none.
func phaseTime(facts []obslog.Fact, r int, want []obslog.Label) int64 {
	name := cluster.AttemptName(&cluster.Request{Index: r}, 0)
	at := int64(r)
	j := 0
	for _, f := range facts {
		if j == len(want) {
			break
		}
		if f.Attempt != name || f.Kind != want[j].Kind || f.TUS < 0 {
			continue
		}
		at = f.TUS
		j++
	}
	return at
}

// planSteps replays the moves and reads each step's handoff, side and
// observable facts; a move no plan can schedule is why there is no plan.
func planSteps(c *checker.Checker, cfg *system.Config, moves []system.Move) (out []planStep, skipped []string, why string) {
	s := c.Initial()
	for i, m := range moves {
		before := s
		r, err := c.Apply(&s, m)
		if err != nil {
			return nil, nil, fmt.Sprintf("step %d (%s) does not replay: %v", i+1, m, err)
		}
		st := planStep{m: m, h: int(m.H)}
		if m.Kind == system.MvDeliver {
			x := &before.W.H[m.H]
			held, _ := cluster.Holds(x, model.Side(m.Arg), true)
			st.retired = x.Outcome[m.Arg] != model.OutcomeNone && !held
		}
		if k, ok := m.Kind.Spends(); ok && k.Move() == m.Kind && !cluster.Planned(k) {
			if !system.FaultKinds[k].LeftOut {
				return nil, nil, fmt.Sprintf("step %d (%s) is a %s fault, which no plan schedules: %s", i+1, m, k, system.FaultKinds[k].Unplanned)
			}
			// Untimed, a timer fires only once nothing else can happen
			// (without the early_timer fault), and a handoff whose decode
			// is never routed is how a trace gets there; the clock fires
			// timers at their deadlines without it. The plan leaves the
			// no-show out and its request is routed as any other.
			skipped = append(skipped, fmt.Sprintf("step %d (%s)", i+1, m))
			continue
		}
		if m.Kind == system.Restart.Move() {
			st.h, st.worker = -1, simWorker(cfg.World.Workers, int(m.Arg))
			for h := range before.W.H[:len(cfg.World.Handoffs)] {
				x := &before.W.H[h]
				switch int(m.Arg) {
				case int(x.Prefill):
					st.h, st.side = h, model.SourceSide
				case int(x.Decode):
					st.h, st.side = h, model.DestinationSide
				}
				if st.h >= 0 {
					break
				}
			}
			if st.h < 0 {
				return nil, nil, fmt.Sprintf("step %d (%s) restarts a worker no handoff is on", i+1, m)
			}
		}
		if st.h >= 0 {
			st.labels = obslog.Observe(nil, st.h, &before, &s, m, r.Fired)
			b, a := before.W.H[st.h].Timers, s.W.H[st.h].Timers
			for t := model.Timer(0); t < model.NumTimers; t++ {
				if b&(1<<t) == 0 && a&(1<<t) != 0 {
					st.arms = append(st.arms, t)
				}
			}
		}
		out = append(out, st)
	}
	return out, skipped, ""
}

// requestOrder is the trace's handoffs in the order it first moves them.
func requestOrder(steps []planStep) []int {
	var out []int
	for _, st := range steps {
		if st.h >= 0 && !slices.Contains(out, st.h) {
			out = append(out, st.h)
		}
	}
	return out
}

// planConfig is the cluster of the trace: its workers' pools, the run's
// policy and engine, no jitter (the clock alone orders the steps), read
// back from its file form so that what is written is what simulate
// reads.
func planConfig(cfg *system.Config, run system.Run) (*cluster.Config, error) {
	cc := cluster.DefaultConfig()
	if err := cc.SetPolicy(run.Policy.String()); err != nil {
		return nil, err
	}
	cc.Engine = run.Engine
	cc.JitterUS = 0
	cc.Prefill.Workers, cc.Decode.Workers = 0, 0
	for _, w := range cfg.World.Workers {
		if w.Role == model.PrefillWorker {
			cc.Prefill.Workers++
		} else {
			cc.Decode.Workers++
		}
	}
	cc.Prefill.Workers, cc.Decode.Workers = max(cc.Prefill.Workers, 1), max(cc.Decode.Workers, 1)
	cc.Renewal = cfg.Renewal
	cc.Commands = cfg.Commands
	return cluster.ParseConfig(SimFile, cc.JSON())
}

// simWorker is the simulator's number of a trace's worker: the prefill
// workers first, then the decode ones, each in the trace's order.
func simWorker(ws []model.WorkerConfig, w int) int {
	n := 0
	for i, x := range ws {
		if x.Role == model.PrefillWorker {
			if i == w {
				return n
			}
			n++
		}
	}
	for i, x := range ws {
		if x.Role != model.PrefillWorker {
			if i == w {
				return n
			}
			n++
		}
	}
	return w
}

// hasTimedFault reports whether a fault of the trace is placed by time,
// not by phase.
func hasTimedFault(steps []planStep) bool {
	for _, st := range steps {
		if _, fault := st.m.Kind.Spends(); fault && st.m.Kind != system.Restart.Move() {
			return true
		}
	}
	return false
}

// shaped is a configuration with a shape's durations.
func shaped(base *cluster.Config, shape planShape) *cluster.Config {
	cc := *base
	if shape.latencyUS > 0 {
		cc.LatencyUS = shape.latencyUS
	}
	if shape.commandUS > 0 {
		cc.CommandUS = shape.commandUS
	}
	return &cc
}

// shapedReqs are the requests with a shape's output.
func shapedReqs(reqs []cluster.Request, shape planShape) []cluster.Request {
	rs := slices.Clone(reqs)
	if shape.output > 0 {
		for i := range rs {
			rs[i].OutputTokens = shape.output
		}
	}
	return rs
}

// deadlines are the deadlines that fire each timer the trace fires where
// it fires it: from the time a run logs the facts of the step that armed
// it to a microsecond after the time it logs the facts of the step
// before it fires (0 for a timer the run cannot place so).
func (p *Plan) deadlines(ctx context.Context, proto *system.Protocol, cfg *cluster.Config, reqs []cluster.Request, steps []planStep, reqOf map[int]int, fired []model.Timer) ([]int64, error) {
	p.Runs++
	log, _, err := runPlan(ctx, proto, cfg, reqs, nil, true)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(fired))
	for i, t := range fired {
		armed, at := -1, -1
		for j, st := range steps {
			if slices.Contains(st.arms, t) {
				armed = j
			}
			if st.m.Kind == system.MvTimer && model.Timer(st.m.Arg) == t {
				at = j
				break
			}
		}
		if armed < 0 || at <= armed {
			continue
		}
		h := steps[at].h
		r := reqOf[h]
		var upTo []obslog.Label
		var armLabels []obslog.Label
		for j, st := range steps[:at] {
			if st.h != h {
				continue
			}
			upTo = append(upTo, st.labels...)
			if j <= armed {
				armLabels = append(armLabels, st.labels...)
			}
		}
		if d := phaseTime(log, r, upTo) + 1 - phaseTime(log, r, armLabels); d > 0 {
			out[i] = d
		}
	}
	return out, nil
}

// Summary says in words what the plan is.
func (p *Plan) Summary() string {
	var b strings.Builder
	if len(p.Requests) == 1 {
		b.WriteString("one request for the trace's handoff")
	} else {
		fmt.Fprintf(&b, "%d requests, one per handoff, arriving in the order the trace starts them", len(p.Requests))
	}
	n := len(p.Faults)
	if p.Pinned != "" {
		n-- // pinLive's, appended last
	}
	switch n {
	case 0:
	case 1:
		fmt.Fprintf(&b, ", and the trace's %s, aimed at its request where the trace strikes it", p.Faults[0].Kind)
	default:
		fmt.Fprintf(&b, ", and the trace's %d faults, each aimed at its request where the trace strikes it", n)
	}
	if p.Pinned != "" {
		b.WriteString(", and " + p.Pinned + ": it ends as it was then, so that a live run logs nothing of it that could be placed before that step")
	}
	if p.Timers != "" {
		b.WriteString("; the timers the trace fires before the steps after them are due fire at shortened deadlines (" + p.Timers + ")")
	}
	if p.LoopCaps != "" {
		fmt.Fprintf(&b, "; every deadline longer than %s ms capped at it (%s), with which the run still loops, so that a live run of it ends seconds after it begins", workload.FormatMillis(loopCapUS), p.LoopCaps)
	}
	if p.Shape != "" {
		b.WriteString("; " + p.Shape)
	}
	if len(p.Skipped) > 0 {
		b.WriteString("; the no-show of " + strings.Join(p.Skipped, ", ") + " is left out: untimed, it leaves nothing but timers to happen, and the clock fires them at their deadlines without it")
	}
	return b.String()
}

// Live's bounds, as `handoffcheck live` applies them: its default
// --time-scale, the largest it accepts, and the shortest a timer may
// last on the wall clock (below it, scheduling delay alone fires every
// timer, and live refuses the configuration).
const (
	liveScale      = 0.01
	liveMaxScale   = 1000
	liveMinTimerUS = 1000
)

// LiveNote says what a live run of the plan keeps of the trace's order,
// and why it may not break the invariant: a deadline live refuses to
// scale so short, a fault placed by time, which live does not read.
func (p *Plan) LiveNote() string {
	var timed []string
	for _, f := range p.Faults {
		if k, ok := system.ParseFault(f.Kind); f.After != "" || f.Request < 0 || ok && (system.FaultKinds[k].Instead != 0 || system.FaultKinds[k].Runner) {
			// Struck where live strikes it too: in place of the protocol
			// move it replaces (a fact at the first of its name, a
			// transfer's end), or at the request's transfer by its runner
			// (a hang).
			continue
		}
		timed = append(timed, fmt.Sprintf("%s at %s ms", f.Kind, workload.FormatMillis(f.AtUS)))
	}
	note := "A live run's order is its processes' own, on a wall clock scaled by `--time-scale`"
	switch {
	case len(timed) > 0:
		note += fmt.Sprintf(": the plan's %s %s placed by time", strings.Join(timed, ", "), isAre(len(timed)))
		if p.timedWhy != "" {
			note += " (" + p.timedWhy + ")"
		}
		note += ", which a live run does not read: it strikes such a mark where the request first offers it (a cancel as the request is routed), so live may strike it before or after the phase the trace strikes it at, and the run may break nothing"
	case len(p.Faults) > 0:
		note += ": the plan's faults are aimed at phases of the handoff, which a live run strikes at the same point (a lost or duplicated fact at the first of its name to its side, a hang or a transfer failure at the request's transfer)"
	default:
		note += ": the plan has no fault, so the steps need only the order the configuration's durations give them"
	}
	if slices.ContainsFunc(p.Faults, func(f faultplan.Fault) bool { return f.Kind == "delay" }) {
		// A slowed core answers late: a live run's other steps may come
		// first, and tables that leave a side nothing to take for the
		// late answer leave the attempt stuck.
		note += ". The plan slows a core: where its late command leaves a side in a state the tables give nothing to take, the attempt is stuck, and the live run ends on the invariant the simulator names for a stuck side (Quiescence, BoundedReclaim or BoundedGiveUp), naming the attempt and its sides (docs/live.md, a stuck attempt), its logs judged all the same"
	}
	if t, us := p.shortestTimer(); t != "" && float64(us)*liveScale < liveMinTimerUS {
		need := float64(liveMinTimerUS) / float64(us)
		note += fmt.Sprintf(". Live refuses this plan at its default `--time-scale` %g: its %s deadline of %s ms would last %.3g µs on the wall clock, under the %d ms below which scheduling delay alone fires every timer", liveScale, t, workload.FormatMillis(us), float64(us)*liveScale, liveMinTimerUS/1000)
		if need > liveMaxScale {
			note += fmt.Sprintf("; no `--time-scale` live accepts (at most %d) brings it to that", liveMaxScale)
		} else {
			note += fmt.Sprintf("; at `--time-scale` %.4g, which does, every other step of the plan lasts as much longer, and the deadline fires between the trace's steps only as closely as the processes keep to the clock", need)
		}
	} else if p.fitsLive {
		note += fmt.Sprintf(". Its deadlines are chosen for live: none under %s ms (%d ms of wall clock at the default `--time-scale` %g), and the simulator breaks the invariant with each %d times shorter and %d times longer too, so that a live run whose processes fall behind the clock fires them between the same steps", workload.FormatMillis(liveMinDeadlineUS), liveMinTimerUS/1000, liveScale, liveSlack, liveSlack)
	} else if p.Timers != "" {
		note += "; deadlines shortened to a few milliseconds may fire later live, where the processes fall behind"
	}
	return note + "." + p.judgedNote()
}

// shortestTimer is the plan's shortest deadline: its name in the
// configuration and its length ("" when the configuration has none).
func (p *Plan) shortestTimer() (string, int64) {
	if p.Config == nil {
		return "", 0
	}
	t := p.Config.Timers
	name, us := "", int64(0)
	for _, x := range []struct {
		name string
		us   int64
	}{{"lease", t.LeaseUS}, {"heartbeat", t.HeartbeatUS}, {"bootstrap", t.BootstrapUS}, {"reservation", t.ReservationUS},
		{"transfer", t.TransferDeadlineUS}, {"health check", p.Config.HealthCheckUS}} {
		if x.us > 0 && (name == "" || x.us < us) {
			name, us = x.name, x.us
		}
	}
	return name, us
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// files adds the plan's files to a reproduction's, when it reaches the
// invariant.
func (p *Plan) files(out map[string][]byte) error {
	if p == nil || p.Result == nil {
		return nil
	}
	var w bytes.Buffer
	wr, err := workload.NewWriter(&w, workload.Header{Name: "repro"})
	if err != nil {
		return err
	}
	for _, r := range p.Requests {
		if err := wr.Write(workload.Request{ArrivalUS: r.ArrivalUS, PromptTokens: int(r.PromptTokens), OutputTokens: int(r.OutputTokens)}); err != nil {
			return err
		}
	}
	var f bytes.Buffer
	if err := faultplan.Write(&f, &faultplan.Plan{Faults: p.Faults}); err != nil {
		return err
	}
	var c bytes.Buffer
	if err := json.Indent(&c, p.Config.JSON(), "", "  "); err != nil {
		return err
	}
	c.WriteByte('\n')
	out[WorkloadFile], out[FaultsFile], out[SimFile] = w.Bytes(), f.Bytes(), c.Bytes()
	return nil
}

// LoopLiveNote says what a live run of a loop's plan does and how its
// logs are judged: live judges no bound on time, so the run goes on
// looping until its coordinator, hearing nothing, ends it, and conform
// names the loop.
func (p *Plan) LoopLiveNote() string {
	note := p.LiveNote()
	end := "ends once its coordinator has heard nothing for three times its stall bound (four times the longest deadline, scaled)"
	if p.LoopCaps != "" {
		end += fmt.Sprintf(", seconds with the plan's deadlines capped at %s ms", workload.FormatMillis(loopCapUS))
	}
	return note + " A live run judges no bound on time: once the faults struck, nothing but the loop happens, which logs its steps to the worker's log and sends nothing, and the run " + end +
		", the worker saying a deadline is still armed (a stall the run cannot tell from a loaded machine, docs/live.md). `conform` rejects the logs naming " + p.target +
		": from the state they leave the attempt in, the steps the tables take on their own (no fault, no timer fired while something else could happen) never drain it, a fact still in flight there counting as lost once a deadline armed after its sending has run out (docs/conform.md)."
}
