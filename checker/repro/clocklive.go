package repro

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/sim/workload"
	"github.com/handoffcheck/handoffcheck/checker/system"
)

// LiveClockError is the clock error a live plan's logs are judged with
// (conform --clock-error) where the judge needs the clock: a live run's
// processes share one host and stamp every fact from its one clock,
// right after the step took effect and before anything the step sends
// leaves; a transfer's end is stamped once its time is up, after the
// read (docs/conform.md), and a plan's transfers of a few blocks last
// well under a millisecond. Four runs of live's default workload, three
// beside two CPU-bound processes on two cores, are explained with 5 ms
// and 10 ms; two are rejected with 1 ms (three with 0), at a
// transfer_done stamped after the release or restart its read came
// before.
const LiveClockError = 10 * time.Millisecond

// liveClockGap is how far apart, on the wall clock, a clocked live
// plan's run puts the violation and the fact logged after it that the
// judge must not place before it: ten times the 2·LiveClockError the
// judge needs, so that the stamps order them however late the processes
// run.
const liveClockGap = 10 * 2 * LiveClockError

// clockLive makes a live plan of one whose violation only the clock can
// show live: the judge names the invariant on the plan's run cut at the
// violation, but a live run goes on past it, and no abort or restart of
// the peer keeps its later facts out of the logs (pinWhy). What the
// plan's fault leaves for later is what the judge would place before the
// violation: a slowed core's late command (delay), a hung transfer's
// failure at the runner's health check once a registration it uses is
// gone (hang). Both come long after the violation on the clock; the
// plan's live run is given a --time-scale that makes that gap
// liveClockGap of wall clock at least, and its logs the clock error
// LiveClockError, with which the judge orders those facts after the
// violation. It is kept when the judge, given the clock error on the
// plan's run as it would be on the live run's stamps, still names the
// invariant.
func (p *Plan) clockLive(ctx context.Context, proto *system.Protocol, invariant string) error {
	if p.Pinned != "" || p.pinWhy == "" || p.Judged == nil || p.Judged.Names() != invariant || p.Result == nil || p.Result.Violation == nil {
		return nil
	}
	gapUS, what := int64(0), ""
	for _, f := range p.Faults {
		var us int64
		var w string
		switch f.Kind {
		case "delay":
			us, w = p.Config.SlowCoreUS, "the slowed core's late command"
		case "hang":
			us, w = p.Config.HealthCheckUS, "the hung transfer's failure (at the runner's health check)"
		default:
			continue
		}
		us -= p.Result.Violation.AtUS
		if us > 0 && (gapUS == 0 || us < gapUS) {
			gapUS, what = us, w
		}
	}
	if gapUS == 0 {
		return nil
	}
	scale := max(liveScale, roundUp2(float64(liveClockGap.Microseconds())/float64(gapUS)))
	if scale > liveMaxScale {
		return nil
	}
	was := p.Judged
	p.liveClock = &liveClock{scale: scale, gapUS: gapUS, what: what}
	if err := p.judgeAsLive(ctx, proto); err != nil {
		return err
	}
	if p.Judged.Names() != invariant {
		p.liveClock, p.Judged = nil, was
	}
	return nil
}

// liveClock is how a clocked live plan runs and is judged (clockLive).
type liveClock struct {
	// scale is the live run's --time-scale; gapUS the configured time
	// between the violation and what is left for later, what.
	scale float64
	gapUS int64
	what  string
}

// LiveClock reports whether the plan's live run is judged with the
// clock error LiveClockError (clockLive).
func (p *Plan) LiveClock() bool { return p.liveClock != nil }

// LiveTimeScale is the --time-scale of a clocked live plan ("" when it
// runs at live's default).
func (p *Plan) LiveTimeScale() string {
	if p.liveClock == nil || p.liveClock.scale == liveScale {
		return ""
	}
	return strconv.FormatFloat(p.liveClock.scale, 'g', -1, 64)
}

// LiveClockError is the clock error a clocked live plan's logs are
// judged with, as the command line writes it.
func (p *Plan) LiveClockError() string { return LiveClockError.String() }

// LiveClockNote says why a clocked plan's logs are judged with a clock
// error: one host, one clock.
func (p *Plan) LiveClockNote() string {
	c := p.liveClock
	if c == nil {
		return ""
	}
	wall := time.Duration(float64(c.gapUS) * c.scale * float64(time.Microsecond))
	return fmt.Sprintf("A live run's processes share one host and so one clock, which stamps each fact right after its step: `--clock-error %s` has the judge of its logs explain a fact of one process before another's stamped more than %s later, and at `--time-scale` %s %s comes at least %s ms of virtual time, %s of wall clock, after the violation, so that the judge cannot place it before.",
		LiveClockError, 2*LiveClockError, strconv.FormatFloat(c.scale, 'g', -1, 64), c.what, workload.FormatMillis(c.gapUS), wall.Round(time.Millisecond))
}

// clockError is the clock error judgeAsLive gives the judge on the
// plan's run, whose stamps are configured time: the live run's, in
// configured time at its time scale (-1: none).
func (p *Plan) clockError() time.Duration {
	if p.liveClock == nil {
		return -1
	}
	return time.Duration(float64(LiveClockError) / p.liveClock.scale)
}

// roundUp2 rounds x up to two significant digits.
func roundUp2(x float64) float64 {
	if x <= 0 {
		return x
	}
	e := math.Pow(10, math.Floor(math.Log10(x))-1)
	// Written and read back, so that the figure is the one printed.
	v, _ := strconv.ParseFloat(strconv.FormatFloat(math.Ceil(x/e-1e-9)*e, 'g', 2, 64), 64)
	return v
}
