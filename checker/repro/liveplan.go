package repro

import (
	"context"
	"fmt"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
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
