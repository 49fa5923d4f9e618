package repro

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/sim/faultplan"
	"github.com/handoffcheck/handoffcheck/checker/sim/workload"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// liveMinDeadlineUS is the shortest deadline live accepts at its default
// --time-scale: liveMinTimerUS of wall clock.
const liveMinDeadlineUS = int64(liveMinTimerUS / liveScale)

// liveLadder is the deadlines a plan live can run gives each timer the
// trace fires (0: the configuration's own): none shorter than live
// accepts at its default time scale, the shortest first (a live run
// lasts as long as its deadlines, and the longer it lasts on a loaded
// machine the likelier live finds its processes late and runs it again
// at a larger time scale).
var liveLadder = []int64{1_000_000, 3_000_000, 300_000, liveMinDeadlineUS, 0}

// liveShapes are the shapes of the clock a plan live can run is tried
// in: the configuration's own, and facts so slow that a timer of the
// ladder fires between a fact's sending and its delivery with tens of
// milliseconds of wall clock to spare either way (live's processes keep
// to the clock only that closely on a loaded machine).
var liveShapes = []planShape{
	{name: ""},
	{name: "facts much slower than the timers (5 s latency)", latencyUS: 5_000_000},
}

// liveSlack is how far a live run's timer may fire from its deadline,
// relative to the steps of the other processes, and still break the
// invariant in a plan live can run: the simulator's run breaks it with
// every deadline a factor liveSlack shorter and longer too.
const liveSlack = 4

// maxLiveRuns bounds the simulations run to find a plan live can run.
const maxLiveRuns = 200

// fitLive looks, for a plan whose shortest deadline live refuses to
// scale at its default time scale, for one live runs: its deadlines
// none shorter than live accepts, and breaking the invariant on the
// clock with each of them liveSlack times shorter and longer, so that a
// live run, whose processes keep to the clock only so closely, fires the
// timers between the same steps. When it finds one it takes its place
// (it breaks the invariant on the clock too); otherwise the plan is kept
// and its README says live refuses it.
func (p *Plan) fitLive(ctx context.Context, proto *system.Protocol, base *cluster.Config, reqs []cluster.Request, steps []planStep, reqOf map[int]int, fired []model.Timer, invariant string) error {
	if _, us := p.shortestTimer(); us == 0 || us >= liveMinDeadlineUS || len(fired) == 0 {
		return nil
	}
	runs := 0
	for _, shape := range liveShapes {
		for _, d := range liveCandidates(len(fired)) {
			for _, offset := range faultOffsets {
				if runs >= maxLiveRuns || ctx.Err() != nil {
					return nil
				}
				rs := shapedReqs(reqs, shape)
				cc := withDeadlines(shaped(base, shape), fired, d, 1)
				before := p.Runs
				faults, res, err := p.aim(ctx, proto, cc, rs, steps, reqOf, offset)
				runs += p.Runs - before
				if err != nil {
					return err
				}
				if res != nil && res.Violation != nil && res.Violation.Invariant == invariant && p.slack(ctx, proto, base, shape, rs, faults, fired, d, invariant, &runs) {
					back, err := cluster.ParseConfig(SimFile, cc.JSON())
					if err != nil {
						return fmt.Errorf("repro: the plan's configuration: %w", err)
					}
					p.Runs++
					_, again, err := runPlan(ctx, proto, back, rs, faults, false)
					if err != nil {
						return err
					}
					if again.Violation != nil && again.Violation.Invariant == invariant {
						p.Config, p.Requests, p.Faults, p.Result, p.Shape = back, rs, faults, again, shape.name
						p.Timers = deadlineNames(fired, d)
						p.fitsLive = true
						if offset >= 0 {
							p.timedWhy = "aimed at the phases the trace strikes them at, the simulator's run does not break " + invariant
						} else {
							p.timedWhy = "its side logs nothing for the request before it, or it is of a kind not aimed at a phase"
						}
						return nil
					}
				}
				if !hasTimedFault(steps) {
					break
				}
			}
		}
	}
	return nil
}

// slack reports whether the plan breaks the invariant on the clock with
// every deadline it shortens liveSlack times shorter and longer.
func (p *Plan) slack(ctx context.Context, proto *system.Protocol, base *cluster.Config, shape planShape, reqs []cluster.Request, faults []faultplan.Fault, fired []model.Timer, d []int64, invariant string, runs *int) bool {
	for _, f := range []float64{1.0 / liveSlack, liveSlack} {
		cc := withDeadlines(shaped(base, shape), fired, d, f)
		p.Runs++
		*runs++
		_, res, err := runPlan(ctx, proto, cc, reqs, faults, false)
		if err != nil || res.Violation == nil || res.Violation.Invariant != invariant {
			return false
		}
	}
	return true
}

// liveCandidates lists the deadlines of n timers a plan live can run
// tries: each timer at a rung of liveLadder, all n at the same rung
// beyond two.
func liveCandidates(n int) [][]int64 { return rungs(liveLadder, n) }

// withDeadlines is a configuration with the timers fired set to the
// deadlines d (0: the configuration's own), each times f.
func withDeadlines(base *cluster.Config, fired []model.Timer, d []int64, f float64) *cluster.Config {
	cc := *base
	for i, t := range fired {
		if d[i] > 0 {
			cc.Timers.Set(t, max(1, int64(float64(d[i])*f)))
		}
	}
	return &cc
}

// deadlineNames names the deadlines a plan sets, as Plan.Timers does.
func deadlineNames(fired []model.Timer, d []int64) string {
	var named []string
	for i, t := range fired {
		if d[i] > 0 {
			named = append(named, fmt.Sprintf("%s %s ms", t, workload.FormatMillis(d[i])))
		}
	}
	return strings.Join(named, ", ")
}

// pinLive aborts the peer of the side the violating step delivers a fact
// to right after the peer logs the last of its facts before the
// violation, when that keeps the violation and lets a live run's logs
// show it. A live run goes on past the violation: the peer's later facts
// (a reservation applied after the fact that announced it) may be placed
// by the judge before the step that takes the fact, and the logs are
// then explained. Aborted there, the peer ends with what it logged up to
// the fact: every order of the logs has the violating step take the fact
// with the peer as it was, as a run captured at the incident would.
// The abort is kept only when the simulator's run still breaks the
// invariant, the peer reports its terminal outcome before the violation
// (it logs nothing after it), and the judge, judging that run as a live
// run's logs, names the invariant.
func (p *Plan) pinLive(ctx context.Context, proto *system.Protocol, steps []planStep, reqOf map[int]int, invariant string) error {
	if p.Judged == nil || p.Judged.Names() != invariant || p.retired != "" || len(steps) == 0 {
		return nil
	}
	last := steps[len(steps)-1]
	if last.m.Kind != system.MvDeliver {
		return nil
	}
	peer := model.Side(last.m.Arg).Other()
	req := reqOf[last.h]
	facts, _, err := runPlan(ctx, proto, p.Config, p.Requests, p.Faults, true)
	if err != nil {
		return err
	}
	h := p.Config.LogHeader(obslog.All)
	role := obslog.RolePrefill
	if peer == model.DestinationSide {
		role = obslog.RoleDecode
	}
	attempt := cluster.AttemptName(&cluster.Request{Index: req}, 0)
	var at obslog.Kind
	found := false
	for _, f := range facts {
		if f.Attempt != attempt || h.Processes[f.Proc].Role != role {
			continue
		}
		if f.Kind == obslog.OutcomeReported {
			return nil // the peer ended before the violation: nothing of it follows
		}
		at, found = f.Kind, true
	}
	if !found {
		return nil
	}
	peerProc := -1
	for _, f := range facts {
		if f.Attempt == attempt && h.Processes[f.Proc].Role == role {
			peerProc = f.Proc
		}
	}
	// An abort ends the side where the tables give its state a step for
	// one; a restart of its worker ends it in any state, and forgets
	// what it held.
	var whys []string
	for _, kind := range []string{"abort", "restart"} {
		pin := faultplan.Fault{Kind: kind, Request: req, Worker: -1, Side: sideName(peer), After: at.String()}
		pinned := fmt.Sprintf("an abort of the %s", sideName(peer))
		if kind == "restart" {
			pinned = fmt.Sprintf("a restart of the %s's worker", sideName(peer))
		}
		pinned += fmt.Sprintf(" right after it logs %s, the last of its facts before the %s takes its %s", at, sideName(peer.Other()), last.m.Msg)
		faults := append(slices.Clone(p.Faults), pin)
		p.Runs++
		facts, res, err := runPlan(ctx, proto, p.Config, p.Requests, faults, true)
		if err != nil {
			return err
		}
		if res.Violation == nil || res.Violation.Invariant != invariant {
			broke := "breaks nothing"
			if res.Violation != nil {
				broke = "breaks " + res.Violation.Invariant + " first"
			}
			whys = append(whys, fmt.Sprintf("with %s, the run on the clock %s", pinned, broke))
			continue
		}
		ended := false
		for _, f := range facts {
			if kind == "abort" {
				ended = ended || f.Attempt == attempt && h.Processes[f.Proc].Role == role && f.Kind == obslog.OutcomeReported
			} else {
				ended = ended || f.Proc == peerProc && f.Kind == obslog.WorkerRestarted
			}
		}
		if !ended {
			whys = append(whys, fmt.Sprintf("with %s, that side has not ended by the violation (the tables give the state it is in then no step for the %s), so it goes on past it all the same", pinned, kind))
			continue
		}
		was := p.Judged
		keep := p.Faults
		p.Faults = faults
		if err := p.judgeAsLive(ctx, proto); err != nil {
			return err
		}
		if named := p.Judged.Names(); named != invariant {
			if named == "" {
				named = "no invariant"
			}
			whys = append(whys, fmt.Sprintf("with %s, the judge names %s on the run", pinned, named))
			p.Faults, p.Judged = keep, was
			continue
		}
		p.Result = res
		p.Pinned = pinned
		return nil
	}
	p.pinWhy = "Nor can the plan stop that side so that its later facts are never logged: " + strings.Join(whys, "; ") + "."
	return nil
}
