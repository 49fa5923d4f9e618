package sim

import (
	"fmt"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// NameStrandedBlockSeconds is a timed property of docs/lifecycle.md
// section 4, judged on every simulated run, beside the obligations
// (cluster.NameBoundedReclaim, cluster.NameBoundedGiveUp).
const NameStrandedBlockSeconds = "StrandedBlockSeconds"

// obligation is what BoundedReclaim asks of a side once its peer reached
// its terminal outcome, and BoundedGiveUp once the side itself learned the
// attempt is over: to return what it holds by a deadline.
type obligation struct {
	since    int64 // the peer's terminal outcome, or the side's give-up
	deadline int64
	ver      uint32
	// excused: for BoundedReclaim, the telling fact was lost or its sender
	// restarted; for BoundedGiveUp, the side waits for its hung
	// transfer's deadline.
	excused bool
	slow    bool   // the side's core fell behind
	why     string // the event the side gave up on (BoundedGiveUp)
}

// holds is what BoundedReclaim asks a side to return (cluster.Holds
// without the decode).
func holds(x *model.Handoff, sd model.Side) (bool, string) {
	return cluster.Holds(x, sd, false)
}

// holdsAny is what BoundedGiveUp asks a side to return: everything it
// holds for the request, an activated destination's decode included.
func holdsAny(x *model.Handoff, sd model.Side) (bool, string) {
	return cluster.Holds(x, sd, true)
}

// owe opens BoundedReclaim's obligation on the peer of a side that just
// reached its terminal outcome, if the peer holds something.
func (s *Sim) owe(r *request, sd model.Side) {
	peer := sd.Other()
	x := &r.st.W.H[0]
	if x.Worker(peer) < 0 || r.owed[peer] != nil {
		return
	}
	if ok, _ := holds(x, peer); !ok {
		return
	}
	o := &obligation{since: s.now, deadline: s.now + s.reclaimBound()}
	r.owed[peer] = o
	s.push(&event{at: o.deadline, kind: evReclaim, r: r, side: peer, ver: o.ver})
}

// reclaimBound is how long BoundedReclaim gives a side: the fact's
// delivery, its scheduler core applying the release, and the grace.
func (s *Sim) reclaimBound() int64 { return s.maxDelivery() + 2*s.cfg.CommandUS + s.cfg.GraceUS }

// settleObligations closes the obligations whose side returned everything.
func (s *Sim) settleObligations(r *request) {
	x := &r.st.W.H[0]
	for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
		o := r.owed[sd]
		if o == nil {
			continue
		}
		if ok, _ := holds(x, sd); !ok || r.retired {
			s.stats.reclaimed(s.now - o.since)
			r.owed[sd] = nil
		}
	}
}

// checkReclaim judges an obligation at its deadline. When the fact that
// would have told the side was lost, or the peer's process restarted, the
// side may wait for its own deadline: the obligation moves there. A side
// with no deadline armed would hold its blocks for good.
func (s *Sim) checkReclaim(r *request, sd model.Side, ver uint32) {
	o := r.owed[sd]
	if r.retired || o == nil || o.ver != ver {
		return
	}
	x := &r.st.W.H[0]
	ok, what := holds(x, sd)
	if !ok {
		s.settleObligations(r)
		return
	}
	peer := sd.Other()
	if !o.slow && x.Slow[sd] {
		// The side's scheduler core fell behind (the delay fault): its
		// commands take the slow core's time.
		o.slow = true
		s.recheck(r, sd, o, evReclaim, o.deadline+s.cfg.SlowCoreUS)
		return
	}
	if !o.excused && (r.lost[sd] || x.Outcome[peer] == model.OutcomeForgotten) {
		o.excused = true
		own := int64(-1)
		if x.Outcome[peer] == model.OutcomeForgotten {
			// A restart is told by the side's own health checks.
			own = o.since + s.cfg.HealthCheckUS
		}
		for t := model.Timer(0); t < model.NumTimers; t++ {
			if t.Side() == sd && r.timerAt[t] >= 0 && t != model.TimerHeartbeat {
				own = max(own, r.timerAt[t])
			}
		}
		if own >= 0 {
			s.recheck(r, sd, o, evReclaim, max(o.deadline, own+s.reclaimBound()))
			return
		}
	}
	if o.excused && sd == model.SourceSide && (x.Compute == model.ComputeQueued || x.Compute == model.ComputeRunning) {
		// A prefill under way ends by itself, and the source, untold,
		// learns at its first step after it (destination-first: the
		// push into the fenced reservation fails).
		s.recheck(r, sd, o, evReclaim, s.now+s.reclaimBound())
		return
	}
	why := fmt.Sprintf("the %s ended %s at %s", peer, x.Outcome[peer], fmtMS(o.since))
	bound := "the delivery latency and the grace"
	if o.excused {
		bound = "its own deadline"
		if r.lost[sd] {
			why += " and the fact that would tell the " + sd.String() + " was lost"
		} else {
			why += " and its process restarted"
		}
	}
	s.fail(r, cluster.NameBoundedReclaim, fmt.Sprintf("%s, yet the %s (worker %d) still holds %s %s later, beyond %s (%s)",
		why, sd, x.Worker(sd), what, fmtDur(s.now-o.since), bound, fmtDur(o.deadline-o.since)))
	if !s.halted(r) {
		// A run that keeps going: the obligation is judged, broken;
		// the request goes on (a late release is still a release).
		r.owed[sd] = nil
	}
}

// giveUp opens BoundedGiveUp's obligation on a side whose row just took
// an event that gives the attempt up, if the side holds something.
func (s *Sim) giveUp(r *request) {
	x := &r.st.W.H[0]
	fires := s.step.Firings()
	for i := range fires {
		f := &fires[i]
		sd := model.SourceSide
		if f.Role == spec.Destination {
			sd = model.DestinationSide
		}
		if r.gaveUp[sd] != nil || !cluster.GivesUp(f) {
			continue
		}
		if ok, _ := holdsAny(x, sd); !ok {
			continue
		}
		o := &obligation{since: s.now, deadline: s.now + s.reclaimBound(), why: system.EventName(f.Role, f.Event)}
		r.gaveUp[sd] = o
		s.push(&event{at: o.deadline, kind: evGiveUp, r: r, side: sd, ver: o.ver})
	}
}

// settleGiveUps closes the BoundedGiveUp obligations whose side returned
// everything.
func (s *Sim) settleGiveUps(r *request) {
	x := &r.st.W.H[0]
	for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
		if r.gaveUp[sd] == nil {
			continue
		}
		if ok, _ := holdsAny(x, sd); !ok || r.retired {
			s.stats.gaveUpIn(s.now - r.gaveUp[sd].since)
			r.gaveUp[sd] = nil
		}
	}
}

// checkGiveUp judges a BoundedGiveUp obligation at its deadline. A side
// whose scheduler core fell behind gets the slow core's time. A
// destination whose pages a transfer may still write waits for the writes
// to stop (DestinationHeldWhileWritten): for a transfer that runs, until
// it ends; for one that hung, until its own transfer deadline.
func (s *Sim) checkGiveUp(r *request, sd model.Side, ver uint32) {
	o := r.gaveUp[sd]
	if r.retired || o == nil || o.ver != ver {
		return
	}
	x := &r.st.W.H[0]
	ok, what := holdsAny(x, sd)
	if !ok {
		s.settleGiveUps(r)
		return
	}
	later := func(at int64) { s.recheck(r, sd, o, evGiveUp, at) }
	if !o.slow && x.Slow[sd] {
		o.slow = true
		later(o.deadline + s.cfg.SlowCoreUS)
		return
	}
	bound := "the delivery latency, its core applying the command and the grace"
	if o.excused {
		bound = "its hung transfer's deadline and then " + bound
	}
	if sd == model.DestinationSide && x.Xfer == model.XferRunning {
		if !x.Hung {
			later(s.now + s.reclaimBound())
			return
		}
		if at := r.timerAt[model.TimerPull]; at >= 0 && !o.excused {
			o.excused = true
			later(max(o.deadline, at+s.reclaimBound()))
			return
		}
		if !o.excused {
			bound += " (the transfer hung, and no deadline of its own is left to wait for)"
		}
	}
	s.fail(r, cluster.NameBoundedGiveUp, fmt.Sprintf("the %s (worker %d) gave the attempt up at %s (%s), yet still holds %s %s later, beyond %s (%s)",
		sd, x.Worker(sd), fmtMS(o.since), o.why, what, fmtDur(s.now-o.since), bound, fmtDur(o.deadline-o.since)))
	if !s.halted(r) {
		r.gaveUp[sd] = nil
	}
}

// recheck moves an obligation's deadline to at: the event queued for the
// old one goes stale.
func (s *Sim) recheck(r *request, sd model.Side, o *obligation, kind evKind, at int64) {
	o.ver++
	o.deadline = at
	s.push(&event{at: at, kind: kind, r: r, side: sd, ver: o.ver})
}

func fmtDur(d int64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", float64(d)/1000), "0"), ".") + " ms"
}

// strand keeps the stranded blocks of a request current: the blocks it
// pins or reserves once the attempt can no longer succeed
// (StrandedBlockSeconds), and its source's blocks pinned after compute
// while decode waits (SourceStranded).
func (s *Sim) strand(r *request) {
	var now [2]model.Blocks
	if r.doomedAt >= 0 {
		now[0] = r.Hold[0].Pinned()
		now[1] = r.Hold[1].Reserved()
	}
	for k := 0; k < 2; k++ {
		w := r.p
		if k == 1 {
			w = r.d
		}
		if w >= 0 && now[k] != r.stranded[k] {
			s.stats.strand(s, w, now[k]-r.stranded[k])
		}
		r.stranded[k] = now[k]
	}
	src := cluster.StrandedSource(&r.st.W.H[0], r.Hold[0])
	if r.p >= 0 && src != r.srcStrand {
		s.stats.strandSource(s, r.p, src-r.srcStrand)
	}
	r.srcStrand = src
}
