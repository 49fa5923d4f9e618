package live

import (
	"fmt"
	"slices"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// The legacy disaggregated path (policy disabled, the handoff design's
// HandoffPolicy::Disabled) over real processes: the live rendezvous
// adapter of the legacy role tables (cluster.LegacySpec), which the
// simulator's replay adapter steps too. Each worker process steps its
// side's record through its table and applies the fired row's actions
// to its own counters with cluster.ApplyLegacy, the rules the simulator
// applies; the coordinator applies the routers' part (LegacyOwn and
// LegacyBook at selection, the Report actions when a worker's outcome
// frame arrives) to its ledgers with the same functions.
//
// The adapter decides only when facts arrive, as the design describes
// today's live path: the frontend routes prefill at arrival and decode a
// network latency later (the decode router books at selection); decode
// connects to the bootstrap room (a DecodeConnected fact through the
// proxy) before it is submitted; prefill is submitted only once that
// connection arrives, runs to scheduler completion and frees its KV
// (its outcome frame ends the prefill router's ownership and compute
// load), sleeps the modeled delay (the transfer time the lifecycle would
// price) and marks the room complete (a RoomCompleted fact); decode then
// enters its scheduler and allocates only when admitted. Nothing is
// pinned or reserved; the legacy tables model no fault, so a run with a
// fault plan, proxy faults or a spec file is refused.

// The facts between the two sides of a legacy request (Frame.Msg of a
// KFact): the legacy tables' peer events.
var legacyFacts = map[string]spec.Role{
	cluster.LegacyDecodeConnected: spec.Source,
	cluster.LegacyRoomCompleted:   spec.Destination,
	cluster.LegacyRoomCancelled:   spec.Destination,
}

// ---- the worker ----

// legacyTables gives the tables a legacy worker steps (a test breaks
// them).
var legacyTables = cluster.LegacySpec

// lattempt is a request on the legacy path as one worker knows it: its
// side's record in the role's table and what it holds here.
type lattempt struct {
	name    string
	req     RequestInfo
	wc      *model.Config
	st      string
	demand  cluster.LegacyDemand
	held    cluster.LegacyHold
	job     *cluster.ComputeJob[*wevent]
	waiting bool
	gone    bool
}

// legacyRole is the worker's role in the legacy tables.
func (w *worker) legacyRole() spec.Role {
	if w.mine == model.SourceSide {
		return spec.Source
	}
	return spec.Destination
}

// legacyFrame takes a frame of a legacy run (a drain or a stop was
// taken already).
func (w *worker) legacyFrame(f *Frame) {
	if f.Kind == KRoute {
		w.legacyRoute(f)
		return
	}
	a := w.latts[f.Attempt]
	if a == nil {
		// Ended here already (a cancel after decode finished), or never
		// routed here: nothing changes.
		w.refuse("unknown attempt")
		return
	}
	switch f.Kind {
	case KFact:
		to, ok := legacyFacts[f.Msg]
		if !ok || to != w.legacyRole() || f.To != sideNames[w.mine] {
			w.refuse("a fact this worker does not take")
			return
		}
		// A fact is taken a configured latency after it arrives, as on
		// the lifecycle's path.
		w.push(&wevent{at: time.Now().Add(w.dur(w.cfg.LatencyUS)), kind: wLegacy, l: a, ev: f.Msg})
	case KCancel:
		w.legacyFire(a, cluster.LegacyClientCancelled)
		w.legacyAdmit()
	default:
		w.refuse("not a frame for a worker")
	}
}

func (w *worker) legacyRoute(f *Frame) {
	want := "prefill"
	if w.mine == model.DestinationSide {
		want = "decode"
	}
	if f.Stage != want || w.latts[f.Attempt] != nil || f.Request == nil {
		w.refuse("a route this worker does not take")
		return
	}
	r := f.Request
	wc, err := legacyWorld(w.cfg, model.Tokens(r.PromptTokens))
	if err != nil {
		w.finding("attempt %s: %v", f.Attempt, err)
		return
	}
	a := &lattempt{name: f.Attempt, req: *r, wc: wc, st: w.legacy.Initial(w.legacyRole()), demand: w.cfg.LegacyDemandOf(wc, w.legacyRole(), model.Tokens(r.PromptTokens))}
	w.latts[a.name] = a
	w.hosted++
	if w.mine == model.SourceSide {
		w.legacyFire(a, cluster.LegacyRequestArrived)
		return
	}
	defer w.legacyAdmit()
	// The worker mirrors the decode router's booking at selection, as it
	// mirrors the prefill router's ownership (AcceptRequest): its
	// counters sum as the simulator's do, and ReportDecode* ends it.
	cluster.LegacyBook(a.demand, &a.held, &w.k)
	w.legacyFire(a, cluster.LegacyDecodeRouted)
}

// legacyWorld is a request's world, priced as the lifecycle's attempt
// would be (the simulator's legacy run prices it so too).
func legacyWorld(cfg *cluster.Config, prompt model.Tokens) (*model.Config, error) {
	wc := cfg.AttemptWorld(prompt, 0)
	if err := wc.Prepare(); err != nil {
		return nil, err
	}
	return wc, nil
}

// legacyFire steps the request's record on an event and carries out the
// row's actions; an event the table has no row for is a finding (the
// tables allow no step here), and changes nothing.
func (w *worker) legacyFire(a *lattempt, ev string) {
	role := w.legacyRole()
	row, ok := w.legacy.Step(role, a.st, ev)
	if !ok {
		w.finding("attempt %s: LegacyTables: the %s table has no row for %s in %s", a.name, role, ev, a.st)
		return
	}
	a.st = row.To
	if w.log != nil {
		t := w.now()
		for _, lb := range cluster.LegacyObserved(role, ev, row) {
			f := obslog.FactOf(&lb, w.proc, w.opt.Gen, a.name, t)
			w.log.Write(&f)
		}
	}
	before := w.k
	for _, act := range row.Actions {
		w.legacyAct(a, role, ev, act)
	}
	if w.k != before {
		w.metrics.set(w.now(), &w.k, w.role, ownMetrics)
	}
	w.legacyMaybeRetire(a)
}

// legacyAct carries out one action: its effect on the counters
// (cluster.ApplyLegacy, the rules the simulator applies), then what the
// live adapter does for it.
func (w *worker) legacyAct(a *lattempt, role spec.Role, ev, act string) {
	if br := cluster.ApplyLegacy(role, act, a.demand, &a.held, &w.k); br != nil {
		w.finding("attempt %s: %s: %s", a.name, br.Invariant, br.Detail)
		return
	}
	switch act {
	case cluster.LegacySubmitPrefill, cluster.LegacySubmitDecode:
		a.waiting = true
		w.lwait = append(w.lwait, a)
	case cluster.LegacyWithdrawPrefill, cluster.LegacyWithdrawDecode:
		a.waiting = false
		if i := slices.Index(w.lwait, a); i >= 0 {
			w.lwait = slices.Delete(w.lwait, i, i+1)
		}
	case cluster.LegacyAllocatePrefill:
		// The worker computes one prefill at a time, first admitted
		// first (the simulator's rule).
		e := &wevent{kind: wLegacy, l: a, ev: cluster.LegacyPrefillFinished}
		a.job = w.compute.Book(int64(time.Since(w.t0)), int64(w.dur(w.cfg.ComputeUS(a.wc))), e)
		e.at = w.t0.Add(time.Duration(a.job.End))
		w.push(e)
	case cluster.LegacyStopPrefill:
		w.legacyUnbook(a)
	case cluster.LegacyAllocateDecode:
		w.push(&wevent{at: time.Now().Add(w.dur(w.cfg.DecodeUS(model.Tokens(a.req.OutputTokens)))), kind: wLegacy, l: a, ev: cluster.LegacyDecodeFinished})
	case cluster.LegacySleepDelay:
		w.push(&wevent{at: time.Now().Add(w.dur(w.cfg.LegacyDelayUS(a.wc))), kind: wLegacy, l: a, ev: cluster.LegacyDelayElapsed})
	case cluster.LegacyMarkRoomComplete:
		w.send(&Frame{Kind: KFact, Attempt: a.name, To: sideNames[model.DestinationSide], Msg: cluster.LegacyRoomCompleted})
	case cluster.LegacyCancelRoom:
		w.send(&Frame{Kind: KFact, Attempt: a.name, To: sideNames[model.DestinationSide], Msg: cluster.LegacyRoomCancelled})
	case cluster.LegacyConnectBootstrap:
		w.send(&Frame{Kind: KFact, Attempt: a.name, To: sideNames[model.SourceSide], Msg: cluster.LegacyDecodeConnected})
	case cluster.LegacyReportRequestDone:
		// The prefill router's ownership ends with scheduler completion
		// (or a cancel before it): the source's outcome on its request
		// stream. ReportComputeDone, always beside it, rides along.
		w.send(&Frame{Kind: KOutcome, Attempt: a.name, Side: sideNames[model.SourceSide], Outcome: legacyOutcome(ev == cluster.LegacyPrefillFinished)})
	case cluster.LegacyReportDecodeDone, cluster.LegacyReportDecodeFail:
		w.send(&Frame{Kind: KOutcome, Attempt: a.name, Side: sideNames[model.DestinationSide], Outcome: legacyOutcome(act == cluster.LegacyReportDecodeDone)})
	case cluster.LegacyAcceptRequest, cluster.LegacyFreePrefill, cluster.LegacyFreeDecode, cluster.LegacyReportComputeDone, cluster.LegacyComplete:
		// Their effect is on the counters only.
	default:
		w.finding("attempt %s: LegacyTables: the %s table names action %s, which the live adapter does not know", a.name, role, act)
	}
}

func legacyOutcome(ok bool) string {
	if ok {
		return model.OutcomeOK.String()
	}
	return model.OutcomeFailed.String()
}

// legacyUnbook takes a stopped prefill off the compute queue: the
// prefills behind it compute earlier.
func (w *worker) legacyUnbook(a *lattempt) {
	j := a.job
	if j == nil {
		return
	}
	a.job = nil
	w.compute.Unbook(j, int64(time.Since(w.t0)), func(k *cluster.ComputeJob[*wevent]) {
		e := *k.Of
		e.at = w.t0.Add(time.Duration(k.End))
		k.Of = &e
		w.push(&e)
	})
}

// legacyAdmit admits what waits, oldest first, each that fits now: the
// scheduler allocates at admission and not before. It runs after every
// step a frame or an event made (an admission only takes room, so one
// pass admits all that fit).
func (w *worker) legacyAdmit() {
	role := w.legacyRole()
	for i := 0; i < len(w.lwait); {
		a := w.lwait[i]
		if !cluster.LegacyFits(role, a.demand, &w.k) {
			i++
			continue
		}
		w.lwait = slices.Delete(w.lwait, i, i+1)
		a.waiting = false
		w.legacyFire(a, cluster.LegacyAdmitted)
	}
}

// legacyMaybeRetire forgets a request whose record is terminal and holds
// nothing here: a late frame for it finds none and changes nothing.
func (w *worker) legacyMaybeRetire(a *lattempt) {
	if a.gone || !w.legacy.Terminal(w.legacyRole(), a.st) {
		return
	}
	if a.held != (cluster.LegacyHold{}) || a.waiting || a.job != nil {
		w.finding("attempt %s: %s: its record ended in %s still holding %+v", a.name, model.NameQuiescence, a.st, a.held)
	}
	a.gone = true
	delete(w.latts, a.name)
}

// legacyEvent takes a worker's own event of a legacy request: a fact
// after its latency, a prefill's end, the delay, a decode's end.
func (w *worker) legacyEvent(e *wevent) {
	a := e.l
	if a.gone {
		return
	}
	if e.ev == cluster.LegacyPrefillFinished {
		if a.job == nil || a.job.Of != e {
			return // stopped, or moved earlier (an event of its own)
		}
		// The worker computed the prefill: it is free for the next.
		w.legacyUnbook(a)
	}
	w.legacyFire(a, e.ev)
	w.legacyAdmit()
}

// legacyOpen describes the first requests a worker still holds, for its
// ledger.
func (w *worker) legacyOpen() []string {
	names := make([]string, 0, len(w.latts))
	for name := range w.latts {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []string
	for _, name := range names[:min(len(names), 8)] {
		a := w.latts[name]
		out = append(out, fmt.Sprintf("%s: legacy state %s; holds %d blocks, slot %v, in flight %v; waiting for room %v", name, a.st, int64(a.held.Blocks), a.held.Slot, a.held.InFlight, a.waiting))
	}
	return out
}

// ---- the coordinator ----

// lcatt is a legacy request as the frontend and routers know it: their
// part of each side's holding, and each side's outcome.
type lcatt struct {
	name      string
	req       cluster.Request
	wc        *model.Config
	p, d      int
	held      [2]cluster.LegacyHold
	outcome   [2]model.Outcome
	cancelled bool
	done      bool
	arrive    time.Time
}

func (a *lcatt) worker(sd model.Side) int {
	if sd == model.SourceSide {
		return a.p
	}
	return a.d
}

// legacyRefuse says why a legacy run cannot take the options: its
// tables model no fault, and the tables are the legacy ones.
func legacyRefuse(opt *Options) error {
	switch {
	case len(opt.Faults) > 0:
		return fmt.Errorf("live: policy %s runs no fault plan: the legacy tables model no fault (want source-first or destination-first)", cluster.Disabled)
	case opt.Proxy.Seed != 0:
		return fmt.Errorf("live: policy %s runs no proxy faults: the legacy tables model no fault (want source-first or destination-first)", cluster.Disabled)
	case opt.SpecFile != "" || opt.Protocol != nil:
		return fmt.Errorf("live: policy %s runs the legacy tables; a spec file replaces the lifecycle's", cluster.Disabled)
	}
	return nil
}

// legacyArrive routes a request's prefill at once and its decode a
// network latency later: the live rendezvous routes both, and decode
// connects before prefill is submitted.
func (c *coord) legacyArrive() error {
	r := *c.next
	if err := c.readArrival(); err != nil {
		return err
	}
	c.scheduleArrival()
	c.arrived++
	wc, err := legacyWorld(c.cfg, r.PromptTokens)
	if err != nil {
		return fmt.Errorf("%w: request %d: %v", cluster.ErrInput, r.Index, err)
	}
	a := &lcatt{name: cluster.AttemptName(&r, 0), req: r, wc: wc, p: -1, d: -1, arrive: time.Now()}
	c.latts[a.name] = a
	a.p = cluster.Choose(c.cfg.PrefillRouter, 0, c.cfg.Prefill.Workers, &c.nextP, c.rng, c.prefillLoad, nil)
	cluster.LegacyOwn(c.cfg.LegacyDemandOf(wc, spec.Source, r.PromptTokens), &a.held[model.SourceSide], &c.wk[a.p])
	c.booked[a.p].set(c.now(), &c.wk[a.p], c.cfg.Role(a.p), routerMetrics)
	c.legacyLogRouted(a, model.SourceSide)
	c.sendTo(a.p, &Frame{Kind: KRoute, Attempt: a.name, Stage: "prefill", Request: c.legacyInfo(a)})
	c.routedTo(a.p, model.SourceSide)
	if r.CancelUS >= 0 {
		c.push(&cevent{at: c.fromStart(r.CancelUS), kind: cCancel, l: a})
	}
	c.push(&cevent{at: time.Now().Add(c.dur(c.cfg.LatencyUS)), kind: cRouteDecode, l: a})
	return nil
}

func (c *coord) legacyInfo(a *lcatt) *RequestInfo {
	return &RequestInfo{Index: a.req.Index, PromptTokens: int64(a.req.PromptTokens), OutputTokens: int64(a.req.OutputTokens)}
}

// legacyRouteDecode routes decode, unless the request ended or was
// cancelled first; the decode router books at selection.
func (c *coord) legacyRouteDecode(a *lcatt) {
	if a.done || a.cancelled || a.d >= 0 || a.outcome[model.SourceSide] == model.OutcomeFailed {
		return
	}
	a.d = cluster.Choose(c.cfg.DecodeRouter, c.cfg.Prefill.Workers, c.cfg.NumWorkers(), &c.nextD, c.rng, c.decodeLoad, nil)
	cluster.LegacyBook(c.cfg.LegacyDemandOf(a.wc, spec.Destination, a.req.PromptTokens), &a.held[model.DestinationSide], &c.wk[a.d])
	c.booked[a.d].set(c.now(), &c.wk[a.d], c.cfg.Role(a.d), routerMetrics)
	c.legacyLogRouted(a, model.DestinationSide)
	c.sendTo(a.d, &Frame{Kind: KRoute, Attempt: a.name, Stage: "decode", Request: c.legacyInfo(a)})
	c.routedTo(a.d, model.DestinationSide)
}

// legacyCancel is the client's cancel: it reaches each side routed. A
// side that ended already refuses it; the source cancels the room for
// decode when its record is past completion.
func (c *coord) legacyCancel(a *lcatt) {
	if a.done {
		return
	}
	a.cancelled = true
	lf := obslog.FactOf(&obslog.Label{Kind: obslog.ClientCancelled, By: obslog.ByRouter}, 0, 0, a.name, c.now())
	c.log.Write(&lf)
	for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
		if w := a.worker(sd); w >= 0 && a.outcome[sd] != model.OutcomeFailed {
			c.sendTo(w, &Frame{Kind: KCancel, Attempt: a.name})
		}
	}
	c.legacyMaybeFinish(a)
}

// legacyRelay takes a fact between the two sides of a legacy request
// through the proxy, as it came.
func (c *coord) legacyRelay(from int, f *Frame, raw []byte) {
	a := c.latts[f.Attempt]
	to, ok := cluster.SideNamed(f.To)
	if a == nil || !ok || f.Kind != KFact {
		return
	}
	if dst := a.worker(to); dst >= 0 && a.worker(to.Other()) == from {
		c.sendRaw(dst, f, raw)
	}
}

// legacyOutcome is a side's outcome on its request stream: the
// routers' part of the Report actions, applied to their ledgers.
func (c *coord) legacyOutcome(w int, f *Frame) {
	a := c.latts[f.Attempt]
	sd, ok := cluster.SideNamed(f.Side)
	if a == nil || !ok || a.worker(sd) != w || a.outcome[sd] != model.OutcomeNone {
		return
	}
	okOut := f.Outcome == model.OutcomeOK.String()
	a.outcome[sd] = model.OutcomeFailed
	if okOut {
		a.outcome[sd] = model.OutcomeOK
	}
	role := spec.Source
	acts := []string{cluster.LegacyReportComputeDone, cluster.LegacyReportRequestDone}
	if sd == model.DestinationSide {
		role = spec.Destination
		acts = []string{cluster.LegacyReportDecodeFail}
		if okOut {
			acts[0] = cluster.LegacyReportDecodeDone
		}
	}
	for _, act := range acts {
		if br := cluster.ApplyLegacy(role, act, cluster.LegacyDemand{}, &a.held[sd], &c.wk[w]); br != nil {
			c.rep.Findings = append(c.rep.Findings, fmt.Sprintf("coordinator: attempt %s: %s: %s", a.name, br.Invariant, br.Detail))
		}
	}
	c.booked[w].set(c.now(), &c.wk[w], c.cfg.Role(w), routerMetrics)
	c.legacyMaybeFinish(a)
}

// legacyMaybeFinish ends a request for the frontend once both sides'
// outcomes are in, or its source's when it was cancelled before decode
// was routed.
func (c *coord) legacyMaybeFinish(a *lcatt) {
	src, dst := a.outcome[model.SourceSide], a.outcome[model.DestinationSide]
	if a.done || src == model.OutcomeNone || (dst == model.OutcomeNone && (a.d >= 0 || !a.cancelled)) {
		return
	}
	a.done = true
	c.finished++
	delete(c.latts, a.name)
	ca := catt{arrive: a.arrive}
	c.tally(&ca, src == model.OutcomeOK && dst == model.OutcomeOK, a.cancelled)
}

// legacyLogRouted writes a router's choice to the run's log, as the
// simulator's legacy run writes it: the prefill router counts the
// prompt, the decode router books the request's blocks.
func (c *coord) legacyLogRouted(a *lcatt, sd model.Side) {
	lb := obslog.Label{Kind: obslog.Routed, By: obslog.ByRouter, Stage: sd, Tokens: int32(a.req.PromptTokens)}
	if sd == model.DestinationSide {
		lb.Tokens, lb.Blocks = 0, int32(a.held[sd].Booked)
	}
	f := obslog.FactOf(&lb, 0, 0, a.name, c.now())
	f.To = a.worker(sd) + 1
	if sd == model.SourceSide {
		f.PromptTokens = int64(a.req.PromptTokens)
	}
	c.log.Write(&f)
}
