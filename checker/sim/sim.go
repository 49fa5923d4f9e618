// Package sim runs the verified role machines and the model's world on a
// virtual clock: a workload of requests arrives, routers choose workers,
// prefill computes at a rate, transfers take their priced bytes over a
// bandwidth, facts take a latency, timers fire at their deadlines, and
// faults strike when a fault plan says. Every step is a move of the
// composed system (system.System.Step), judged by every invariant of
// the model; the simulator only decides which enabled move happens when.
//
// A cluster has more requests than a world has handoffs, so each request
// is stepped in a world of its own with its two workers, whose counters
// are the whole workers' and whose outside holdings are what the other
// requests hold there (model.Config.SetOutside): every state invariant
// still compares a worker's counters with everything held on it.
package sim

import (
	"container/heap"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/props"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// Violation is an invariant broken during a run: which, when, the handoff
// and its history.
type Violation struct {
	Invariant string   `json:"invariant"`
	AtUS      int64    `json:"at_us"`
	Request   int      `json:"request"`
	Detail    string   `json:"detail"`
	History   []string `json:"history"`
}

func (v *Violation) Error() string {
	return fmt.Sprintf("%s violated at %s on request %d: %s", v.Invariant, fmtMS(v.AtUS), v.Request, v.Detail)
}

func fmtMS(t int64) string { return fmt.Sprintf("%.3fms", float64(t)/1000) }

// Sim is one simulation run.
type Sim struct {
	// teardown is set once the run tore its requests down (UntilUS).
	teardown *Teardown
	cfg      *cluster.Config
	chk      *system.System
	proto    *system.Protocol
	policy   spec.Policy
	rng      *rand.Rand
	now      int64
	q        eventQueue
	seq      uint64

	workers []model.Worker
	sums    []model.Holdings
	jobs    []cluster.ComputeQueue[*event] // each prefill worker's prefills, the one computing first
	// index is the KV index the workers publish (their Stored, Removed
	// and WorkerRestarted facts), which the KV-aware router reads.
	index *cluster.KVIndex
	// shares are the canonical blocks adopted at activation and still
	// shared (EngineTraits.Duplicates), oldest first.
	shares []share
	// adopted is the share the step being taken made (adopt), which its
	// activated fact logs, or nil.
	adopted *share
	nextP   int
	nextD   int
	waiters [][]*request
	dirty   []bool
	seen    []capacity // what each worker's waiters were last offered

	src         cluster.Source
	arrivals    int
	lastArrival int64
	faultFree   bool
	active      map[int]*request
	marks       map[int]*cluster.Marks
	cov         *system.Coverage
	step        *cluster.Stepper // takes every move, keeping its firings
	// ex is the invariants' triggers the run's steps fired, and where
	// first: the built-in invariants it exercised (Result.Invariants).
	ex cluster.Exercise

	stats     *stats
	tl        *recorder
	olog      *obslog.Writer
	clock     *props.Clock
	violation *Violation
	// stop ends the run: at the first violation, or with KeepGoing at one
	// no request carries (KeptGoing.Stopped).
	stop     bool
	kept     *KeptGoing // with Options.KeepGoing, what went on after the first violation
	inputErr error
	// watch, when set, sees every request after each of its steps: the
	// tests judge by it the order waiters are served in, which no
	// invariant states.
	watch func(r *request)
}

// Options are the inputs of a run beside the configuration.
type Options struct {
	Faults []cluster.Fault
	// Timeline records what --out writes (samples and phases); nil
	// records nothing but the summary.
	Timeline *Recorder
	// Protocol runs another pair of tables than the generated machines
	// (a variant or a mutant).
	Protocol *system.Protocol
	// Progress is called every so many events.
	Progress func(Progress)
	// DisabledSteps, when set, receives every step of a disabled run.
	DisabledSteps *[]Step
	// FaultFree judges FaultFreeCompletion: the run has no fault and no
	// cancel, so every handoff must succeed on both sides.
	FaultFree bool
	// Log, when set, receives the observation log of the run: every fact
	// a process logs, as Observe makes it observable (Config.LogHeader
	// makes its header).
	Log *obslog.Writer
	// UntilUS, when positive, ends the run with handoffs unresolved: at
	// that virtual time the requests in flight are torn down (Teardown)
	// and no later arrival or planned fault happens.
	UntilUS int64
	// Props, when set, judges the properties of a file on the clock
	// (props.Clock): every state of each request, its leads_to within
	// obligations, its sometimes properties and antecedents. The always
	// properties are the configuration's Judge. Result.Props has the
	// verdicts.
	Props *props.Clock
	// KeepGoing runs past a violation to the end of the workload, for
	// the cost of a bug at scale: a request that breaks an invariant
	// takes no further step and keeps what it holds to the end of the
	// run, as a leak would; the others go on around it. Result.Violation
	// is still the first; Summary.KeptGoing counts the rest. A violation
	// no request carries (a worker's counters) still ends the run.
	KeepGoing bool
}

// Progress is what a long run reports.
type Progress struct {
	NowUS              int64
	Arrived, Completed int
	Events             uint64
}

// Run simulates a workload on a configuration.
func Run(ctx context.Context, cfg *cluster.Config, src cluster.Source, opt Options) (*Result, error) {
	switch {
	case cfg.Aggregated:
		return runAggregated(ctx, cfg, src, opt)
	case cfg.Policy == cluster.Disabled:
		return runLegacy(ctx, cfg, src, opt)
	}
	s, err := newSim(cfg, src, opt)
	if err != nil {
		return nil, err
	}
	return s.run(ctx, opt)
}

func newSim(cfg *cluster.Config, src cluster.Source, opt Options) (*Sim, error) {
	p := opt.Protocol
	if p == nil {
		p = system.Generated()
	}
	chk, err := cfg.Checker(p)
	if err != nil {
		return nil, err
	}
	n := cfg.NumWorkers()
	s := &Sim{
		cfg: cfg, chk: chk, proto: p, policy: cfg.SpecPolicy(),
		rng:     rand.New(rand.NewPCG(cfg.Seed, 0x68616e646f6666)),
		workers: make([]model.Worker, n), sums: make([]model.Holdings, n), jobs: make([]cluster.ComputeQueue[*event], n),
		index: cluster.NewKVIndex(n), waiters: make([][]*request, n), dirty: make([]bool, n), seen: make([]capacity, n),
		src: src, active: map[int]*request{}, marks: map[int]*cluster.Marks{},
		cov: system.NewCoverage(p.Spec()),
	}
	s.step = cluster.NewStepper(chk, s.cov)
	for w := range s.workers {
		s.workers[w].Free = cfg.Capacity(w)
	}
	s.stats = newStats(cfg, n)
	s.faultFree = opt.FaultFree
	if opt.KeepGoing {
		s.kept = &KeptGoing{}
	}
	s.olog = opt.Log
	s.clock = opt.Props
	if opt.Timeline != nil {
		s.tl = &opt.Timeline.r
		s.tl.start(s)
	}
	for i, f := range opt.Faults {
		if err := s.checkFault(f); err != nil {
			return nil, err
		}
		s.push(&event{at: f.AtUS, kind: evFault, fault: &opt.Faults[i]})
	}
	return s, nil
}

// request is one request in flight: its world (the handoff and a window
// onto its two workers), where it runs, what is scheduled for it, and what
// the timed properties follow.
type request struct {
	cluster.Request
	cluster.Window // its world (Cfg) onto its two workers' counters
	st             system.State
	p, d           int
	fresh          model.Worker // world worker 1 before decode is routed

	sched    []system.Move // protocol moves with an event pending
	timerVer [model.NumTimers]uint32
	timerAt  [model.NumTimers]int64
	timerEv  [model.NumTimers]*event // the deadline's event while queued
	overdue  [model.NumTimers]bool   // the deadline passed while its record had no row for it
	waiting  [2]bool                 // waits for capacity on its prefill (0) or decode (1) worker
	listed   [2]bool                 // is in that worker's list of waiters

	outcomeAt [2]int64
	doomedAt  int64
	stranded  [2]model.Blocks
	srcStrand model.Blocks // its source's pinned blocks while decode waits (SourceStranded)
	lost      [2]bool      // a fact to the side was lost
	owed      [2]*obligation
	gaveUp    [2]*obligation // BoundedGiveUp's
	phases    phaseClock
	history   history
	firstTok  int64
	// attempt numbers the frontend's attempts at the request (0: the
	// first); since is when the client sent it, for latencies.
	attempt   int
	since     int64
	xferStart int64
	xferEnd   int64
	hit       model.Tokens // the prefix the decode worker had cached
	sharing   int          // the shares of canonical blocks it is in (adopter or owner)
	// keptShort is the blocks its destination's kept cache holds fewer
	// than its world says (model.SharedKept), until the cache evicts
	// them: blocks of its prompt prefix that stayed active with the
	// request it shared them with when it released.
	keptShort model.Blocks
	trans     []Transition
	m         cluster.Marks
	retired   bool
	// broken is set when the request broke an invariant in a run that
	// keeps going: it takes no further step from then on.
	broken bool
	job    *cluster.ComputeJob[*event] // its prefill on the worker's compute queue, Of its compute move
	// The queues it waits in: dispatchAt is when its prefill was
	// dispatched, jobStart when the worker starts computing it (after
	// those booked before it), activeAt when its destination activated
	// (it may then wait for a decode slot).
	dispatchAt, jobStart, activeAt int64
}

// history is the last historyCap things that happened to a request, kept
// as data and written out only when a violation needs them.
type history struct {
	e    [historyCap]histEntry
	n, i int // entries kept, next slot
}

const historyCap = 64

type histKind uint8

const (
	hArrive histKind = iota
	hMove
	hFiring
	hRestart
	hTimerIgnored
)

type histEntry struct {
	at   int64
	kind histKind
	m    system.Move
	f    system.Firing
	w    int // the worker a route chose or that restarted
}

func (h *history) add(e histEntry) {
	h.e[h.i] = e
	h.i = (h.i + 1) % historyCap
	h.n = min(h.n+1, historyCap)
}

// lines writes the history out, oldest first.
func (s *Sim) lines(r *request) []string {
	h := &r.history
	out := make([]string, 0, h.n)
	for j := 0; j < h.n; j++ {
		e := &h.e[(h.i-h.n+j+historyCap)%historyCap]
		var text string
		switch e.kind {
		case hArrive:
			text = fmt.Sprintf("arrives: %d prompt tokens, %d output tokens", r.PromptTokens, r.OutputTokens)
		case hMove:
			switch e.m.Kind {
			case system.MvRoutePrefill:
				text = fmt.Sprintf("route-prefill to worker %d", e.w)
			case system.MvRouteDecode:
				text = fmt.Sprintf("route-decode to worker %d", e.w)
			default:
				text = e.m.String()
			}
		case hFiring:
			pr := s.chk.Protocol()
			text = fmt.Sprintf("  %s row %d: %s --%s--> %s", e.f.Role, e.f.Row,
				pr.StateName(e.f.Role, e.f.From), system.EventName(e.f.Role, e.f.Event), pr.StateName(e.f.Role, e.f.To))
		case hRestart:
			text = fmt.Sprintf("restart of worker %d", e.w)
		case hTimerIgnored:
			text = fmt.Sprintf("timer %s fires but the %s takes no step", model.Timer(e.m.Arg), model.Timer(e.m.Arg).Side())
		}
		out = append(out, fmtMS(e.at)+" "+text)
	}
	return out
}

// noteFirings records the rows a step fired.
func (s *Sim) noteFirings(r *request) {
	for _, f := range s.step.Firings() {
		f.Actions = nil
		r.history.add(histEntry{at: s.now, kind: hFiring, f: f})
		if s.tl != nil {
			s.tl.transition(r, s.now, f, s.chk)
		}
	}
}

// ---- Events ----

type evKind uint8

const (
	evArrival evKind = iota
	evMove
	evTimer
	evFault
	evCancel
	evReclaim
	evGiveUp
	evSample
)

type event struct {
	at    int64
	seq   uint64
	idx   int // its place in the queue, -1 once taken
	kind  evKind
	r     *request
	m     system.Move
	timer model.Timer
	ver   uint32
	side  model.Side
	fault *cluster.Fault
	// waiter: the move is a promote, which gives an activated request
	// waiting for a decode slot the slot that freed. It is due the
	// instant the slot freed and goes before every other event due
	// then, so that an activation at that instant (which takes a free
	// slot at once) cannot take it ahead of an older waiter: waiters
	// are served first come.
	waiter bool
}

type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	if q[i].waiter != q[j].waiter {
		return q[i].waiter
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].idx, q[j].idx = i, j
}
func (q *eventQueue) Push(x any) {
	e := x.(*event)
	e.idx = len(*q)
	*q = append(*q, e)
}
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	e.idx = -1
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return e
}

func (s *Sim) push(e *event) {
	s.seq++
	e.seq = s.seq
	heap.Push(&s.q, e)
}

// jitter is a fact's delivery delay: the latency plus a seeded draw.
func (s *Sim) jitter() int64 {
	d := s.cfg.LatencyUS
	if s.cfg.JitterUS > 0 {
		d += s.rng.Int64N(s.cfg.JitterUS)
	}
	return d
}

// maxDelivery is the longest a fact takes: BoundedReclaim's latency.
func (s *Sim) maxDelivery() int64 { return s.cfg.LatencyUS + s.cfg.JitterUS }

// ---- The run ----

func (s *Sim) run(ctx context.Context, opt Options) (*Result, error) {
	if err := s.nextArrival(); err != nil {
		return nil, err
	}
	if s.tl != nil {
		s.push(&event{at: 0, kind: evSample})
	}
	var events uint64
	for s.q.Len() > 0 && !s.stop {
		e := heap.Pop(&s.q).(*event)
		if opt.UntilUS > 0 && s.teardown == nil && e.at > opt.UntilUS {
			heap.Push(&s.q, e)
			s.tearDown(opt.UntilUS)
			continue
		}
		if e.r != nil {
			if s.stale(e) {
				// A deadline disarmed, an obligation met or a move of a
				// retired request: it neither happens nor moves the clock.
				s.maybeRetire(e.r)
				continue
			}
		}
		if s.teardown != nil && (e.kind == evArrival || e.kind == evFault || e.kind == evCancel) {
			// The harness ended: the rest of the workload never starts,
			// nothing more is planned, and the client cancels of the
			// workload were overtaken by the teardown's; none moves the
			// clock.
			if e.kind == evArrival {
				s.teardown.NotArrived++
				if err := s.nextArrival(); err != nil {
					return nil, err
				}
			}
			continue
		}
		s.advance(e.at)
		if s.clock != nil {
			// A deadline passed before this event with its Q unmet: the
			// steps at the deadline itself came before (deadlines are
			// inclusive).
			s.clock.Advance(s.now)
			if s.missed(nil); s.stop {
				break
			}
		}
		events++
		if s.now > s.lastArrival+drainHorizonUS || events > uint64(eventsPerRequest*(s.arrivals+1)) {
			s.stuck(events)
			break
		}
		if events&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return s.withInvariants(s.withProps(s.result(events, true))), nil
			}
			if opt.Progress != nil {
				opt.Progress(Progress{NowUS: s.now, Arrived: s.arrivals, Completed: s.stats.completed, Events: events})
			}
		}
		switch e.kind {
		case evArrival:
			s.arrive(e.r)
			if err := s.nextArrival(); err != nil {
				return nil, err
			}
		case evMove:
			s.fireMove(e)
		case evTimer:
			s.fireTimer(e)
		case evFault:
			s.strike(e.fault)
		case evCancel:
			s.clientCancel(e.r)
		case evReclaim:
			s.checkReclaim(e.r, e.side, e.ver)
		case evGiveUp:
			s.checkGiveUp(e.r, e.side, e.ver)
		case evSample:
			s.tl.sample(s)
			if s.q.Len() > 0 {
				s.push(&event{at: s.now + s.tl.period, kind: evSample})
			}
		}
		if s.inputErr != nil {
			return nil, s.inputErr
		}
		if !s.stop {
			s.settle()
		}
		if e.r != nil && !s.stop {
			s.maybeRetire(e.r)
		}
	}
	if !s.stop {
		s.finish()
	}
	return s.withInvariants(s.withProps(s.result(events, false))), nil
}

// A run that neither drains nor ends is stopped: an hour of virtual time
// after the last arrival, or after so many events per request. A
// protocol that keeps a request busy for ever (a heartbeat that never
// stops, a no-op answered by another) breaks EventuallyDrained.
const (
	drainHorizonUS   = 3600 * 1_000_000
	eventsPerRequest = 20_000
)

// stuck reports the requests still in flight when the run is stopped
// for not draining: the oldest, or with KeepGoing each of them.
func (s *Sim) stuck(events uint64) {
	rs := s.unbrokenActive()
	// Stopped by the time since the last arrival, or by the events per
	// request (before the last arrival, a protocol that keeps requests
	// busy in a loop far faster than they arrive).
	when := fmtDur(s.now-s.lastArrival) + " after the last arrival"
	if s.now <= s.lastArrival+drainHorizonUS {
		when = fmt.Sprintf("after %d events for %d requests arrived (at most %d a request)", events, s.arrivals, eventsPerRequest)
	}
	// Each is still in flight; a run that keeps going counts them all,
	// one that does not stops at the oldest.
	for _, r := range rs {
		s.fail(r, model.NameEventuallyDrained, fmt.Sprintf("the request is still in flight %s, %d requests with it: "+
			"the protocol keeps it busy without ever draining it", when, len(rs)-1)+": "+r.st.W.DescribeHeld())
		if s.stop {
			return
		}
	}
}

// stale reports whether an event no longer means anything.
func (s *Sim) stale(e *event) bool {
	r := e.r
	switch {
	case r.retired || r.broken:
		return true
	case e.kind == evTimer:
		return e.ver != r.timerVer[e.timer]
	case e.kind == evReclaim:
		return r.owed[e.side] == nil || r.owed[e.side].ver != e.ver
	case e.kind == evGiveUp:
		return r.gaveUp[e.side] == nil || r.gaveUp[e.side].ver != e.ver
	}
	return false
}

// nextArrival reads the next request of the workload and schedules it.
func (s *Sim) nextArrival() error {
	req, err := s.src.Next()
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return err
	}
	if req.ArrivalUS < s.now {
		return fmt.Errorf("%w: request %d arrives at %s, before %s", cluster.ErrInput, req.Index, fmtMS(req.ArrivalUS), fmtMS(s.now))
	}
	cfg := s.cfg.AttemptWorld(req.PromptTokens, 0)
	if err := cfg.Prepare(); err != nil {
		return fmt.Errorf("%w: request %d: %v", cluster.ErrInput, req.Index, err)
	}
	r := &request{Request: req, Window: cluster.Window{Cfg: cfg}, p: -1, d: -1, doomedAt: -1, firstTok: -1, since: req.ArrivalUS}
	r.outcomeAt = [2]int64{-1, -1}
	for t := range r.timerAt {
		r.timerAt[t] = -1
	}
	s.push(&event{at: req.ArrivalUS, kind: evArrival, r: r})
	s.lastArrival = req.ArrivalUS
	return nil
}

// arrive places a request: the prefill router chooses its worker and the
// request's world is made.
func (s *Sim) arrive(r *request) {
	if r.attempt == 0 {
		s.arrivals++
		s.stats.arrived++
	} else {
		s.stats.retried++
	}
	p := s.choose(s.cfg.PrefillRouter, 0, s.cfg.Prefill.Workers, &s.nextP, s.prefillLoad, nil)
	r.p = p
	r.st = s.step.Initial(r.Cfg)
	r.fresh = r.st.W.W[1]
	s.active[r.Index] = r
	if m, ok := s.marks[r.Index]; ok {
		r.m = *m
		delete(s.marks, r.Index)
	}
	if r.CancelUS >= 0 {
		s.push(&event{at: max(r.CancelUS, s.now), kind: evCancel, r: r})
	}
	r.history.add(histEntry{at: s.now, kind: hArrive})
	s.do(r, system.Move{Kind: system.MvRoutePrefill, H: 0, Arg: 0}, false)
}

// project refreshes a request's world from the cluster: its workers'
// counters, and what the other requests hold on them.
func (s *Sim) project(r *request) {
	r.Project(&r.st, 0, s.workers[r.p], s.sums[r.p])
	if r.d >= 0 {
		r.Project(&r.st, 1, s.workers[r.d], s.sums[r.d])
	} else {
		r.Alone(&r.st, 1, r.fresh)
	}
}

// writeBack stores a request's world into the cluster after a step
// from before. On its decode worker, the canonical blocks it shares or
// stops sharing are settled before the worker is written, so that the
// worker's figures are exact at every instant (no peak or time series
// point sees a step's figures before its shares are).
func (s *Sim) writeBack(r *request, before *model.Handoff) {
	hs := r.Held(&r.st)
	s.setWorker(r.p, r.st.W.W[0], r.WriteBack(0, s.sums[r.p], &hs))
	if r.d >= 0 {
		k, sum := r.st.W.W[1], r.WriteBack(1, s.sums[r.d], &hs)
		if x := &r.st.W.H[0]; x.Dst != model.DstActive && r.sharing > 0 {
			s.unshare(r, &k, &sum)
		} else if before.Dst != model.DstActive && x.Dst == model.DstActive && x.Activated {
			s.adopt(r, &k, &sum)
		}
		s.setWorker(r.d, k, sum)
	} else {
		r.fresh = r.st.W.W[1]
		r.Hold[1] = hs[1]
	}
}

func (s *Sim) setWorker(w int, k model.Worker, sum model.Holdings) {
	if s.workers[w] != k {
		s.stats.change(s, w, &s.workers[w], &k)
		s.workers[w] = k
		s.dirty[w] = true
	}
	s.sums[w] = sum
}

// do takes one move of a request's world: Step (which refuses a move the
// state does not enable) or, forced, Apply. It judges the step and state
// invariants, writes the world back, and reacts. It reports whether the
// move happened.
func (s *Sim) do(r *request, m system.Move, force bool) bool {
	s.project(r)
	short := r.keptShort
	if short > 0 && m.Kind == system.Evict.Move() && model.Side(m.Arg) == model.DestinationSide {
		// The cache evicts the request's kept blocks: its world evicts
		// all it says it keeps, the shared ones included, so it is shown
		// the worker with them still kept (the step frees them again).
		k := s.workers[r.d]
		k.Kept += short
		k.Free -= short
		r.Project(&r.st, 1, k, s.sums[r.d].Minus(model.SharedKept(short)))
	} else {
		short = 0
	}
	before := r.st
	var v *model.Violation
	if force {
		v = s.step.Force(&r.st, m)
	} else {
		var ok bool
		if v, ok = s.step.Step(&r.st, m); !ok {
			return false
		}
	}
	s.ex.Note(s.step.Fired(), s.now, r.Index)
	if v == nil {
		v = s.chk.CheckState(&r.st)
	}
	if s.clock != nil {
		// Judged on the clock even when the step broke an invariant: the
		// antecedent of the property it broke held there.
		if pv := s.observeProps(r); v == nil {
			v = pv
		}
	}
	if short > 0 {
		// The correction ends with the eviction, whatever the step did:
		// the worker and the sum it is written with are the world's.
		s.sums[r.d] = s.sums[r.d].Minus(model.SharedKept(short))
		r.keptShort = 0
	}
	s.writeBack(r, &before.W.H[0])
	if r.keptShort == 0 && short > 0 && r.st.W.H[0].DstKept {
		// The move evicted nothing: the blocks stay kept, shared as before.
		k := s.workers[r.d]
		k.Kept -= short
		k.Free += short
		r.keptShort = short
		s.setWorker(r.d, k, s.sums[r.d].Plus(model.SharedKept(short)))
	}
	if s.olog != nil || indexChanged(&before.W.H[0], &r.st.W.H[0]) {
		s.observe(r, &before, m)
	}
	s.adopted = nil
	trigger := s.restartTrigger(r, &before, m)
	s.phaseMarks(r, &before, m)
	w := r.p
	if m.Kind == system.MvRouteDecode {
		w = r.d
	}
	r.history.add(histEntry{at: s.now, kind: hMove, m: m, w: w})
	s.noteFirings(r)
	if v != nil {
		s.fail(r, v.Invariant, v.Detail)
		return true
	}
	s.react(r, &before, m)
	if trigger >= 0 && !s.halted(r) {
		// The side logged the fact a planned restart waits for: its
		// worker restarts now, at that phase of the handoff.
		r.m.RestartAfter[trigger] = ""
		w := r.p
		if trigger == int(model.DestinationSide) {
			w = r.d
		}
		s.restart(w)
		s.stats.faults++
	}
	return true
}

// phaseMarks sets the marks aimed at the phase the step reached: a side
// logged the fact they wait for (cluster.Marks.Logged). They strike where
// the request next offers their move, as a mark set at a time does.
func (s *Sim) phaseMarks(r *request, before *system.State, m system.Move) {
	if !r.m.AwaitsPhase() {
		return
	}
	for _, l := range s.step.Observe(before, &r.st, m) {
		switch l.By {
		case obslog.BySource:
			r.m.Logged(model.SourceSide, obslog.Kinds[l.Kind].Name)
		case obslog.ByDestination:
			r.m.Logged(model.DestinationSide, obslog.Kinds[l.Kind].Name)
		}
	}
}

// restartTrigger is the side whose planned restart the step triggers (it
// logged the fact the restart waits for), or -1.
func (s *Sim) restartTrigger(r *request, before *system.State, m system.Move) int {
	if r.m.RestartAfter[0] == "" && r.m.RestartAfter[1] == "" {
		return -1
	}
	for _, l := range s.step.Observe(before, &r.st, m) {
		for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
			by := obslog.BySource
			if sd == model.DestinationSide {
				by = obslog.ByDestination
			}
			if l.By == by && r.m.RestartAfter[sd] == obslog.Kinds[l.Kind].Name {
				return int(sd)
			}
		}
	}
	return -1
}

func (s *Sim) fail(r *request, inv, detail string) {
	if s.stop || (r != nil && r.broken) {
		return
	}
	if s.violation == nil {
		idx := -1
		var hist []string
		if r != nil {
			idx = r.Index
			hist = s.lines(r)
		}
		s.violation = &Violation{Invariant: inv, AtUS: s.now, Request: idx, Detail: detail, History: hist}
	}
	if s.kept == nil || r == nil {
		s.stop = true
		if s.kept != nil {
			s.kept.note(inv, Violation{Invariant: inv, AtUS: s.now, Request: -1, Detail: detail})
			s.kept.Stopped = fmt.Sprintf("%s at %s, on no one request: the run stopped there", inv, fmtMS(s.now))
		}
		return
	}
	s.kept.note(inv, s.violationAt(r, inv, detail))
	if LateInvariant(inv) {
		// A bound on time broken: the request goes on, and breaks it
		// again only by another obligation.
		return
	}
	s.breakOff(r)
}

// LateInvariant reports whether an invariant is a bound on time
// (BoundedReclaim, BoundedGiveUp): what it judges happens, only later than
// it should, so a run that keeps going lets the request go on, where it
// may yet break another invariant (a loop that never drains,
// EventuallyDrained).
func LateInvariant(inv string) bool {
	return inv == cluster.NameBoundedReclaim || inv == cluster.NameBoundedGiveUp
}

// violationAt is a violation of a request, now, without its history.
func (s *Sim) violationAt(r *request, inv, detail string) Violation {
	return Violation{Invariant: inv, AtUS: s.now, Request: r.Index, Detail: detail}
}

// halted reports whether a request takes no further step: the run
// stopped, or the request broke an invariant in a run that keeps going.
func (s *Sim) halted(r *request) bool { return s.stop || r.broken }

// breakOff takes a request that broke an invariant out of the run that
// keeps going: nothing is to happen for it any more (its events are
// stale, it waits for nothing, its prefill gives its worker back), and
// what it holds stays held to the end of the run.
func (s *Sim) breakOff(r *request) {
	r.broken = true
	if !r.retired {
		s.kept.Requests++
	}
	r.waiting = [2]bool{}
	if r.job != nil {
		s.unbook(r)
	}
}

// react follows a step: timers armed, renewed or disarmed by the rows
// that fired, outcomes and the obligations they create, the blocks of an
// attempt that can no longer succeed, blocks a finished side keeps, the
// faults waiting for the request, and the moves the step enabled.
func (s *Sim) react(r *request, before *system.State, m system.Move) {
	x, b := &r.st.W.H[0], &before.W.H[0]
	if r.job != nil && x.Compute != model.ComputeRunning {
		// The prefill stopped before its compute ended.
		s.unbook(r)
	}
	s.timers(r, b, m)
	for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
		if b.Outcome[sd] == model.OutcomeNone && x.Outcome[sd] != model.OutcomeNone {
			r.outcomeAt[sd] = s.now
			s.owe(r, sd)
		}
	}
	s.stats.waits(s, r, b, x)
	if s.tl != nil {
		s.tl.phases(r, s.now)
	}
	if r.doomedAt < 0 && (x.Cancelled || x.Xfer == model.XferFailed || failed(x.Outcome[0]) || failed(x.Outcome[1])) {
		r.doomedAt = s.now
	}
	s.giveUp(r)
	if s.watch != nil {
		// After the obligations the step opened, before those it met
		// close: a test sees every obligation.
		s.watch(r)
	}
	s.strand(r)
	s.settleObligations(r)
	s.settleGiveUps(r)
	if b.Xfer != model.XferRunning && x.Xfer == model.XferRunning {
		r.xferStart = s.now
	}
	if b.Xfer == model.XferRunning && x.Xfer.Finished() {
		r.xferEnd = s.now
	}
	if r.firstTok < 0 && x.Dst == model.DstActive && x.Running {
		r.firstTok = s.now + s.cfg.Decode.PerTokenUS
	}
	// The cache evicts what a finished side keeps: a request outside a
	// world cannot evict it later (docs: the simulator's cache model).
	for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
		if !s.halted(r) && cluster.Evicts(s.chk, &r.st, sd) {
			s.do(r, cluster.Evict(sd), true)
		}
	}
	if s.halted(r) {
		return
	}
	x = &r.st.W.H[0]
	// A fault of the transfer's runner (FaultKinds' Runner: a hang)
	// strikes where the checker offers it, once the transfer is all the
	// request waits on; unlike the other marks it is looked at only here,
	// after a step of the request, and is missed once the transfer has
	// ended.
	now, missed := cluster.HangStrikes(x)
	for k := range system.NumFaults {
		if !system.FaultKinds[k].Runner {
			continue
		}
		if now && r.m.Has(k, 0) {
			if s.do(r, system.Move{Kind: k.Move(), H: 0}, false) {
				r.m.Spend(k, 0)
				s.stats.faults++
				return
			}
		} else if missed && r.m.Spend(k, 0) {
			s.stats.faultsMissed++
		}
	}
	s.schedule(r)
}

func failed(o model.Outcome) bool { return o == model.OutcomeFailed || o == model.OutcomeForgotten }

// marked makes a fault the plan holds for a request strike at the first
// moment the world offers its move (cluster.Marks.Offered): a delay just
// before a command, an abort or eviction where the side has a row or
// blocks for it; a fault of the transfer's runner (a hang) has its own
// moment (react). It reports whether one struck (the step already
// scheduled what follows).
func (s *Sim) marked(r *request, moves []system.Move) bool {
	m, k, ok := r.m.Offered(moves, func(k system.Fault, _ system.Move) bool { return !system.FaultKinds[k].Runner })
	if !ok {
		return false
	}
	if k == system.Cancel {
		s.stats.cancelled++
	}
	s.stats.faults++
	s.do(r, m, false)
	return true
}

// schedule gives every enabled protocol move of a request that has no
// event yet one, at the time it takes; a delay the plan holds strikes
// first, where the checker offers it.
func (s *Sim) schedule(r *request) {
	s.project(r)
	moves := s.chk.MovesInto(&r.st, nil)
	if s.marked(r, moves) {
		return
	}
	x := &r.st.W.H[0]
	for _, m := range moves {
		if m.Kind == system.MvTimer {
			// A deadline that passed while its record had no row for it
			// fires as soon as the record takes it.
			if t := model.Timer(m.Arg); r.timerAt[t] < 0 && r.overdue[t] {
				r.overdue[t] = false
				r.timerVer[t]++
				r.timerAt[t] = s.now
				e := &event{at: s.now, kind: evTimer, r: r, timer: t, ver: r.timerVer[t]}
				r.timerEv[t] = e
				s.push(e)
			}
			continue
		}
		if _, fault := m.Kind.Spends(); fault || m.Kind == system.MvRoutePrefill {
			continue
		}
		if slices.Contains(r.sched, m) {
			continue
		}
		r.sched = append(r.sched, m)
		if m.Kind == system.MvCompute {
			s.book(r, m)
			continue
		}
		s.push(&event{at: s.now + s.delay(r, m), kind: evMove, r: r, m: m, waiter: m.Kind == system.MvPromote})
	}
	// What waits for capacity is offered again when its worker frees some.
	waitP := system.WaitsForCapacity(x, model.SourceSide, r.sched)
	waitD := r.d >= 0 && system.WaitsForCapacity(x, model.DestinationSide, r.sched)
	s.wait(r, 0, waitP)
	s.wait(r, 1, waitD)
}

func (s *Sim) wait(r *request, k int, on bool) {
	w := r.p
	if k == 1 {
		w = r.d
	}
	if w < 0 {
		return
	}
	r.waiting[k] = on
	if on && !r.listed[k] {
		r.listed[k] = true
		s.waiters[w] = append(s.waiters[w], r)
	}
}

// capacity is what a waiter needs more of.
type capacity struct {
	room            model.Blocks
	slots, headroom int64
}

func (s *Sim) capacityOf(w int) capacity {
	k := &s.workers[w]
	return capacity{room: k.Free + k.Cached + k.Kept, slots: -int64(k.SlotsUsed), headroom: -int64(k.HeadroomUsed)}
}

// settle offers the waiters of every worker whose capacity grew, oldest
// first, what they wait for.
func (s *Sim) settle() {
	for w := range s.dirty {
		if !s.dirty[w] {
			continue
		}
		s.dirty[w] = false
		c := s.capacityOf(w)
		old := s.seen[w]
		s.seen[w] = c
		if c.room <= old.room && c.slots <= old.slots && c.headroom <= old.headroom {
			continue
		}
		// Offer each waiter what it waits for, oldest first. A waiter
		// that stops waiting leaves the list; one that starts waiting
		// while the list is offered joins its end.
		ws := s.waiters[w]
		s.waiters[w] = nil
		for _, r := range ws {
			k := 0
			if r.d == w {
				k = 1
			}
			r.listed[k] = false
		}
		var keep []*request
		for _, r := range ws {
			k := 0
			if r.d == w {
				k = 1
			}
			if r.retired || !r.waiting[k] {
				continue
			}
			s.schedule(r)
			if s.stop {
				return
			}
			if r.waiting[k] && !r.listed[k] {
				r.listed[k] = true
				keep = append(keep, r)
			}
		}
		s.waiters[w] = append(keep, s.waiters[w]...)
	}
}

// book puts a request's prefill at the end of its worker's compute
// queue: it computes when the ones before it have ended or stopped.
func (s *Sim) book(r *request, m system.Move) {
	j := s.jobs[r.p].Book(s.now, s.cfg.ComputeUS(r.Cfg), nil)
	j.Of = &event{at: j.End, kind: evMove, r: r, m: m}
	r.job, r.jobStart = j, j.Start
	s.push(j.Of)
}

// unbook takes a request's prefill off its worker's compute queue, now:
// its compute ended, or stopped (a cancel, an abort, a restart). A stopped
// compute gives its worker back at once: its move is dropped, and the
// prefills queued behind it start as soon as the worker is free.
func (s *Sim) unbook(r *request) {
	j := r.job
	r.job = nil
	if e := j.Of; e.idx >= 0 {
		heap.Remove(&s.q, e.idx)
		if k := slices.Index(r.sched, e.m); k >= 0 {
			r.sched = slices.Delete(r.sched, k, k+1)
		}
	}
	s.jobs[r.p].Unbook(j, s.now, func(k *cluster.ComputeJob[*event]) {
		k.Of.at, k.Of.r.jobStart = k.End, k.Start
		heap.Fix(&s.q, k.Of.idx)
	})
}

// delay is how long an enabled move takes to happen: the system says
// which work the move is, the simulator's clock what it costs (a drawn
// latency for what crosses the network; a transfer that a planned fault
// replaces or that would fail ends after the latency alone).
func (s *Sim) delay(r *request, m system.Move) int64 {
	x := &r.st.W.H[0]
	return m.Takes(x, &system.Durations{
		Arrival: s.jitter,
		Fact:    s.jitter,
		Transfer: func() int64 {
			if r.m.Replaces(system.MvTransfer) || !transferWouldSucceed(x) {
				return s.jitter()
			}
			return s.jitter() + s.cfg.TransferUS(r.Cfg, x.PrefixGone&2 != 0)
		},
		Command:     s.cfg.CommandUS,
		SlowCore:    s.cfg.SlowCoreUS,
		Decode:      s.cfg.DecodeUS(r.OutputTokens),
		HealthCheck: s.cfg.HealthCheckUS,
	})
}

func transferWouldSucceed(x *model.Handoff) bool {
	return x.SrcReg == model.RegValid && x.DstReg == model.RegValid
}

// fireMove takes a scheduled protocol move, if the world still enables
// it; a fault the plan holds for it strikes instead.
func (s *Sim) fireMove(e *event) {
	r := e.r
	if i := slices.Index(r.sched, e.m); i >= 0 {
		r.sched = slices.Delete(r.sched, i, i+1)
	}
	if r.retired {
		return
	}
	m := e.m
	if r.job != nil && r.job.Of == e {
		// The worker computed the prefill: it is free for the next.
		s.unbook(r)
	}
	switch m.Kind {
	case system.MvRouteDecode:
		s.routeDecode(r)
		return
	}
	// A fault the plan holds for the move strikes in its place. One aimed
	// at a fact that finds nothing to strike (a duplicate to a record that
	// would not react) spends its mark, and the fact waits in flight until
	// the request schedules again.
	if f, k, ok := r.m.Instead(m); ok {
		if s.do(r, f, false) {
			if kind := &system.FaultKinds[k]; kind.Instead == system.MvDeliver && kind.Delivers == 0 {
				r.lost[f.Arg] = true
			}
			s.stats.faults++
			return
		}
		if cluster.NamesFact(k) {
			return
		}
	}
	if !s.do(r, m, false) {
		// No longer enabled: what enables it again schedules it again.
		s.schedule(r)
	}
}

// routeDecode is the decode router choosing a worker: the request's world
// is priced for it (its prefix hit there, where the KV index advertises
// the request's prefix group), and the prefix blocks the worker caches
// for the request's group are counted as the request's.
func (s *Sim) routeDecode(r *request) {
	s.project(r)
	if !slices.ContainsFunc(s.chk.MovesInto(&r.st, nil), func(m system.Move) bool { return m.Kind == system.MvRouteDecode }) {
		// Cancelled, or the source failed, meanwhile: no route.
		s.schedule(r)
		return
	}
	lo, hi := s.cfg.Prefill.Workers, s.cfg.NumWorkers()
	var cached func(int) bool
	if r.PrefixGroup != "" && r.PrefixTokens > 0 {
		cached = func(w int) bool { return s.index.Holds(w, r.PrefixGroup) }
	}
	d := s.choose(s.cfg.DecodeRouter, lo, hi, &s.nextD, s.decodeLoad, cached)
	hit := model.Tokens(0)
	if cached != nil && cached(d) {
		hit = r.PrefixTokens
	}
	cfg := s.cfg.AttemptWorld(r.PromptTokens, hit)
	if err := cfg.Prepare(); err != nil {
		s.inputErr = fmt.Errorf("%w: request %d: %v", cluster.ErrInput, r.Index, err)
		return
	}
	// The prefix the worker caches becomes the request's cached prefix
	// (the model's category of lockable prefix blocks), taken from the
	// worker's anonymous cache; without room there is no hit.
	lk := cfg.DestQuote(0, 1, false).LockedBlocks
	k := s.workers[d]
	if lk > k.Cached {
		hit, lk = 0, 0
		cfg = s.cfg.AttemptWorld(r.PromptTokens, 0)
		if err := cfg.Prepare(); err != nil {
			s.inputErr = fmt.Errorf("%w: request %d: %v", cluster.ErrInput, r.Index, err)
			return
		}
	}
	cfg.SetOutside(0, model.Holdings{})
	r.Cfg = cfg
	r.st.W.Rebind(cfg)
	k.Cached -= lk
	k.Prefix += lk
	r.d = d
	r.st.W.W[1] = k
	hs := r.st.W.HandoffHoldings(0)
	s.setWorker(d, k, s.sums[d].Plus(hs[1]))
	r.Hold[1] = hs[1]
	s.stats.hits(hit)
	r.hit = hit
	if !s.do(r, system.Move{Kind: system.MvRouteDecode, H: 0, Arg: 1}, false) {
		s.fail(r, "RouteDecode", "the decode router chose a worker but the world did not take the route")
	}
}

// ---- Timers ----

// timers schedules the deadlines the step armed or renewed and forgets
// the ones it disarmed. A heartbeat that fired and stays armed fires again
// a period later.
func (s *Sim) timers(r *request, b *model.Handoff, m system.Move) {
	x := &r.st.W.H[0]
	var touched [model.NumTimers]bool
	for _, f := range s.step.Firings() {
		for _, a := range f.Actions {
			if t, ok := system.TimerOf(a); ok {
				touched[t] = true
			}
		}
	}
	for t := model.Timer(0); t < model.NumTimers; t++ {
		fired := m.Kind == system.MvTimer && model.Timer(m.Arg) == t
		switch {
		case !x.Armed(t):
			r.overdue[t] = false
			if r.timerAt[t] >= 0 {
				r.timerVer[t]++
				r.timerAt[t] = -1
				if e := r.timerEv[t]; e != nil && e.idx >= 0 {
					heap.Remove(&s.q, e.idx)
				}
				r.timerEv[t] = nil
			}
		case !b.Armed(t) || touched[t] || fired || r.timerAt[t] < 0:
			// A deadline moved is its queued event moved: the queue holds
			// only deadlines that may still fire.
			r.timerVer[t]++
			r.timerAt[t] = s.now + s.cfg.TimerUS(t)
			if e := r.timerEv[t]; e != nil && e.idx >= 0 {
				s.seq++
				e.at, e.seq, e.ver = r.timerAt[t], s.seq, r.timerVer[t]
				heap.Fix(&s.q, e.idx)
			} else {
				e := &event{at: r.timerAt[t], kind: evTimer, r: r, timer: t, ver: r.timerVer[t]}
				r.timerEv[t] = e
				s.push(e)
			}
		}
	}
}

func (s *Sim) fireTimer(e *event) {
	r := e.r
	if r.retired || e.ver != r.timerVer[e.timer] {
		return
	}
	r.timerAt[e.timer] = -1
	if !s.do(r, system.Move{Kind: system.MvTimer, H: 0, Arg: int8(e.timer)}, false) {
		// The record takes no timer in its state: the deadline stays
		// armed and overdue, and fires when a later state takes it. A
		// record that never does (a terminal one) keeps it for good,
		// and Quiescence says so.
		r.overdue[e.timer] = true
		r.history.add(histEntry{at: s.now, kind: hTimerIgnored, m: system.Move{Kind: system.MvTimer, Arg: int8(e.timer)}})
	}
}

// ---- Faults ----

// checkFault refuses a planned fault the configuration cannot run: a
// worker it does not have, a fact the model does not know.
func (s *Sim) checkFault(f cluster.Fault) error {
	_, err := f.FaultKind()
	if err != nil {
		return err
	}
	if f.Worker >= s.cfg.NumWorkers() {
		return fmt.Errorf("%s:%d: %w: worker %d, but the configuration has workers 0 to %d", f.File, f.Line, cluster.ErrInput, f.Worker, s.cfg.NumWorkers()-1)
	}
	if err := cluster.CheckPhase(&f); err != nil {
		return err
	}
	if f.Msg != "" {
		known := false
		var names []string
		for m := model.Msg(1); m < model.NumMsgs; m++ {
			names = append(names, m.String())
			known = known || m.String() == f.Msg
		}
		if !known {
			return fmt.Errorf("%s:%d: %w: msg %q, want one of %s", f.File, f.Line, cluster.ErrInput, f.Msg, strings.Join(names, ", "))
		}
	}
	return nil
}

// strike makes a planned fault happen, or leaves a mark on the request
// for the next moment it can.
func (s *Sim) strike(f *cluster.Fault) {
	if f.WorkerRestart() {
		s.restart(f.Worker)
		s.stats.faults++
		return
	}
	r, ok := s.active[f.Request]
	if ok && r.broken {
		// It took no step after breaking an invariant: nothing to strike.
		s.stats.faultsMissed++
		return
	}
	var mk *cluster.Marks
	if ok {
		mk = &r.m
	} else {
		if f.Request < s.arrivals {
			s.stats.faultsMissed++
			return // finished already
		}
		m := s.marks[f.Request]
		if m == nil {
			m = &cluster.Marks{}
			s.marks[f.Request] = m
		}
		mk = m
	}
	if err := mk.Mark(f); err != nil {
		// checkFault refused every fault this could refuse: one that gets
		// here anyway stops the run rather than vanish.
		s.inputErr = err
		return
	}
	if ok {
		s.schedule(r)
	}
}

// clientCancel is the client cancelling: the frontend cancels the request
// streams that exist.
func (s *Sim) clientCancel(r *request) {
	if r.retired || r.broken {
		return
	}
	if s.do(r, system.Move{Kind: system.Cancel.Move(), H: 0}, false) {
		s.stats.cancelled++
	}
}

// restart is a worker's process restarting: every request with a record
// there takes the restart in its world, then the worker's counters start
// afresh (a world's restart resets the whole worker, which the other
// requests share, so the worker is written once, after all of them).
func (s *Sim) restart(w int) {
	var hit []*request
	for _, r := range s.sortedActive() {
		if r.p == w || r.d == w {
			hit = append(hit, r)
		}
	}
	befores := make([]system.State, len(hit))
	for i, r := range hit {
		k := 0
		if r.d == w {
			k = 1
		}
		s.project(r)
		befores[i] = r.st
		v := s.step.Force(&r.st, system.Move{Kind: system.Restart.Move(), H: -1, Arg: int8(k)})
		s.ex.Note(s.step.Fired(), s.now, r.Index)
		r.history.add(histEntry{at: s.now, kind: hRestart, w: w})
		s.noteFirings(r)
		if v != nil {
			s.fail(r, v.Invariant, v.Detail)
			if s.stop {
				return
			}
		}
		// A request that broke an invariant restarts too: the worker's
		// counters start afresh, and what it held there is gone.
		hs := r.Held(&r.st)
		s.sums[w] = r.WriteBack(k, s.sums[w], &hs)
		o := 1 - k
		ow := r.p
		if o == 1 {
			ow = r.d
		}
		if ow >= 0 {
			s.setWorker(ow, r.st.W.W[o], r.WriteBack(o, s.sums[ow], &hs))
		} else {
			r.fresh = r.st.W.W[1]
			r.Hold[o] = hs[o]
		}
	}
	// What was shared on the worker is gone with it.
	s.shares = slices.DeleteFunc(s.shares, func(sh share) bool {
		if sh.w == w {
			s.sums[w] = s.sums[w].Minus(model.SharedActive(sh.n))
			sh.adopter.sharing--
			sh.owner.sharing--
		}
		return sh.w == w
	})
	for _, r := range hit {
		if r.d == w {
			s.sums[w] = s.sums[w].Minus(model.SharedKept(r.keptShort))
			r.keptShort = 0
		}
	}
	k := model.Worker{Gen: s.workers[w].Gen + 1, Free: s.cfg.Capacity(w)}
	s.setWorker(w, k, s.sums[w])
	f := obslog.Fact{Proc: w + 1, Gen: int64(k.Gen), Kind: obslog.WorkerRestarted, TUS: s.now, To: -1}
	if s.olog != nil {
		s.olog.Write(&f)
	}
	s.indexFact(nil, &f)
	for i, r := range hit {
		if r.broken {
			continue
		}
		s.project(r)
		if v := s.chk.CheckState(&r.st); v != nil {
			s.fail(r, v.Invariant, v.Detail)
			if s.stop {
				return
			}
			continue
		}
		s.react(r, &befores[i], system.Move{Kind: system.Restart.Move(), H: -1})
		if s.stop {
			return
		}
	}
	for _, r := range hit {
		s.maybeRetire(r)
	}
}

// unbrokenActive is the requests in flight that broke no invariant, by
// index.
func (s *Sim) unbrokenActive() []*request {
	return slices.DeleteFunc(s.sortedActive(), func(r *request) bool { return r.broken })
}

func (s *Sim) sortedActive() []*request {
	out := make([]*request, 0, len(s.active))
	for _, r := range s.active {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *request) int { return a.Index - b.Index })
	return out
}

// ---- Retirement ----

// busy reports whether something is still to happen for a request: a
// scheduled move, a deadline, an open obligation, a wait for capacity.
func (r *request) busy() bool {
	if len(r.sched) > 0 || r.waiting[0] || r.waiting[1] || r.owed[0] != nil || r.owed[1] != nil || r.p < 0 {
		return true
	}
	for _, t := range r.timerAt {
		if t >= 0 {
			return true
		}
	}
	return false
}

// maybeRetire ends a request whose every record finished and that holds
// nothing: its prefix returns to the decode worker's cache. A request
// for which nothing is scheduled any more, that waits for no capacity,
// and that still holds something is stranded: Quiescence.
func (s *Sim) maybeRetire(r *request) {
	if r.retired || r.broken || r.busy() {
		return
	}
	// Nothing is to happen for the request any more: Quiescence judges it.
	s.ex.Note(model.TrigQuiescent, s.now, r.Index)
	if s.chk.Finished(&r.st, 0) && r.st.W.HandoffDrained(0) {
		s.retire(r)
		return
	}
	s.fail(r, model.NameQuiescence, "nothing can happen for the request any more, yet it is not finished and drained: "+r.st.W.DescribeHeld())
}

func (s *Sim) retire(r *request) {
	r.retired = true
	delete(s.active, r.Index)
	if s.clock != nil {
		// The request is gone: its last state stands, and what it left
		// open no step can meet (props.Clock.Gone).
		s.clock.Gone(r.Index, s.now)
		s.missed(r)
	}
	for sd := range r.owed {
		if r.owed[sd] != nil {
			s.settleObligations(r)
		}
	}
	if r.keptShort != 0 {
		s.fail(r, model.NameBlockCategoriesDisjoint, fmt.Sprintf("the request retired with %d blocks of its kept cache counted as shared", int64(r.keptShort)))
	}
	if r.d >= 0 {
		k := s.workers[r.d]
		lk := r.Hold[1].Prefix()
		k.Prefix -= lk
		k.Cached += lk
		s.setWorker(r.d, k, s.sums[r.d].Minus(r.Hold[1]))
		if r.PrefixGroup != "" && r.PrefixTokens > 0 && r.st.W.H[0].Activated {
			// The request's prompt prefix stays in the worker's cache,
			// as blocks any allocation may evict, for a request of its
			// group that the router sends here while the index still
			// advertises the group (another request's blocks of it):
			// this request's were Removed when the cache evicted them.
			want := model.WholeBlocks(r.PrefixTokens, s.cfg.BlockSize()) - lk
			k := s.workers[r.d]
			if n := min(max(want, 0), k.Free); n > 0 {
				k.Free -= n
				k.Cached += n
				s.setWorker(r.d, k, s.sums[r.d])
			}
		}
	}
	if !r.Hold[0].Zero() {
		s.fail(r, model.NameQuiescence, "the request retired holding something on its prefill worker")
	}
	s.stats.faultsMissed += r.m.Left()
	if s.faultFree {
		s.ex.Note(model.TrigFaultFreeQuiescent, s.now, r.Index)
	}
	if x := &r.st.W.H[0]; s.faultFree && !s.cfg.Engine.Traits().ExemptFromFaultFreeCompletion() &&
		(x.Outcome[0] != model.OutcomeOK || x.Outcome[1] != model.OutcomeOK) {
		s.fail(r, model.NameFaultFreeCompletion, fmt.Sprintf("no fault happened, yet the source ended %s and the destination %s", x.Outcome[0], x.Outcome[1]))
		return
	}
	s.stats.transfer(r)
	if s.tl != nil {
		s.tl.retire(r, s.now)
	}
	if x := &r.st.W.H[0]; !x.Cancelled && (x.Outcome[0] != model.OutcomeOK || x.Outcome[1] != model.OutcomeOK) &&
		r.attempt < s.cfg.MaxRetries && (r.CancelUS < 0 || r.CancelUS > s.now) {
		s.retry(r)
		return
	}
	s.stats.retire(s, r)
}

// retry is the frontend trying a failed request again, as a new attempt
// with a handoff of its own, a latency later.
func (s *Sim) retry(r *request) {
	cfg := s.cfg.AttemptWorld(r.PromptTokens, 0)
	if err := cfg.Prepare(); err != nil {
		s.inputErr = fmt.Errorf("%w: request %d: %v", cluster.ErrInput, r.Index, err)
		return
	}
	req := r.Request
	req.ArrivalUS = s.now + s.jitter()
	n := &request{Request: req, Window: cluster.Window{Cfg: cfg}, p: -1, d: -1, doomedAt: -1, firstTok: -1, attempt: r.attempt + 1, since: r.since}
	n.outcomeAt = [2]int64{-1, -1}
	for t := range n.timerAt {
		n.timerAt[t] = -1
	}
	s.push(&event{at: req.ArrivalUS, kind: evArrival, r: n})
}

// finish judges what is left when nothing more is scheduled: every
// request still in flight is stranded.
func (s *Sim) finish() {
	for _, r := range s.unbrokenActive() {
		s.maybeRetire(r)
		if s.stop {
			return
		}
	}
	for _, r := range s.unbrokenActive() {
		if s.stop {
			return
		}
		s.fail(r, model.NameQuiescence, "the run ended with the request waiting for capacity that never came: "+r.st.W.DescribeHeld())
	}
}

// ---- Canonical blocks adopted at activation ----

// share is n blocks of a prompt prefix that two requests' active KV
// share on decode worker w: adopter received them and adopted owner's
// equal blocks at activation, freeing its duplicates.
type share struct {
	w              int
	adopter, owner *request
	n              model.Blocks
}

// adopt is the destination activating a request's received KV on an
// engine that adopts canonical blocks at activation (vLLM): the prompt
// prefix it received (it found no prefix hit when it was routed) is, in
// whole blocks, equal to blocks another request of its prefix group
// holds active on the worker, having received them too; the destination
// keeps that request's blocks as canonical and frees the duplicates at
// once. The worker's ledger (k, and sum, what its requests hold) frees
// them and counts them as shared (model.SharedActive) while both
// requests hold them active. Every adopter of one owner shares the same
// number of blocks, so that when the owner leaves, the oldest adopter
// holds the canonical blocks in its place at the cost of one share.
func (s *Sim) adopt(r *request, k *model.Worker, sum *model.Holdings) {
	if !s.cfg.Adopts() || r.PrefixGroup == "" || r.hit > 0 || s.adopter(r) >= 0 {
		return
	}
	n := min(model.WholeBlocks(r.PrefixTokens, s.cfg.BlockSize()), r.Hold[1].Used())
	if n <= 0 {
		return
	}
	// The oldest request that qualifies owns the canonical blocks (the
	// lowest index, whatever the map's order). Its own prefix (the
	// group's, cut to its prompt) must hold the n blocks too: a shorter
	// prompt shares only its own whole blocks.
	var owner *request
	for _, q := range s.active {
		if q != r && q.d == r.d && q.PrefixGroup == r.PrefixGroup && q.hit == 0 && q.st.W.H[0].Dst == model.DstActive &&
			(owner == nil || q.Index < owner.Index) && q.Hold[1].Used() >= n && model.WholeBlocks(q.PrefixTokens, s.cfg.BlockSize()) >= n &&
			s.adopter(q) < 0 && (s.sharesOf(q) == 0 || s.sharesOf(q) == n) {
			owner = q
		}
	}
	if owner == nil {
		return
	}
	s.shares = append(s.shares, share{w: r.d, adopter: r, owner: owner, n: n})
	s.adopted = &s.shares[len(s.shares)-1]
	r.sharing++
	owner.sharing++
	k.Active -= n
	k.Free += n
	*sum = sum.Plus(model.SharedActive(n))
	s.stats.adopted += int64(n)
}

// adopter is the index in shares of the share by which q adopted
// another's blocks, or -1: an adopter owns no canonical blocks.
func (s *Sim) adopter(q *request) int {
	return slices.IndexFunc(s.shares, func(sh share) bool { return sh.adopter == q })
}

// sharesOf is the blocks q's adopters share with it (every one shares
// the same number), or 0 when it has none yet: a new adopter joins them
// only with as many.
func (s *Sim) sharesOf(q *request) model.Blocks {
	for _, sh := range s.shares {
		if sh.owner == q {
			return sh.n
		}
	}
	return 0
}

// unshare ends what request r shares once its destination no longer
// holds its blocks active (released, aborted): the step freed all its
// blocks, the shared ones among them, as if it held them alone, and
// k and sum are the worker's ledger after it. The shared blocks stay
// active with the request r shared them with, so one share ends: an
// adopter's own; for an owner, the one with its oldest adopter, which
// holds the canonical blocks in its place, the others sharing them with
// it. The step put those blocks in the cache as r's kept blocks (its
// release keeps its blocks) or freed them (an abort): they come back
// from there, and r keeps that many fewer (keptShort) until the cache
// evicts its blocks.
func (s *Sim) unshare(r *request, k *model.Worker, sum *model.Holdings) {
	i := s.adopter(r)
	if i < 0 {
		i = slices.IndexFunc(s.shares, func(sh share) bool { return sh.owner == r })
		if i < 0 {
			return
		}
		heir := s.shares[i].adopter
		for j := range s.shares {
			if j != i && s.shares[j].owner == r {
				s.shares[j].owner = heir
				r.sharing--
				heir.sharing++
			}
		}
	}
	sh := s.shares[i]
	s.shares = slices.Delete(s.shares, i, i+1)
	sh.adopter.sharing--
	sh.owner.sharing--
	k.Active += sh.n
	*sum = sum.Minus(model.SharedActive(sh.n))
	if r.st.W.H[0].DstKept {
		k.Kept -= sh.n
		r.keptShort += sh.n
		*sum = sum.Plus(model.SharedKept(sh.n))
	} else {
		k.Free -= sh.n
	}
}
