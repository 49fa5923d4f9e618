package live

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// A stuck attempt: a side in a state where the tables enable nothing for
// anything it can still receive, with no deadline armed, waits for ever,
// and so would the coordinator waiting for its outcome. The simulator
// sees the moment nothing is left to happen for the request; a live run
// sees only a silence. So once no frame has come and no event of the
// coordinator has run for stallBound, with attempts unfinished and
// nothing queued, the coordinator asks every worker what its open
// attempts wait for (KQuiet). A worker knows: what it scheduled, the
// deadlines it armed, a transfer it runs, the moves its window enables.
// When every answer says nothing can happen, and no frame came between
// the question and the last answer (a frame sent before an answer
// arrives before it), the run observed the stall: it ends naming the
// attempt with the invariant the simulator names for it (stuckVerdict).
// When the workers say something is still to happen (or a worker does
// not answer) and nothing happens for stallRounds bounds, the run cannot
// tell a stall from a machine too loaded to run its processes: it ends
// inconclusive.

// stallRounds is how many times stallBound a silence lasts, the workers
// naming something still to happen (or not answering), before the run
// ends inconclusive.
const stallRounds = 3

// stallFloor is the least silence the coordinator takes for a stall: on
// a loaded machine a process may not run for hundreds of milliseconds.
const stallFloor = 2 * time.Second

// Stall is how a run whose attempts stopped making progress ended.
type Stall struct {
	// Invariant is what the simulator names for the situation
	// (Quiescence, BoundedReclaim or BoundedGiveUp); empty when the run
	// is inconclusive.
	Invariant string `json:"invariant,omitempty"`
	// Attempt is the first unfinished attempt (in arrival order), Sides
	// what each of its sides is in and holds, as its worker said.
	Attempt string   `json:"attempt,omitempty"`
	Sides   []string `json:"sides,omitempty"`
	// Stuck counts the attempts unfinished when the run stopped.
	Stuck int `json:"stuck"`
	// Inconclusive: the silence could not be told from a loaded machine;
	// Why says what the workers answered.
	Inconclusive bool   `json:"inconclusive,omitempty"`
	Why          string `json:"why"`
	// SilenceMS is the silence, on the wall clock, the verdict waited.
	SilenceMS float64 `json:"silence_ms"`
}

// AttemptWait is a worker's answer about one open attempt: the side's
// state, what it holds, and why something can still happen to it ("":
// nothing can).
type AttemptWait struct {
	Attempt string `json:"attempt"`
	Side    string `json:"side"`
	State   string `json:"state"`
	Holds   string `json:"holds"`
	Busy    string `json:"busy,omitempty"`
	// Held: the side holds what BoundedReclaim asks it to return,
	// HeldAny what BoundedGiveUp asks (cluster.Holds with the decode).
	// GaveUp is the event
	// by which the side learned the attempt is over while holding
	// something (the simulator's givesUp), at GaveUpUS; LastUS its last
	// step; Slow: its scheduler core fell behind. Microseconds from the
	// epoch.
	Held     bool   `json:"held,omitempty"`
	HeldAny  bool   `json:"held_any,omitempty"`
	GaveUp   string `json:"gave_up,omitempty"`
	GaveUpUS int64  `json:"gave_up_us,omitempty"`
	LastUS   int64  `json:"last_us,omitempty"`
	Slow     bool   `json:"slow,omitempty"`
}

// stallBound is the silence after which the coordinator asks whether its
// attempts are stuck: four times the longest deadline of the
// configuration (its timers, the health check, a slow core), scaled,
// and at least stallFloor.
func (c *coord) stallBound() time.Duration {
	us := max(c.cfg.HealthCheckUS, c.cfg.SlowCoreUS)
	for t := model.Timer(0); t < model.NumTimers; t++ {
		us = max(us, c.cfg.TimerUS(t))
	}
	return max(4*c.dur(us), stallFloor)
}

// quiet is the coordinator's state of the question.
type quiet struct {
	active  time.Time // the last frame or event
	asked   time.Time // zero: no question out
	last    time.Time // when the last question was asked
	round   int64
	replies map[int][]AttemptWait
	busy    string // what the last answers named still to happen
}

// activity notes a frame or an event: whatever question is out is void.
func (c *coord) activity() {
	c.qt.active = time.Now()
	c.qt.asked = time.Time{}
	c.qt.busy = ""
}

// checkStall runs after every turn of the loop: asks, or judges the
// answers, while the run is silent with attempts unfinished.
func (c *coord) checkStall() {
	if c.latts != nil || c.draining || c.moreArrivals || c.q.Len() > 0 || c.finished >= c.arrived {
		c.activity()
		return
	}
	for _, cw := range c.ws {
		if cw.starting || cw.stopping || cw.conn == nil || cw.conn.bad {
			// Frames wait for a process, or a restart is under way.
			c.activity()
			return
		}
	}
	bound := c.stallBound()
	ask := bound
	if c.opt.StallAsk > 0 {
		ask = c.opt.StallAsk
	}
	if c.qt.asked.IsZero() && time.Since(c.qt.active) < ask {
		return // the common case, before the attempts are looked at
	}
	for _, a := range c.order {
		if !a.done && a.holding {
			c.activity()
			return
		}
	}
	if silence := time.Since(c.qt.active); silence >= stallRounds*bound {
		why := c.qt.busy
		if !c.qt.asked.IsZero() {
			why = c.missing()
		}
		c.endStalled(&Stall{Inconclusive: true, Stuck: c.unfinished(), SilenceMS: round3(float64(silence.Microseconds()) / 1000),
			Why: fmt.Sprintf("no frame and no step anywhere for %s, %d times the %s a stall is asked after, yet the workers do not say the attempts are stuck (%s): the machine may be too loaded to run its processes", fmtWall(silence), stallRounds, fmtWall(bound), why)})
		return
	}
	if c.qt.asked.IsZero() {
		if time.Since(c.qt.active) < ask || time.Since(c.qt.last) < ask {
			return
		}
		c.qt.round++
		c.rep.StallQuestions++
		c.qt.asked, c.qt.last = time.Now(), time.Now()
		c.qt.replies = map[int][]AttemptWait{}
		for _, cw := range c.ws {
			c.sendTo(cw.w, &Frame{Kind: KQuiet, FromUS: c.qt.round})
		}
		c.flush()
		return
	}
	if len(c.qt.replies) < len(c.ws) {
		if time.Since(c.qt.asked) >= bound {
			c.qt.busy, c.qt.asked = c.missing(), time.Time{}
		}
		return
	}
	// Every worker answered, and nothing came since the question.
	var sides []string
	var first *catt
	for _, a := range c.order {
		if a.done {
			continue
		}
		for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
			w := a.worker(sd)
			if w < 0 {
				if first == nil {
					sides = append(sides, fmt.Sprintf("%s: not routed", sd))
				}
				continue
			}
			i := slices.IndexFunc(c.qt.replies[w], func(x AttemptWait) bool { return x.Attempt == a.name })
			if i < 0 {
				if first == nil {
					sides = append(sides, fmt.Sprintf("%s (worker %d): retired (nothing held, its outcome %s)", sd, w, a.outcome[sd]))
				}
				continue
			}
			x := c.qt.replies[w][i]
			if x.Busy != "" {
				// Something is still to happen: asked again later.
				c.qt.busy = fmt.Sprintf("attempt %s: the %s (worker %d) in %s has %s", a.name, sd, w, x.State, x.Busy)
				c.qt.asked = time.Time{}
				return
			}
			if first == nil {
				sides = append(sides, fmt.Sprintf("%s (worker %d): state %s, nothing enabled and no deadline armed; %s", sd, w, x.State, x.Holds))
			}
		}
		if first == nil {
			first = a
		}
	}
	if first == nil {
		return
	}
	silence := time.Since(c.qt.active)
	inv, why := c.stuckVerdict(first)
	c.endStalled(&Stall{Invariant: inv, Attempt: first.name, Sides: sides, Stuck: c.unfinished(), SilenceMS: round3(float64(silence.Microseconds()) / 1000),
		Why: why + "; no frame and no step anywhere for " + fmtWall(silence) + ", and every worker says none of its open attempts has a move scheduled, a deadline armed or a transfer running"})
}

// stuckVerdict names what the simulator names for attempt a, stuck: the
// first to fall due of the obligations its sides carry (cluster.Holds,
// cluster.GivesUp, as the simulator judges them) and Quiescence. A side that holds something
// when its peer's outcome is made owes it back within the reclaim bound
// (BoundedReclaim), and the attempt is not quiescent while it owes; a
// side that gave the attempt up holding something owes it back within
// the same bound (BoundedGiveUp), a slowed core's time more; an attempt
// that owes nothing is quiescent at its last step (Quiescence).
func (c *coord) stuckVerdict(a *catt) (string, string) {
	rb := c.cfg.LatencyUS + c.cfg.JitterUS + 2*c.cfg.CommandUS + c.cfg.GraceUS
	scaled := func(us int64) int64 { return int64(float64(us) * c.opt.Scale) }
	type due struct {
		at       int64
		inv, why string
	}
	var dues []due
	owed := false
	last := max(a.outAt[0], a.outAt[1])
	for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
		w := a.worker(sd)
		if w < 0 {
			continue
		}
		i := slices.IndexFunc(c.qt.replies[w], func(x AttemptWait) bool { return x.Attempt == a.name })
		if i < 0 {
			continue
		}
		x := c.qt.replies[w][i]
		last = max(last, x.LastUS)
		bound := rb
		if x.Slow {
			bound += c.cfg.SlowCoreUS
		}
		peer := sd.Other()
		if a.outcome[peer] != model.OutcomeNone && x.Held {
			owed = true
			b := bound
			if a.outcome[peer] == model.OutcomeForgotten {
				// A restart is told by the side's own health checks.
				b += c.cfg.HealthCheckUS
			}
			dues = append(dues, due{a.outAt[peer] + scaled(b), cluster.NameBoundedReclaim,
				fmt.Sprintf("the %s ended %s, yet the %s (worker %d) still holds %s, stuck in %s", peer, a.outcome[peer], sd, w, x.Holds, x.State)})
		}
		if x.GaveUp != "" && x.HeldAny {
			dues = append(dues, due{x.GaveUpUS + scaled(bound), cluster.NameBoundedGiveUp,
				fmt.Sprintf("the %s (worker %d) gave the attempt up (%s), yet still holds %s, stuck in %s", sd, w, x.GaveUp, x.Holds, x.State)})
		}
	}
	if !owed {
		dues = append(dues, due{last, model.NameQuiescence, "nothing can happen for the attempt any more, yet it is not finished"})
	}
	best := dues[0]
	for _, d := range dues[1:] {
		if d.at < best.at {
			best = d
		}
	}
	return best.inv, best.why
}

// missing names the workers that did not answer the question out.
func (c *coord) missing() string {
	var ws []string
	for _, cw := range c.ws {
		if _, ok := c.qt.replies[cw.w]; !ok {
			ws = append(ws, fmt.Sprint(cw.w))
		}
	}
	return fmt.Sprintf("worker %s did not answer within %s", strings.Join(ws, ", "), fmtWall(time.Since(c.qt.asked)))
}

func (c *coord) unfinished() int {
	n := 0
	for _, a := range c.order {
		if !a.done {
			n++
		}
	}
	return n
}

// endStalled ends the run: the workers' ledgers as they are.
func (c *coord) endStalled(s *Stall) {
	c.rep.Stall = s
	c.end = time.Now()
	c.cpu = processCPU() - c.cpu0
	c.draining, c.forced = true, true
	c.drainStart = time.Now()
	for _, cw := range c.ws {
		c.sendTo(cw.w, c.drain("now"))
	}
	c.flush()
}

// quietReply takes a worker's answer to the current question.
func (c *coord) quietReply(w int, f *Frame) {
	if c.qt.asked.IsZero() || f.FromUS != c.qt.round || f.Ledger == nil {
		return // an answer to a question made void
	}
	c.qt.replies[w] = f.Ledger.Waits
}

func fmtWall(d time.Duration) string {
	return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000)
}

// quiet answers the coordinator's question: for each open attempt, its
// side's state, what it holds, and what can still happen to it here.
func (w *worker) quiet(f *Frame) {
	l := &Ledger{Role: sideNames[w.mine], Worker: w.opt.Worker, Gen: w.opt.Gen}
	names := make([]string, 0, len(w.atts))
	for name, a := range w.atts {
		if !a.kept {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		a := w.atts[name]
		x := &a.st.W.H[0]
		held, _ := cluster.Holds(x, w.mine, false)
		heldAny, _ := cluster.Holds(x, w.mine, true)
		l.Waits = append(l.Waits, AttemptWait{Attempt: name, Side: sideNames[w.mine],
			State: w.chk.Protocol().StateName(system.RoleOf(w.mine), a.st.Role(system.RoleOf(w.mine), 0)),
			Holds: ownHeld(x, w.mine), Busy: w.busy(a), Held: held, HeldAny: heldAny,
			GaveUp: a.gaveUp, GaveUpUS: a.gaveUpUS, LastUS: a.lastUS, Slow: x.Slow[w.mine]})
	}
	// A legacy request is never judged stuck here: the question is not
	// asked in a legacy run.
	w.send(&Frame{Kind: KQuietReply, Ledger: l, FromUS: f.FromUS})
}

// busy says what can still happen to an attempt on this worker, "" when
// nothing can: no move scheduled, no deadline armed, no transfer it
// runs, no event queued, and no move its window enables that it owns.
// Waiting for room is no event: room comes only from another attempt's
// step, and the question is asked only when none happens.
func (w *worker) busy(a *attempt) string {
	x := &a.st.W.H[0]
	switch {
	case a.held:
		return "a router's move pending"
	case len(a.sched) > 0:
		return fmt.Sprintf("moves scheduled %v", a.sched)
	case a.job != nil:
		return "its prefill on the compute queue"
	case x.Xfer == model.XferRunning && x.Runner == w.mine:
		return "a transfer running"
	}
	for t := range a.timerOn {
		if a.timerOn[t] {
			return "the " + model.Timer(t).String() + " deadline armed"
		}
	}
	for i := range w.q.h {
		// A deadline disarmed since it was queued is no event: taken, it
		// does nothing (an armed one is named above).
		if e := w.q.h[i].e; e.a == a && !e.stale() {
			return "an event queued"
		}
	}
	w.project(a)
	for _, m := range w.chk.MovesInto(&a.st, nil) {
		if ownerOf(m, x) == w.who && m.Kind != system.MvTimer && m.Kind != system.MvTransfer {
			return fmt.Sprintf("move %v enabled", m)
		}
	}
	return ""
}

// givesUp names the event of a side's row among fires by which the side
// learns the attempt is over (cluster.GivesUp); "" when none.
func givesUp(fires []system.Firing, sd model.Side) string {
	for i := range fires {
		f := &fires[i]
		if f.Role == system.RoleOf(sd) && cluster.GivesUp(f) {
			return system.EventName(f.Role, f.Event)
		}
	}
	return ""
}
