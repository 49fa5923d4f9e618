package sim

import (
	"container/heap"
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// The legacy disaggregated path on the virtual clock: the replay
// adapter of the legacy role tables (cluster.LegacySpec). It steps each
// request's two role-local records through the tables, and carries out
// the actions a fired row names on the shared worker counters, the same
// counters, routers, compute queues, statistics and timeline the
// lifecycle's runs use. The adapter decides only when facts arrive:
// there is no rendezvous in replay, so decode "connects" as the request
// arrives; after prefill completion and the modeled delay (the transfer
// time the lifecycle would price, latency included) decode is routed and
// the room completes at once; each scheduler admits what waits, oldest
// first, when its blocks (and, on decode, a slot) are free.
//
// What the run judges: a fact the tables have no row for, an action
// that frees, completes or ends a booking the request does not hold
// (ExactlyOnceRelease, InFlightAccounting, RouterCleanup), capacity
// beyond a pool or the slots (CapacityRespected), the block categories
// summing to capacity at every change (BlockCategoriesDisjoint, as for
// every run), and at the end every request terminal on both sides with
// nothing held, booked or counted (Quiescence).

// legacy event kinds, in the order they happen at one instant: what
// frees capacity first.
const (
	lDecodeDone = iota
	lCancel
	lPrefillDone
	lDelay
	lRoute
	lArrive
)

type lreq struct {
	cluster.Request
	wc               *model.Config
	pBlocks, dBlocks model.Blocks
	computeUS        int64
	delayUS          int64
	st               [2]string
	p, d             int
	held             [2]cluster.LegacyHold
	job              *cluster.ComputeJob[*levent]
	waiting          [2]bool
	// When it reached each queue, for the waits and the phases.
	dispatchAt, jobStart, enqAt, firstTok int64
	phases                                phaseClock
	trans                                 []Transition
	retired                               bool
	// cancelled: the client cancelled; a record that comes to exist
	// later (decode routed after the delay) takes the cancel at once.
	cancelled bool
}

type levent struct {
	at   int64
	kind int
	seq  uint64
	r    *lreq
	idx  int
}

type lqueue []*levent

func (q lqueue) Len() int { return len(q) }
func (q lqueue) Less(i, j int) bool {
	a, b := q[i], q[j]
	if a.at != b.at {
		return a.at < b.at
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.seq < b.seq
}
func (q lqueue) Swap(i, j int) { q[i], q[j] = q[j], q[i]; q[i].idx, q[j].idx = i, j }
func (q *lqueue) Push(x any)   { e := x.(*levent); e.idx = len(*q); *q = append(*q, e) }
func (q *lqueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	e.idx = -1
	*q = old[:len(old)-1]
	return e
}

type legacyRun struct {
	s       *Sim
	tables  *cluster.Legacy
	q       lqueue
	seq     uint64
	jobs    []cluster.ComputeQueue[*levent]
	waiters [][]*lreq
	// inFlight holds the requests not retired, by index, for the end's
	// judgement (a retired one is forgotten, so memory follows the
	// requests in flight, not the workload).
	inFlight map[int]*lreq
}

// legacyTables gives the tables a legacy run steps (a test breaks them).
var legacyTables = func() *spec.Spec { return cluster.LegacySpec() }

// runLegacy runs a workload on the legacy disaggregated path.
func runLegacy(ctx context.Context, cfg *cluster.Config, src cluster.Source, opt Options) (*Result, error) {
	tables, err := cluster.NewLegacy(legacyTables())
	if err != nil {
		return nil, err
	}
	if len(opt.Faults) > 0 {
		return nil, fmt.Errorf("%w: the %s policy runs no fault plan: its tables model no fault (want source-first or destination-first)", cluster.ErrInput, cluster.Disabled)
	}
	n := cfg.NumWorkers()
	s := &Sim{cfg: cfg, workers: make([]model.Worker, n), sums: make([]model.Holdings, n), dirty: make([]bool, n),
		rng: rand.New(rand.NewPCG(cfg.Seed, 0x68616e646f6666))}
	s.stats = newStats(cfg, n)
	for w := range s.workers {
		s.workers[w].Free = cfg.Capacity(w)
	}
	// The log's header names the policy disabled (cluster.LogHeader):
	// its facts are the legacy path's, which the lifecycle does not
	// judge.
	s.olog = opt.Log
	if opt.Timeline != nil {
		s.tl = &opt.Timeline.r
		s.tl.start(s)
	}
	l := &legacyRun{s: s, tables: tables, jobs: make([]cluster.ComputeQueue[*levent], n), waiters: make([][]*lreq, n), inFlight: map[int]*lreq{}}
	var events uint64
	pull := func() error {
		r, err := src.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		return l.admitRequest(r)
	}
	if err := pull(); err != nil {
		return nil, err
	}
	samples := int64(0)
	for l.q.Len() > 0 && s.violation == nil {
		e := heap.Pop(&l.q).(*levent)
		if s.tl != nil {
			for ; samples <= e.at; samples += s.tl.period {
				s.advance(samples)
				s.tl.sample(s)
			}
		}
		s.advance(e.at)
		events++
		if events&0xffff == 0 {
			if ctx.Err() != nil {
				return s.result(events, true), nil
			}
			if opt.Progress != nil {
				opt.Progress(Progress{NowUS: s.now, Arrived: s.stats.arrived, Completed: s.stats.completed, Events: events})
			}
		}
		r := e.r
		if r.retired {
			continue
		}
		switch e.kind {
		case lArrive:
			s.stats.arrived++
			r.p = s.choose(cfg.PrefillRouter, 0, cfg.Prefill.Workers, &s.nextP, s.prefillLoad, nil)
			l.logRouted(r, spec.Source)
			l.fire(r, spec.Source, cluster.LegacyRequestArrived)
			// Replay has no rendezvous: decode counts as connected at once.
			l.fire(r, spec.Source, cluster.LegacyDecodeConnected)
			if r.cancelled {
				l.cancel(r)
			}
			if err := pull(); err != nil {
				return nil, err
			}
		case lPrefillDone:
			l.unbook(r)
			s.stats.prefillWait.add(r.jobStart - r.dispatchAt)
			l.fire(r, spec.Source, cluster.LegacyPrefillFinished)
		case lDelay:
			l.fire(r, spec.Source, cluster.LegacyDelayElapsed)
		case lRoute:
			if r.st[spec.Source] != "Done" || r.cancelled {
				continue
			}
			r.d = s.choose(cfg.DecodeRouter, cfg.Prefill.Workers, cfg.NumWorkers(), &s.nextD, s.decodeLoad, nil)
			// The decode router books the request's blocks at selection.
			k := s.workers[r.d]
			cluster.LegacyBook(r.demand(spec.Destination, cfg), &r.held[spec.Destination], &k)
			s.setWorker(r.d, k, s.sums[r.d])
			l.logRouted(r, spec.Destination)
			l.fire(r, spec.Destination, cluster.LegacyDecodeRouted)
			l.fire(r, spec.Destination, cluster.LegacyRoomCompleted)
			if r.cancelled {
				l.cancel(r)
			}
		case lDecodeDone:
			l.fire(r, spec.Destination, cluster.LegacyDecodeFinished)
		case lCancel:
			l.log(r, nil, obslog.Label{Kind: obslog.ClientCancelled, By: obslog.ByRouter})
			l.cancel(r)
		}
		l.settle()
		l.maybeRetire(r)
	}
	if s.violation == nil {
		l.finish()
	}
	return s.result(events, false), nil
}

// admitRequest prices a request of the workload and schedules its arrival
// at its prefill worker (a routed request takes the latency) and its
// cancel.
func (l *legacyRun) admitRequest(q cluster.Request) error {
	s, cfg := l.s, l.s.cfg
	if q.ArrivalUS < s.lastArrival {
		return fmt.Errorf("%w: request %d arrives at %s, before %s", cluster.ErrInput, q.Index, fmtMS(q.ArrivalUS), fmtMS(s.lastArrival))
	}
	s.lastArrival = q.ArrivalUS
	wc := cfg.AttemptWorld(q.PromptTokens, 0)
	if err := wc.Prepare(); err != nil {
		return fmt.Errorf("%w: request %d: %v", cluster.ErrInput, q.Index, err)
	}
	r := &lreq{Request: q, wc: wc, p: -1, d: -1, firstTok: -1}
	r.pBlocks = cfg.LegacyDemandOf(wc, spec.Source, q.PromptTokens).Blocks
	r.dBlocks = cfg.LegacyDemandOf(wc, spec.Destination, q.PromptTokens).Blocks
	if r.pBlocks > cfg.Prefill.CapacityBlocks || r.dBlocks > cfg.Decode.CapacityBlocks {
		return fmt.Errorf("%w: request %d needs %d prefill and %d decode blocks, more than a worker's capacity (%d, %d)", cluster.ErrInput, q.Index,
			int64(r.pBlocks), int64(r.dBlocks), int64(cfg.Prefill.CapacityBlocks), int64(cfg.Decode.CapacityBlocks))
	}
	r.computeUS = cfg.ComputeUS(wc)
	r.st = [2]string{l.tables.Initial(spec.Source), l.tables.Initial(spec.Destination)}
	l.push(q.ArrivalUS+s.jitter(), lArrive, r)
	if q.CancelUS >= 0 {
		l.push(max(q.CancelUS, q.ArrivalUS), lCancel, r)
	}
	l.inFlight[q.Index] = r
	return nil
}

func (l *legacyRun) push(at int64, kind int, r *lreq) *levent {
	l.seq++
	e := &levent{at: at, kind: kind, seq: l.seq, r: r}
	heap.Push(&l.q, e)
	return e
}

// worker is the cluster worker a role of the request is on.
func (r *lreq) worker(role spec.Role) int {
	if role == spec.Source {
		return r.p
	}
	return r.d
}

// fire steps a role's record through its table on an event and carries
// out the row's actions; an event the table has no row for breaks the
// run.
func (l *legacyRun) fire(r *lreq, role spec.Role, ev string) {
	s := l.s
	if s.violation != nil {
		return
	}
	row, ok := l.tables.Step(role, r.st[role], ev)
	if !ok {
		l.fail(r, "LegacyTables", fmt.Sprintf("the %s table has no row for %s in %s", role, ev, r.st[role]))
		return
	}
	r.st[role] = row.To
	if s.olog != nil {
		for _, lb := range cluster.LegacyObserved(role, ev, row) {
			l.log(r, &role, lb)
		}
	}
	if s.tl != nil {
		r.trans = append(r.trans, Transition{TMS: ms(s.now), Role: role.String(), Row: row.Row, From: row.From, Event: ev, To: row.To})
	}
	for _, a := range row.Actions {
		l.act(r, role, a)
		if s.violation != nil {
			return
		}
	}
	l.phases(r)
}

// act carries out one action of a fired row: its effect on the
// counters (cluster.ApplyLegacy, the rules every driver shares), then
// what the replay adapter schedules for it.
func (l *legacyRun) act(r *lreq, role spec.Role, a string) {
	s, cfg := l.s, l.s.cfg
	w := r.worker(role)
	k := s.workers[w]
	if br := cluster.ApplyLegacy(role, a, r.demand(role, cfg), &r.held[role], &k); br != nil {
		l.fail(r, br.Invariant, br.Detail)
		return
	}
	if k != s.workers[w] {
		s.setWorker(w, k, s.sums[w])
	}
	switch a {
	case cluster.LegacySubmitPrefill, cluster.LegacySubmitDecode:
		r.waiting[role] = true
		if role == spec.Source {
			r.dispatchAt = s.now
		} else {
			r.enqAt = s.now
		}
		l.waiters[w] = append(l.waiters[w], r)
		s.dirty[w] = true
	case cluster.LegacyWithdrawPrefill, cluster.LegacyWithdrawDecode:
		if !r.waiting[role] {
			l.fail(r, model.NameExactlyOnceRelease, fmt.Sprintf("the %s's %s withdraws a request that does not wait", role, a))
			return
		}
		l.unwait(r, role)
	case cluster.LegacyAllocatePrefill:
		j := l.jobs[r.p].Book(s.now, r.computeUS, nil)
		j.Of = l.push(j.End, lPrefillDone, r)
		r.job, r.jobStart = j, j.Start
	case cluster.LegacyAllocateDecode:
		r.firstTok = s.now + cfg.Decode.PerTokenUS
		s.stats.decodeWait.add(s.now - r.enqAt)
		l.push(s.now+cfg.DecodeUS(r.OutputTokens), lDecodeDone, r)
	case cluster.LegacyStopPrefill:
		l.unbook(r)
	case cluster.LegacySleepDelay:
		r.delayUS = s.jitter() + cfg.LegacyDelayUS(r.wc)
		l.push(s.now+r.delayUS, lDelay, r)
	case cluster.LegacyMarkRoomComplete:
		// The replay adapter routes decode now; the room completes as
		// soon as decode is there.
		s.stats.transfers++
		s.stats.transferBytes += int64(r.wc.DestQuote(0, 1, false).PayloadBytes)
		s.stats.transferUS += r.delayUS
		l.push(s.now, lRoute, r)
	case cluster.LegacyCancelRoom, cluster.LegacyConnectBootstrap:
		// Replay: decode is routed only once the room completed, so no
		// one waits for these facts.
	case cluster.LegacyAcceptRequest, cluster.LegacyFreePrefill, cluster.LegacyFreeDecode, cluster.LegacyReportComputeDone,
		cluster.LegacyReportRequestDone, cluster.LegacyReportDecodeDone, cluster.LegacyReportDecodeFail, cluster.LegacyComplete:
		// Their effect is on the counters only (and in the log, which
		// fire writes: cluster.LegacyObserved).
	default:
		l.fail(r, "LegacyTables", fmt.Sprintf("the %s table names action %s, which the replay adapter does not know", role, a))
	}
}

// demand is what the request asks of its worker in a role.
func (r *lreq) demand(role spec.Role, cfg *cluster.Config) cluster.LegacyDemand {
	if role == spec.Source {
		return cluster.LegacyDemand{Blocks: r.pBlocks, Prompt: r.PromptTokens}
	}
	return cluster.LegacyDemand{Blocks: r.dBlocks, Prompt: r.PromptTokens, Slots: cfg.Decode.Slots}
}

// cancel is the client's cancel reaching the records that exist.
func (l *legacyRun) cancel(r *lreq) {
	r.cancelled = true
	for _, role := range spec.Roles {
		if r.worker(role) < 0 || l.tables.Terminal(role, r.st[role]) {
			continue
		}
		l.fire(r, role, cluster.LegacyClientCancelled)
	}
}

// unbook takes a request's prefill off its worker's compute queue now.
func (l *legacyRun) unbook(r *lreq) {
	j := r.job
	if j == nil {
		return
	}
	r.job = nil
	if j.Of.idx >= 0 {
		heap.Remove(&l.q, j.Of.idx)
	}
	l.jobs[r.p].Unbook(j, l.s.now, func(k *cluster.ComputeJob[*levent]) {
		k.Of.at, k.Of.r.jobStart = k.End, k.Start
		heap.Fix(&l.q, k.Of.idx)
	})
}

func (l *legacyRun) unwait(r *lreq, role spec.Role) {
	w := r.worker(role)
	r.waiting[role] = false
	if i := slices.Index(l.waiters[w], r); i >= 0 {
		l.waiters[w] = slices.Delete(l.waiters[w], i, i+1)
	}
}

// settle admits, on every worker whose counters changed, what waits
// there, oldest first, each that fits.
func (l *legacyRun) settle() {
	s := l.s
	for w := range s.dirty {
		for s.dirty[w] && s.violation == nil {
			s.dirty[w] = false
			role := spec.Source
			if s.cfg.Role(w) == model.DecodeWorker {
				role = spec.Destination
			}
			for _, r := range slices.Clone(l.waiters[w]) {
				if !cluster.LegacyFits(role, r.demand(role, s.cfg), &s.workers[w]) {
					continue
				}
				l.unwait(r, role)
				l.fire(r, role, cluster.LegacyAdmitted)
			}
		}
	}
}

// maybeRetire ends a request both of whose records are terminal (or
// whose decode will never be routed): it must hold nothing.
func (l *legacyRun) maybeRetire(r *lreq) {
	if r.retired || l.s.violation != nil || r.p < 0 {
		return
	}
	srcEnd := l.tables.Terminal(spec.Source, r.st[spec.Source])
	dstEnd := l.tables.Terminal(spec.Destination, r.st[spec.Destination])
	if !srcEnd || (!dstEnd && (r.d >= 0 || (r.st[spec.Source] == "Done" && !r.cancelled))) {
		return
	}
	s := l.s
	for _, role := range spec.Roles {
		if r.held[role] != (cluster.LegacyHold{}) || r.waiting[role] {
			l.fail(r, model.NameQuiescence, fmt.Sprintf("the request ended holding something on its %s worker", role))
			return
		}
	}
	r.retired = true
	delete(l.inFlight, r.Index)
	ok := l.tables.Outcome(spec.Source, r.st[spec.Source]) == spec.OutcomeSuccess &&
		l.tables.Outcome(spec.Destination, r.st[spec.Destination]) == spec.OutcomeSuccess
	switch {
	case ok:
		s.stats.completed++
		s.stats.e2e.add(s.now - r.ArrivalUS)
		s.stats.ttft.add(r.firstTok - r.ArrivalUS)
		s.stats.outputTokens += int64(r.OutputTokens)
	case r.cancelled:
		s.stats.cancelledReqs++
	default:
		s.stats.failed++
	}
	s.stats.lastDone = max(s.stats.lastDone, s.now)
	if s.tl != nil {
		l.retireTimeline(r)
	}
}

// finish judges the end: every request retired, every worker back to
// nothing held, booked or counted.
func (l *legacyRun) finish() {
	s := l.s
	for _, i := range slices.Sorted(maps.Keys(l.inFlight)) {
		if r := l.inFlight[i]; !r.retired {
			l.fail(r, model.NameQuiescence, fmt.Sprintf("the run ended with the request's prefill record %s and decode record %s", r.st[spec.Source], r.st[spec.Destination]))
			return
		}
	}
	for w := range s.workers {
		k := &s.workers[w]
		if k.Active != 0 || k.InFlight != 0 || k.SlotsUsed != 0 || k.Owned != 0 || k.PrefillTokens != 0 || k.BookedBlocks != 0 {
			l.fail(nil, model.NameQuiescence, fmt.Sprintf("worker %d ends the run holding something: %s", w, s.describeWorker(w)))
			return
		}
	}
}

func (s *Sim) describeWorker(w int) string {
	k := &s.workers[w]
	return fmt.Sprintf("active %d, in flight %d, slots %d, owned %d, compute load %d, booked %d",
		int64(k.Active), k.InFlight, k.SlotsUsed, k.Owned, int64(k.PrefillTokens), int64(k.BookedBlocks))
}

func (l *legacyRun) fail(r *lreq, inv, detail string) {
	s := l.s
	if s.violation != nil {
		return
	}
	idx := -1
	var hist []string
	if r != nil {
		idx = r.Index
		for _, t := range r.trans {
			hist = append(hist, fmt.Sprintf("%.3fms %s row %d: %s --%s--> %s", t.TMS, t.Role, t.Row, t.From, t.Event, t.To))
		}
	}
	s.violation = &Violation{Invariant: inv, AtUS: s.now, Request: idx, Detail: detail, History: hist}
}

// phases follows a request's phases from its records' states: waiting
// for decode to connect, queued for blocks (and behind the prefills
// booked before it), computing, transferring (the modeled delay), queued
// for decode's blocks and slot, decoding. It is never pinned or
// reserved: the legacy path holds nothing across the handoff.
func (l *legacyRun) phases(r *lreq) {
	if l.s.tl == nil {
		return
	}
	var in [numPhases]bool
	src, dst := r.st[spec.Source], r.st[spec.Destination]
	in[0] = src == "AwaitingDecode"
	in[1] = src == "Queued" || dst == "Queued"
	in[2] = src == "Computing"
	in[5] = src == "Sleeping" || (src == "Done" && dst == "Idle")
	in[6] = dst == "Decoding"
	pc := &r.phases
	at := l.s.now
	for i := range in {
		switch {
		case in[i] && !pc.on[i]:
			pc.on[i], pc.open[i] = true, at
		case !in[i] && pc.on[i]:
			r.phases.close(i, at, r.jobStart)
		}
	}
}

// retireTimeline writes a retired request's timeline: its phases and
// every row its legacy records fired.
func (l *legacyRun) retireTimeline(r *lreq) {
	ph := r.phases.finish(l.s.now, r.jobStart)
	outcome := func(role spec.Role) string {
		switch l.tables.Outcome(role, r.st[role]) {
		case spec.OutcomeSuccess:
			return model.OutcomeOK.String()
		case spec.OutcomeFailure:
			return model.OutcomeFailed.String()
		}
		return model.OutcomeNone.String()
	}
	l.s.tl.writeHandoff(HandoffTimeline{Request: r.Index, ID: r.ID, Attempt: l.s.tl.attempt(r.Index, 0),
		Prefill: r.p, Decode: r.d, ArrivalMS: ms(r.ArrivalUS),
		Source: outcome(spec.Source), Destination: outcome(spec.Destination), Phases: ph, Transitions: r.trans}, 0)
	r.trans = nil
}

// log writes a fact of the legacy path to the run's log, by the
// request's worker in a role (nil: by the router).
func (l *legacyRun) log(r *lreq, role *spec.Role, lb obslog.Label) {
	s := l.s
	if s.olog == nil {
		return
	}
	proc, gen := 0, int64(0)
	if role != nil {
		w := r.worker(*role)
		proc, gen = w+1, int64(s.workers[w].Gen)
	}
	f := obslog.FactOf(&lb, proc, gen, cluster.AttemptName(&r.Request, 0), s.now)
	s.olog.Write(&f)
}

// logRouted writes a router's choice of the request's worker in a role:
// the prefill router counts the prompt, the decode router books the
// request's blocks.
func (l *legacyRun) logRouted(r *lreq, role spec.Role) {
	s := l.s
	if s.olog == nil {
		return
	}
	lb := obslog.Label{Kind: obslog.Routed, By: obslog.ByRouter, Stage: model.SourceSide, Tokens: int32(r.PromptTokens)}
	if role == spec.Destination {
		lb.Stage, lb.Tokens, lb.Blocks = model.DestinationSide, 0, int32(r.dBlocks)
	}
	f := obslog.FactOf(&lb, 0, 0, cluster.AttemptName(&r.Request, 0), s.now)
	f.To = r.worker(role) + 1
	if role == spec.Source {
		f.PromptTokens = int64(r.PromptTokens)
	}
	s.olog.Write(&f)
}
