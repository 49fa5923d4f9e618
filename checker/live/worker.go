package live

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// WorkerOptions start one worker process.
type WorkerOptions struct {
	// Coordinator is the coordinator's address on 127.0.0.1.
	Coordinator string
	// Side is the worker's role: SourceSide for a prefill worker.
	Side model.Side
	// Worker is the cluster worker index (prefill workers first).
	Worker int
	Gen    int64
	Config *cluster.Config
	// Protocol runs other tables than the generated machines.
	Protocol *system.Protocol
	// Log receives the worker's facts, appended to a log whose header
	// names the run's processes (Header); nil logs nothing.
	Log    io.Writer
	Header *obslog.Header
	// Scale turns the configuration's durations into wall-clock time:
	// real = configured × Scale.
	Scale float64
	// Epoch is the run's time zero, for the log's t_us.
	Epoch time.Time
	// Errors receives what the worker refuses or finds (a frame it
	// cannot read, a fact of an old generation); nil is stderr.
	Errors io.Writer
}

// Ledger is what a worker holds when asked: its worker's counters (the
// physical categories, admission, in-flight requests, and the router
// ledgers it mirrors), the attempts it still holds, and what it refused.
type Ledger struct {
	Role          string `json:"role"`
	Worker        int    `json:"worker"`
	Gen           int64  `json:"gen"`
	Free          int64  `json:"free"`
	Cached        int64  `json:"cached"`
	Kept          int64  `json:"kept"`
	Active        int64  `json:"active"`
	Pinned        int64  `json:"pinned"`
	Reserved      int64  `json:"reserved"`
	Slots         int64  `json:"slots"`
	Headroom      int64  `json:"headroom"`
	InFlight      int64  `json:"in_flight"`
	Owned         int64  `json:"owned"`
	PrefillTokens int64  `json:"prefill_tokens"`
	Booked        int64  `json:"booked"`
	Stored        int64  `json:"stored"`
	// PrefixShortBlocks is the blocks of the prefix hits routed to a
	// decode worker that its cache no longer held, nor its free pool
	// (takePrefix): held beyond its capacity until their requests retired.
	PrefixShortBlocks int64 `json:"prefix_short_blocks,omitempty"`
	Open              int   `json:"open"`
	// OpenAttempts describes the first of the attempts still held: the
	// side's state, what it holds, its deadlines.
	OpenAttempts []string `json:"open_attempts,omitempty"`
	Attempts     int      `json:"attempts"`
	Refused      int      `json:"refused"`
	// RefusedWhy counts the refused frames by why.
	RefusedWhy map[string]int `json:"refused_why,omitempty"`
	Findings   []string       `json:"findings,omitempty"`
	// NoWork, given by the coordinator when the worker took no attempt,
	// says why.
	NoWork string `json:"no_work,omitempty"`
	// Lateness is how late the worker took its events and frames.
	Lateness *Lateness `json:"lateness,omitempty"`
	// Series is the handoff design's worker metrics over the run
	// (cluster.WorkerMetrics), peak and time-weighted mean: the worker
	// reports those of its own counters, the coordinator adds the
	// router's booking. A worker restarted reports its last generation's.
	Series map[string]PeakMean `json:"series,omitempty"`
	// StrandedSourceBlockSeconds and StrandedSourcePeak are the stranded
	// source KV on the worker (source blocks pinned after compute while
	// decode waits), in block-seconds over the run and at the largest
	// instant; the coordinator gives them.
	StrandedSourceBlockSeconds float64 `json:"stranded_source_block_seconds"`
	StrandedSourcePeak         int64   `json:"stranded_source_peak_blocks"`
	// CPUUS is the CPU time (user and system, microseconds) the worker's
	// process used from its hello to its ledger: its part of the run's
	// CPU per handoff (Report.CPU). A worker run in the coordinator's
	// process (GoSpawner) measures that whole process instead.
	CPUUS int64 `json:"cpu_us"`
	// Waits, in an answer to KQuiet only, is what each open attempt
	// waits for (stall.go).
	Waits []AttemptWait `json:"waits,omitempty"`
}

// Held lists what the ledger still holds, "" when nothing: blocks in use
// (active, pinned, reserved), slots, headroom, bookings and requests in
// flight, and attempts not yet finished.
func (l *Ledger) Held() string {
	var s []string
	add := func(name string, v int64) {
		if v != 0 {
			s = append(s, fmt.Sprintf("%s %d", name, v))
		}
	}
	add("active", l.Active)
	add("pinned", l.Pinned)
	add("reserved", l.Reserved)
	add("slots", l.Slots)
	add("headroom", l.Headroom)
	add("in_flight", l.InFlight)
	add("owned", l.Owned)
	add("prefill_tokens", l.PrefillTokens)
	add("booked", l.Booked)
	add("stored", l.Stored)
	add("open attempts", int64(l.Open))
	if len(s) == 0 {
		return ""
	}
	return fmt.Sprint(s)
}

// worker is one worker process's state: its own worker's counters, what
// its attempts hold together, and a window world per attempt in which it
// takes its own moves.
type worker struct {
	opt WorkerOptions
	cfg *cluster.Config
	*stepper
	mine model.Side // the world worker of the attempts' windows it is
	who  owner
	k    model.Worker
	sum  model.Holdings
	atts map[string]*attempt
	// early holds the marks that came before their attempt's route.
	early map[string][]Frame
	wait  []*attempt // attempts waiting for capacity, oldest first
	q     queue[*wevent]
	// compute is a prefill worker's prefills, computed one at a time
	// (the simulator's rule), in nanoseconds since t0, each Of its
	// compute move's pending event.
	compute cluster.ComputeQueue[*wevent]
	t0      time.Time
	log     *obslog.Writer
	proc    int
	out     *bufio.Writer
	errs    io.Writer
	// counts
	hosted, refused int
	refusedWhy      map[string]int
	moves           []system.Move // schedule's buffer
	findings        []string
	frozen          bool
	draining        bool
	// settleAsked: the coordinator's drain asked for the ledgers once
	// nothing more can happen here ("settled"), and something still
	// could: they go when nothing can.
	settleAsked bool
	late        Lateness
	wbuf        []byte // send's buffer
	// role is the worker's, metrics its metrics over time (those of its
	// own counters), span the run's (from the drain) to average them over.
	role    model.WorkerRole
	metrics workerGauges
	span    [2]int64
	// cpu0 is the process's CPU time when it said hello.
	cpu0 time.Duration
	// legacy, in a run of policy disabled, is the legacy tables the
	// worker steps (legacy.go), latts its requests, lwait those waiting
	// for room, oldest first; atts stays empty.
	legacy *cluster.Legacy
	latts  map[string]*lattempt
	lwait  []*lattempt
	// hitBlocks is the prefix blocks the decode worker took for the hits
	// routed to it (takePrefix), which its KV events report; prefixShort
	// those its cache and free pool no longer held.
	hitBlocks, prefixShort int64
	// nkept counts the attempts of atts kept after their side retired
	// (attempt.kept): open attempts are the others.
	nkept int
}

// attempt is one attempt as the worker knows it.
type attempt struct {
	name           string
	req            RequestInfo
	cluster.Window // its world (Cfg); the worker shows its own counters in it
	st             system.State
	peerGen        int64                        // -1 until known
	job            *cluster.ComputeJob[*wevent] // its prefill on the worker's compute queue
	sched          []system.Move
	timerV         [model.NumTimers]uint32
	timerOn        [model.NumTimers]bool
	overdue        [model.NumTimers]bool
	waiting        bool
	// The transfer this worker runs: the probe's answer and when the
	// bytes are through.
	xferV   uint32
	replied bool
	xferDue bool
	// m holds the planned faults this worker strikes for the attempt.
	// (nil: none; most attempts have none, and the marks are large).
	m       *cluster.Marks
	trigger string // the log kind a planned restart waits for
	gone    bool
	// gaveUp is the event by which the side learned the attempt is over
	// while holding something, at gaveUpUS; lastUS is its last step
	// (microseconds from the epoch): what a stuck attempt's verdict
	// weighs (stall.go).
	gaveUp           string
	gaveUpUS, lastUS int64
	// held: the coordinator holds the attempt (KHold) while a router
	// acts on it; its events and frames wait until KRelease.
	held   bool
	heldEv []*wevent
	heldFr []Frame
	// strand is the stranded source KV as a source's window sees it
	// (from, to, blocks); ready when a destination's window saw its
	// decode stop waiting (decodeWaits). Microseconds from the epoch.
	strand strand
	ready  int64
	// group and prefix are the prefix group of the attempt's request and
	// its prefix's length; hit, on a destination, the prefix hit the
	// decode router found here, and lk its blocks, taken from the
	// worker's cache into the request's cached prefix (model.Worker
	// Prefix) as the simulator takes them; base is what the attempt holds
	// here before its first step (its cached prefix): it retires holding
	// that.
	group  string
	prefix model.Tokens
	hit    model.Tokens
	lk     model.Blocks
	base   model.Holdings
	// valid: the destination's KV became valid here (activated, or
	// published as stored). The simulator asks Activated of the whole
	// world; a destination's window of a transfer the source pushed does
	// not see the transfer done, and knows its KV valid by publishing it.
	valid bool
	// kept: the side retired (finished, holding nothing, nothing left to
	// happen here), but the coordinator has not said the attempt ended:
	// a fact the peer sent before then may still come, and the side's
	// machine takes it in its terminal state, as the model's does,
	// whose tables may still react to it. Its state stays; it is no open
	// attempt of any ledger. ended: the coordinator said the attempt
	// ended (KEnded), so nothing but what it relayed before comes for
	// it. pending counts the facts taken for it that are still to be
	// delivered (each a configured latency later): the attempt is open
	// until they are. prefixBack: its prefix went back to the cache
	// (retirePrefix), once.
	kept, ended, prefixBack bool
	pending                 int32
}

// newWorker makes a worker's state, its log begun.
func newWorker(opt WorkerOptions) (*worker, error) {
	var st *stepper
	var legacy *cluster.Legacy
	var err error
	if opt.Config.Policy == cluster.Disabled {
		legacy, err = cluster.NewLegacy(legacyTables())
	} else {
		st, err = newStepper(opt.Protocol, opt.Config)
	}
	if err != nil {
		return nil, err
	}
	w := &worker{t0: time.Now(), opt: opt, cfg: opt.Config, stepper: st, mine: opt.Side, who: sideOwner(opt.Side),
		atts: map[string]*attempt{}, early: map[string][]Frame{}, errs: opt.Errors, legacy: legacy, latts: map[string]*lattempt{}}
	if w.errs == nil {
		w.errs = os.Stderr
	}
	w.k = model.Worker{Gen: model.Generation(opt.Gen), Free: opt.Config.Capacity(opt.Worker)}
	w.role = opt.Config.Role(opt.Worker)
	if opt.Log != nil {
		w.log = obslog.AppendWriter(opt.Log, opt.Header)
		// A later generation's worker_restarted line is the
		// coordinator's: it writes it when it declares the restart.
		w.proc = opt.Worker + 1
	}
	w.out = bufio.NewWriter(io.Discard)
	return w, nil
}

// RunWorker runs a worker until the coordinator drains it, its context
// ends, or its connection breaks.
func RunWorker(ctx context.Context, opt WorkerOptions) error {
	w, err := newWorker(opt)
	if err != nil {
		return err
	}
	conn, err := net.Dial("tcp", opt.Coordinator)
	if err != nil {
		return fmt.Errorf("live: worker %d: %w", opt.Worker, err)
	}
	defer conn.Close()
	go func() {
		<-ctx.Done()
		conn.Close()
	}()
	w.out = bufio.NewWriterSize(conn, 64<<10)
	w.cpu0 = processCPU()
	w.send(&Frame{Kind: KHello, Role: sideNames[opt.Side], Index: opt.Worker, Gen: opt.Gen})
	w.out.Flush()
	in := make(chan Frame, 1024)
	rerr := make(chan error, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		r := bufio.NewReaderSize(conn, 64<<10)
		var buf []byte
		for {
			var f Frame
			var err error
			f, buf, err = ReadFrame(r, buf)
			if err != nil {
				rerr <- err
				close(in)
				return
			}
			select {
			case in <- f:
			case <-done:
				return
			}
		}
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if w.q.Len() > 0 && !w.frozen {
			timer.Reset(time.Until(w.q.peek().at))
		} else {
			timer.Reset(time.Hour)
		}
		select {
		case f, ok := <-in:
			if !ok {
				err := <-rerr
				if errors.Is(err, ErrFrame) {
					fmt.Fprintf(w.errs, "worker %d: closing the connection: %v\n", opt.Worker, err)
				}
				if w.log != nil {
					w.log.Flush()
				}
				// The coordinator ends a worker by closing its connection;
				// frames the worker sent that it never read make the close
				// a reset rather than an end of file. Either is the end
				// the coordinator chose, which it reports itself.
				if ctx.Err() != nil || w.draining || err == io.EOF || errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) {
					return nil
				}
				return fmt.Errorf("live: worker %d: %w", opt.Worker, err)
			}
			if !w.frozen {
				w.frame(&f)
			}
		drain:
			for i := 0; i < 256 && !w.frozen; i++ {
				select {
				case f, ok := <-in:
					if !ok {
						break drain
					}
					w.frame(&f)
				default:
					break drain
				}
			}
		case <-timer.C:
		case <-ctx.Done():
			return nil
		}
		w.runDue()
		if w.settleAsked && w.settled() {
			w.settleAsked = false
			w.sendLedger()
		}
		if w.draining && w.open() == 0 {
			w.sendLedger()
			w.draining = false
		}
		if w.log != nil {
			w.log.Flush()
		}
		if err := w.out.Flush(); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("live: worker %d: %w", opt.Worker, err)
		}
	}
}

func (w *worker) now() int64 { return time.Since(w.opt.Epoch).Microseconds() }

// dur is a configured duration on the wall clock.
func (w *worker) dur(us int64) time.Duration {
	return time.Duration(float64(us) * w.opt.Scale * 1000)
}

func (w *worker) send(f *Frame) {
	f.Gen = w.opt.Gen
	f.SentUS = max(w.now(), 1)
	b, err := AppendFrame(w.wbuf[:0], f)
	if err != nil {
		w.finding("cannot send %s: %v", f.Kind, err)
		return
	}
	w.wbuf = b
	w.out.Write(b)
}

func (w *worker) finding(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if len(w.findings) < 32 {
		w.findings = append(w.findings, s)
	}
	fmt.Fprintf(w.errs, "worker %d gen %d: %s\n", w.opt.Worker, w.opt.Gen, s)
}

// refuse counts a frame that changes nothing, by why.
func (w *worker) refuse(why string) {
	w.refused++
	if w.refusedWhy == nil {
		w.refusedWhy = map[string]int{}
	}
	w.refusedWhy[why]++
}

// ---- frames ----

func (w *worker) frame(f *Frame) {
	if f.SentUS > 0 {
		w.late.Frames.add(time.Duration(w.now()-f.SentUS) * time.Microsecond)
		f.SentUS = 0 // a held frame taken later is not counted twice
	}
	if f.Kind == KDrain {
		w.draining = true
		w.span = [2]int64{f.FromUS, f.ToUS}
		if f.Outcome == "now" || (f.Outcome == "settled" && w.settled()) {
			// The coordinator waited long enough, or nothing more can
			// happen to the attempts still open here: the ledgers as
			// they are.
			w.sendLedger()
			return
		}
		// Asked while something can still happen here (an event queued,
		// a move scheduled): the coordinator asks once, so the worker
		// answers as soon as nothing can.
		w.settleAsked = f.Outcome == "settled"
		return
	}
	if f.Kind == KQuiet {
		w.quiet(f)
		return
	}
	if w.legacy != nil && f.Kind != KStop {
		w.legacyFrame(f)
		return
	}
	if f.Kind == KRoute {
		w.route(f)
		return
	}
	if f.Kind == KStop {
		// A restart at a time: no further step; what this process
		// logged and sent so far is all it did.
		w.frozen = true
		w.send(&Frame{Kind: KStopped})
		return
	}
	a := w.atts[f.Attempt]
	switch {
	case f.Kind == KHold:
		// Everything this worker sent about the attempt is ahead of the
		// answer on the connection.
		if a != nil {
			a.held = true
		}
		w.send(&Frame{Kind: KHeld, Attempt: f.Attempt})
		return
	case f.Kind == KRelease:
		if a != nil && a.held {
			w.release(a)
		}
		return
	case f.Kind == KEnded:
		// An attempt already forgotten (or never had: its side was
		// restarted away) needs nothing.
		if a != nil {
			w.ended(a)
		}
		return
	case a != nil && a.held && f.Kind != KProbe:
		// A probe only reads; anything else steps, after the release.
		a.heldFr = append(a.heldFr, *f)
		return
	}
	if a == nil && f.Kind == KMark {
		// The coordinator sends an attempt's marks before its route.
		w.early[f.Attempt] = append(w.early[f.Attempt], *f)
		return
	}
	if a == nil {
		// An attempt this process never had, or forgot: nothing changes.
		if f.Kind == KProbe {
			w.send(&Frame{Kind: KProbeReply, Attempt: f.Attempt, To: sideNames[w.mine.Other()], PeerGen: f.Gen, Reg: model.RegClosed.String(), Hold: "none"})
		}
		w.refuse("unknown attempt")
		return
	}
	// A frame from an older generation of the peer, or to an older
	// generation of this worker, changes nothing.
	if f.Kind == KFact || f.Kind == KProbe || f.Kind == KProbeReply {
		if f.PeerGen != 0 && f.PeerGen != w.opt.Gen {
			w.refuse("to an old generation")
			return
		}
		switch {
		case a.peerGen < 0:
			a.peerGen = f.Gen
		case f.Gen < a.peerGen:
			w.refuse("from an old generation")
			return
		}
	}
	switch f.Kind {
	case KFact:
		w.fact(a, f)
	case KCancel:
		w.unkeep(a)
		w.cancel(a)
	case KProbe:
		w.probe(a, f)
	case KProbeReply:
		w.probeReply(a, f)
	case KPeerRestarted:
		w.unkeep(a)
		w.peerRestarted(a, f)
	case KMark:
		w.mark(a, f)
	default:
		w.refuse("not a frame for a worker")
	}
}

// release lets a held attempt step again: what came for it meanwhile is
// taken in its order, events first (they were due earlier).
func (w *worker) release(a *attempt) {
	a.held = false
	for _, e := range a.heldEv {
		w.push(e)
	}
	a.heldEv = nil
	fr := a.heldFr
	a.heldFr = nil
	for i := range fr {
		if w.frozen || a.held {
			a.heldFr = append(a.heldFr, fr[i:]...)
			return
		}
		w.frame(&fr[i])
	}
	if a.kept && a.ended {
		// It ended while held, kept already.
		w.forget(a)
	}
}

func (w *worker) route(f *Frame) {
	want := "prefill"
	if w.mine == model.DestinationSide {
		want = "decode"
	}
	if f.Stage != want || w.atts[f.Attempt] != nil {
		delete(w.early, f.Attempt)
		w.refuse("a route this worker does not take")
		return
	}
	r := f.Request
	hit := model.Tokens(0)
	if w.mine == model.DestinationSide {
		hit = model.Tokens(f.HitTokens)
	}
	wc, err := w.world(model.Tokens(r.PromptTokens), hit)
	if err != nil {
		w.finding("attempt %s: %v", f.Attempt, err)
		return
	}
	a := &attempt{name: f.Attempt, req: *r, Window: cluster.Window{Cfg: wc}, peerGen: -1,
		group: f.Group, prefix: model.Tokens(f.PrefixTokens), hit: hit}
	if f.PeerGen > 0 {
		a.peerGen = f.PeerGen
	}
	a.st = w.steps.Initial(wc)
	if hit > 0 {
		w.takePrefix(a)
	}
	w.atts[f.Attempt] = a
	w.hosted++
	// Its marks came first: they are set before its first step.
	for i := range w.early[f.Attempt] {
		w.setMark(a, &w.early[f.Attempt][i])
	}
	delete(w.early, f.Attempt)
	if w.mine == model.SourceSide {
		w.do(a, system.Move{Kind: system.MvRoutePrefill, H: 0, Arg: 0}, false)
		return
	}
	// The decode router's choice reaches the destination: the source is
	// world worker 0 of its window, placed already.
	a.st.W.H[0].Prefill = 0
	a.st.W.H[0].RequestDelivered = true
	w.do(a, system.Move{Kind: system.MvRouteDecode, H: 0, Arg: 1}, true)
}

// takePrefix makes the prefix the decode router found cached here the
// attempt's cached prefix, as the simulator's routeDecode does: its
// blocks leave the worker's anonymous cache. The router judged the hit
// on the cache this worker last reported (KKV), less the hits it routed
// here that the worker had not taken then. An allocation that evicted
// the cache while the report or the route was on the wire leaves it
// short (the simulator, which reads the cache itself, would have found no
// hit): the blocks missing come from the free pool, and where that is
// short too the worker holds them beyond its capacity until the attempt
// retires, counted (prefix_short_blocks) and reported.
func (w *worker) takePrefix(a *attempt) {
	a.lk = a.Cfg.DestQuote(0, 1, false).LockedBlocks
	a.base = a.st.W.HandoffHoldings(0)[w.mine]
	k := &w.k
	c := min(a.lk, k.Cached)
	k.Cached -= c
	f := min(a.lk-c, max(k.Free, 0))
	k.Free -= f
	if short := a.lk - c - f; short > 0 {
		w.prefixShort += int64(short)
		k.Free -= short
	}
	k.Prefix += a.lk
	w.hitBlocks += int64(a.lk)
	w.sum = w.sum.Plus(a.base)
	a.Hold[w.mine] = a.base
	w.reportCache(a)
}

// reportCache tells the routers the worker's anonymous cache changed
// outside a KV event (KKV, msg none): a hit taken from it, an allocation
// that evicted from it, a retiring request's prefix kept in it. The
// router's view of the cache is then as stale as the frames in flight,
// as its index is.
func (w *worker) reportCache(a *attempt) {
	w.send(&Frame{Kind: KKV, Attempt: a.name, Msg: "none", Group: a.group, Cached: int64(w.k.Cached), HitBlocks: w.hitBlocks})
}

func (w *worker) fact(a *attempt, f *Frame) {
	m, ok := msgNamed(f.Msg)
	to, ok2 := cluster.SideNamed(f.To)
	if !ok || !ok2 || to != w.mine {
		w.refuse("a fact this worker does not take")
		return
	}
	// Each fact that arrives is taken a configured latency later, on its
	// own: a duplicate is taken twice. A retired side's kept machine is
	// open again until it took it.
	w.unkeep(a)
	a.pending++
	w.push(&wevent{at: time.Now().Add(w.dur(w.cfg.LatencyUS)), kind: wDeliver, a: a, m: system.Move{Kind: system.MvDeliver, H: 0, Arg: int8(to), Msg: m}})
}

func (w *worker) deliver(a *attempt, m system.Move) {
	a.pending--
	x := &a.st.W.H[0]
	if w.mine == model.SourceSide && x.Decode < 0 {
		x.Decode = 1
	}
	x.Ch[w.mine].Send(m.Msg)
	if !w.do(a, m, false) {
		x.Ch[w.mine] = model.Channel{}
		w.maybeRetire(a)
	}
}

func (w *worker) cancel(a *attempt) {
	x := &a.st.W.H[0]
	x.Cancelled = true
	x.CancelPending[w.mine] = true
	w.settle(a, nil, system.Move{})
}

func (w *worker) probe(a *attempt, f *Frame) {
	x := &a.st.W.H[0]
	rep := &Frame{Kind: KProbeReply, Attempt: a.name, To: sideNames[w.mine.Other()], PeerGen: f.Gen}
	if w.mine == model.SourceSide {
		rep.Reg, rep.Hold = x.SrcReg.String(), x.Src.String()
	} else {
		rep.Reg, rep.Hold = x.DstReg.String(), x.Dst.String()
	}
	w.send(rep)
}

func (w *worker) probeReply(a *attempt, f *Frame) {
	x := &a.st.W.H[0]
	reg, ok := regNamed(f.Reg)
	if !ok || x.Xfer != model.XferRunning || x.Runner != w.mine {
		w.refuse("a probe reply for no transfer of this worker")
		return
	}
	if w.mine == model.DestinationSide {
		h, ok := srcHoldNamed(f.Hold)
		if !ok && f.Hold != "none" {
			w.refuse("bad hold")
			return
		}
		x.SrcReg, x.Src = reg, h
	} else {
		h, ok := dstHoldNamed(f.Hold)
		if !ok && f.Hold != "none" {
			w.refuse("bad hold")
			return
		}
		x.DstReg, x.Dst = reg, h
	}
	a.replied = true
	// The window has learnt the peer's registration: a move it did not
	// offer while it held the registration unknown may be offered now (a
	// delay just before the command the transfer's end sends, once the
	// transfer would succeed), as the simulator's world, which holds both
	// sides, offers it from the transfer's start. A mark waiting for it
	// strikes here, before the transfer ends.
	if a.m != nil {
		w.project(a)
		w.moves = w.chk.MovesInto(&a.st, w.moves[:0])
		if m, k, ok := a.m.Offered(w.moves, w.strikesHere); ok {
			w.struck(a, k.String())
			w.do(a, m, false)
			return
		}
	}
	w.maybeEndTransfer(a)
}

func (w *worker) peerRestarted(a *attempt, f *Frame) {
	x := &a.st.W.H[0]
	peer := w.mine.Other()
	if w.mine == model.SourceSide && x.Decode < 0 {
		x.Decode = 1
	}
	a.peerGen = f.Gen
	before := a.st
	w.project(a)
	// The peer's restart, in this worker's window: its record forgotten,
	// this side told by the health check (PeerGone).
	w.take(&a.st, system.Move{Kind: system.Restart.Move(), H: -1, Arg: int8(peer)}, true)
	a.st.W.W[peer] = before.W.W[peer]
	w.writeBack(a)
	w.settle(a, &before, system.Move{Kind: system.Restart.Move(), H: -1})
}

func (w *worker) mark(a *attempt, f *Frame) {
	if w.setMark(a, f) {
		w.unkeep(a)
		w.settle(a, nil, system.Move{})
	}
}

// setMark records a planned fault on an attempt, by its typed kind; false
// for a fault this worker does not strike, refused, or for a restart's
// phase, which changes nothing now.
func (w *worker) setMark(a *attempt, f *Frame) bool {
	if k, ok := system.ParseFault(f.Fault); ok {
		if a.m == nil {
			a.m = &cluster.Marks{}
		}
		if f.Msg != "" {
			// Aimed at a phase: set when this worker logs the fact,
			// for this side or, given one, for the side it strikes.
			on := sideNames[w.mine]
			if f.Side != "" {
				on = f.Side
			}
			pf := cluster.Fault{File: "frame", Kind: f.Fault, Request: 0, Worker: -1, Side: on, After: f.Msg, AfterSide: sideNames[w.mine]}
			if err := a.m.Mark(&pf); err != nil {
				w.refuse("a fault aimed at a phase a worker does not strike")
			}
			return false
		}
		if !a.m.MarkSide(k, w.mine) {
			w.refuse("a fault a worker does not strike")
			return false
		}
		return true
	}
	k, ok := obslog.KindNamed(f.Fault)
	if !ok {
		w.refuse("an unknown fault")
		return false
	}
	// A restart's phase: it strikes when the worker logs that fact, so
	// nothing changes now.
	a.trigger = obslog.Kinds[k].Name
	return false
}

// struck tells the coordinator a planned fault struck.
func (w *worker) struck(a *attempt, fault string) {
	w.send(&Frame{Kind: KStruck, Attempt: a.name, Fault: fault})
}

// ---- steps ----

// project puts the worker's counters and what its other attempts hold
// into an attempt's window.
func (w *worker) project(a *attempt) {
	a.Project(&a.st, int(w.mine), w.k, w.sum)
}

func (w *worker) writeBack(a *attempt) {
	hs := a.Held(&a.st)
	w.sum = a.WriteBack(int(w.mine), w.sum, &hs)
	old := w.k
	w.k = a.st.W.W[w.mine]
	w.metrics.set(w.now(), &w.k, w.role, ownMetrics)
	if w.k.Cached != old.Cached && w.mine == model.DestinationSide {
		w.reportCache(a)
	}
	if room(&w.k) > room(&old) || w.k.SlotsUsed < old.SlotsUsed || w.k.HeadroomUsed < old.HeadroomUsed {
		w.offer()
	}
}

func room(k *model.Worker) model.Blocks { return k.Free + k.Cached + k.Kept }

// do takes one move of an attempt (Step, or forced Apply for a move whose
// preconditions live in another process), logs it and settles.
func (w *worker) do(a *attempt, m system.Move, force bool) bool {
	w.project(a)
	if !force && !w.enables(&a.st, m) {
		return false
	}
	before := a.st
	if !w.take(&a.st, m, force) {
		return false
	}
	w.writeBack(a)
	w.settle(a, &before, m)
	return true
}

// settle follows a step: what it logged, sent, armed; what now waits.
func (w *worker) settle(a *attempt, before *system.State, m system.Move) {
	x := &a.st.W.H[0]
	if a.job != nil && x.Compute != model.ComputeRunning {
		// The prefill stopped before its compute ended.
		w.unbook(a)
	}
	w.stranding(a)
	if x.Activated || x.Published {
		a.valid = true
	}
	if before != nil {
		b := &before.W.H[0]
		a.lastUS = w.now()
		if a.gaveUp == "" {
			if ev := givesUp(w.steps.Firings(), w.mine); ev != "" {
				if ok, _ := cluster.Holds(x, w.mine, true); ok {
					a.gaveUp, a.gaveUpUS = ev, a.lastUS
				}
			}
		}
		w.observe(a, before, m)
		peer := w.mine.Other()
		for x.Ch[peer].N > 0 {
			msg := x.Ch[peer].Take(0)
			w.send(&Frame{Kind: KFact, Attempt: a.name, To: sideNames[peer], Msg: msg.String(), PeerGen: max(a.peerGen, 0)})
		}
		if !b.Announced && x.Announced && w.mine == model.SourceSide {
			w.send(&Frame{Kind: KAnnounce, Attempt: a.name})
		}
		if b.Outcome[w.mine] == model.OutcomeNone && x.Outcome[w.mine] != model.OutcomeNone {
			w.send(&Frame{Kind: KOutcome, Attempt: a.name, Side: sideNames[w.mine], Outcome: x.Outcome[w.mine].String(),
				FromUS: a.strand.from, ToUS: a.strand.to, Blocks: a.strand.blocks, DecodeReadyUS: a.ready})
		}
		w.timers(a, b, m)
		if b.Xfer != model.XferRunning && x.Xfer == model.XferRunning && x.Runner == w.mine {
			w.startTransfer(a)
		}
	}
	// The cache evicts what a finished side keeps.
	if cluster.Evicts(w.chk, &a.st, w.mine) {
		w.do(a, cluster.Evict(w.mine), true)
		return
	}
	if w.frozen || a.gone {
		return
	}
	w.schedule(a)
	w.maybeRetire(a)
	if strings.HasPrefix(a.trigger, "!") {
		w.triggered(a)
	}
}

// stranding follows, after a step, the stranded source KV as the
// attempt's window shows it: on a source, whether its pinned blocks are
// stranded (cluster.StrandedSource), on a destination, whether its
// decode still waits. The outcome frame tells the coordinator.
func (w *worker) stranding(a *attempt) {
	x := &a.st.W.H[0]
	s := &a.strand
	if w.mine == model.DestinationSide {
		if a.ready == 0 && !decodeWaits(x) {
			a.ready = w.now()
		}
		return
	}
	b := int64(cluster.StrandedSource(x, a.Hold[model.SourceSide]))
	switch {
	case b > 0 && s.from == 0:
		s.from, s.blocks = w.now(), b
	case b > 0 && s.to == 0:
		s.blocks = max(s.blocks, b)
	case b == 0 && s.from > 0 && s.to == 0:
		s.to = w.now()
	}
}

// observe logs the facts a step made observable, when the worker writes
// a log, and publishes its KV events (KKV) to the routers' index whether
// or not it does: only a step that changed what the side has indexed
// publishes one, so a worker without a log observes no other step.
func (w *worker) observe(a *attempt, before *system.State, m system.Move) {
	indexed := indexChanged(&before.W.H[0], &a.st.W.H[0])
	if w.log == nil && !indexed && a.trigger == "" && (a.m == nil || !a.m.AwaitsPhase()) {
		return
	}
	by := obslog.BySource
	if w.mine == model.DestinationSide {
		by = obslog.ByDestination
	}
	t := w.now()
	ls := w.observed(before, &a.st, m, by)
	for i := range ls {
		l := &ls[i]
		if a.trigger != "" && a.trigger[0] != '!' && obslog.Kinds[l.Kind].Name == a.trigger {
			a.trigger = "!" + a.trigger
		}
		if a.m != nil && a.m.AwaitsPhase() {
			w.phase(a, obslog.Kinds[l.Kind].Name)
		}
		if w.log != nil {
			f := obslog.FactOf(l, w.proc, w.opt.Gen, a.name, t)
			w.log.Write(&f)
		}
		if l.Kind == obslog.Stored || l.Kind == obslog.Removed {
			w.send(&Frame{Kind: KKV, Attempt: a.name, Msg: obslog.Kinds[l.Kind].Name, Blocks: int64(l.Blocks), Group: a.group, Cached: int64(w.k.Cached), HitBlocks: w.hitBlocks})
		}
	}
}

// indexChanged reports whether a step published Stored or Removed for a
// side of the handoff (the simulator's test): only then has the KV index
// something to take.
func indexChanged(b, a *model.Handoff) bool {
	return b.SrcIndexed != a.SrcIndexed || b.Published != a.Published
}

// phase sets the marks aimed at the phase the worker just logged a fact
// of: they strike where the attempt next offers them, but for a fault of
// the frontend (a client cancel), which the coordinator's frontend
// makes: the worker tells it.
func (w *worker) phase(a *attempt, name string) {
	for _, k := range a.m.Logged(w.mine, name) {
		if system.FaultKinds[k].Frontend && a.m.Spend(k, w.mine) {
			w.send(&Frame{Kind: KTrigger, Attempt: a.name, Fault: k.String(), Side: sideNames[w.mine], Msg: name})
		}
		// A mark for the other side (after_side): that side's worker
		// strikes it, marked by the coordinator. settle sends this
		// before the facts of the step that logged name, so the peer is
		// marked before it hears of the step.
		if other := w.mine.Other(); cluster.NamesSide(k) && a.m.Spend(k, other) {
			w.send(&Frame{Kind: KTrigger, Attempt: a.name, Fault: k.String(), Side: sideNames[w.mine], To: sideNames[other], Msg: name})
		}
	}
}

// triggered: the fact a planned restart waits for was logged. The worker
// tells the coordinator and takes no further step: the restart strikes
// at that phase, whatever the clock says.
func (w *worker) triggered(a *attempt) {
	a.trigger = ""
	w.send(&Frame{Kind: KTrigger, Attempt: a.name})
	w.frozen = true
}

// schedule gives each enabled move the worker owns an event, at the
// time it takes; marks strike where the world first offers them.
func (w *worker) schedule(a *attempt) {
	w.project(a)
	// One buffer serves every call: each path below that steps (and so
	// may schedule again) returns at once, without reading moves after.
	w.moves = w.chk.MovesInto(&a.st, w.moves[:0])
	w.scheduleMoves(a)
}

// scheduleRefused schedules an attempt whose move do just refused: the
// moves its window enables are the ones the refusal found (enables),
// its window unchanged since.
func (w *worker) scheduleRefused(a *attempt) {
	w.moves = append(w.moves[:0], w.enabled()...)
	w.scheduleMoves(a)
}

// scheduleMoves schedules an attempt whose window enables w.moves.
func (w *worker) scheduleMoves(a *attempt) {
	moves := w.moves
	x := &a.st.W.H[0]
	if a.m != nil {
		if m, k, ok := a.m.Offered(moves, w.strikesHere); ok {
			w.struck(a, k.String())
			w.do(a, m, false)
			return
		}
	}
	if now, _ := cluster.HangStrikes(x); now && x.Runner == w.mine && a.m != nil {
		for k := range system.NumFaults {
			if !system.FaultKinds[k].Runner || !a.m.Spend(k, w.mine) {
				continue
			}
			// The runner strikes the fault on its transfer (a hang: from
			// now on it ends only by failing, once a registration it uses
			// is no longer valid). It is forced: the window holds the
			// peer's side only as this worker last heard of it, and may
			// not offer it.
			w.struck(a, k.String())
			w.do(a, system.Move{Kind: k.Move(), H: 0}, true)
			return
		}
	}
	waiting := false
	for _, m := range moves {
		if ownerOf(m, x) != w.who || m.Kind == system.MvTimer || m.Kind == system.MvTransfer {
			continue
		}
		if slices.Contains(a.sched, m) {
			continue
		}
		a.sched = append(a.sched, m)
		if m.Kind == system.MvCompute {
			w.book(a, m)
			continue
		}
		w.push(&wevent{at: time.Now().Add(w.delay(a, m)), kind: wMove, a: a, m: m})
	}
	// A worker schedules only its own side's moves.
	waiting = system.WaitsForCapacity(x, w.mine, a.sched)
	if waiting && !a.waiting {
		w.wait = append(w.wait, a)
	}
	a.waiting = waiting
	if x.Xfer == model.XferRunning && x.Runner == w.mine {
		w.maybeEndTransfer(a)
	}
}

// strikesHere says which offered fault moves a worker strikes where its
// window first offers them: those of its own side.
func (w *worker) strikesHere(k system.Fault, m system.Move) bool {
	return cluster.NamesSide(k) && model.Side(m.Arg) == w.mine
}

// offer schedules again the attempts that wait for capacity, oldest first.
func (w *worker) offer() {
	ws := w.wait
	w.wait = nil
	for _, a := range ws {
		if a.gone || !a.waiting {
			continue
		}
		a.waiting = false
		w.push(&wevent{at: time.Now(), kind: wOffer, a: a})
	}
}

// delay is how long an owned move takes: the configuration's durations,
// scaled; a fact, a cancel or a route takes the real network's time
// before it arrives, so none here. The system says which work the move
// is (Move.Takes).
func (w *worker) delay(a *attempt, m system.Move) time.Duration {
	return w.dur(m.Takes(&a.st.W.H[0], &system.Durations{
		// The network's own time has passed already; the configured
		// latency is added, as every adapter does, so that the clocks
		// agree on what comes first.
		Arrival:  func() int64 { return w.cfg.LatencyUS },
		Command:  w.cfg.CommandUS,
		SlowCore: w.cfg.SlowCoreUS,
		Decode:   w.cfg.DecodeUS(model.Tokens(a.req.OutputTokens)),
	}))
}

// book puts an attempt's prefill at the end of the worker's compute
// queue: it computes when the ones before it have ended or stopped.
func (w *worker) book(a *attempt, m system.Move) {
	e := &wevent{kind: wMove, a: a, m: m}
	a.job = w.compute.Book(int64(time.Since(w.t0)), int64(w.dur(w.cfg.ComputeUS(a.Cfg))), e)
	e.at = w.t0.Add(time.Duration(a.job.End))
	w.push(e)
}

// unbook takes an attempt's prefill off the compute queue, now: its
// compute ended, or stopped (a cancel, an abort). A stopped prefill gives
// the worker back at once, and the prefills behind it compute earlier.
func (w *worker) unbook(a *attempt) {
	j := a.job
	a.job = nil
	if i := slices.Index(a.sched, j.Of.m); i >= 0 {
		a.sched = slices.Delete(a.sched, i, i+1)
	}
	w.compute.Unbook(j, int64(time.Since(w.t0)), func(k *cluster.ComputeJob[*wevent]) {
		e := *k.Of
		e.at = w.t0.Add(time.Duration(k.End))
		k.Of = &e
		w.push(&e)
	})
}

// ---- the transfer this worker runs ----

// startTransfer probes the peer's registration (a read for a pull, a
// write for a push) and gives the bytes their time.
func (w *worker) startTransfer(a *attempt) {
	a.xferV++
	a.replied, a.xferDue = false, false
	w.send(&Frame{Kind: KProbe, Attempt: a.name, To: sideNames[w.mine.Other()], PeerGen: max(a.peerGen, 0)})
	d := w.dur(w.cfg.TransferUS(a.Cfg, a.st.W.H[0].PrefixGone&2 != 0))
	if a.m != nil && a.m.Replaces(system.MvTransfer) {
		d = 0
	}
	w.push(&wevent{at: time.Now().Add(d), kind: wXfer, a: a, ver: a.xferV})
}

// maybeEndTransfer ends the transfer once its bytes had their time and
// the probe answered (or, hung, once a registration is no longer valid).
func (w *worker) maybeEndTransfer(a *attempt) {
	x := &a.st.W.H[0]
	if x.Xfer != model.XferRunning || x.Runner != w.mine {
		return
	}
	if a.xferDue && a.m != nil {
		if f, k, ok := a.m.Instead(system.Move{Kind: system.MvTransfer, H: 0}); ok && w.do(a, f, false) {
			w.struck(a, k.String())
			return
		}
	}
	own := x.SrcReg
	if w.mine == model.DestinationSide {
		own = x.DstReg
	}
	// Through a registration of its own that is no longer valid the
	// transfer fails at once, whatever the peer answers.
	if own != model.RegValid || (a.replied && a.xferDue) {
		w.do(a, system.Move{Kind: system.MvTransfer, H: 0}, false)
	}
}

// ---- timers ----

// timers arms, moves and forgets the deadlines of the worker's side as
// the rows that fired say (the simulator's rule, on the wall clock).
func (w *worker) timers(a *attempt, b *model.Handoff, m system.Move) {
	x := &a.st.W.H[0]
	var touched [model.NumTimers]bool
	for _, f := range w.steps.Firings() {
		for _, act := range f.Actions {
			if t, ok := system.TimerOf(act); ok {
				touched[t] = true
			}
		}
	}
	for t := model.Timer(0); t < model.NumTimers; t++ {
		if t.Side() != w.mine {
			continue
		}
		fired := m.Kind == system.MvTimer && model.Timer(m.Arg) == t
		switch {
		case !x.Armed(t):
			a.overdue[t] = false
			if a.timerOn[t] {
				a.timerV[t]++
				a.timerOn[t] = false
			}
		case !b.Armed(t) || touched[t] || fired || !a.timerOn[t]:
			a.timerV[t]++
			a.timerOn[t] = true
			w.push(&wevent{at: time.Now().Add(w.dur(w.cfg.TimerUS(t))), kind: wTimer, a: a, timer: t, ver: a.timerV[t]})
		}
	}
	// A deadline that passed while its record had no row for it fires as
	// soon as the record takes it.
	for t := model.Timer(0); t < model.NumTimers; t++ {
		if a.overdue[t] && !a.timerOn[t] && x.Armed(t) {
			a.overdue[t] = false
			a.timerV[t]++
			a.timerOn[t] = true
			w.push(&wevent{at: time.Now(), kind: wTimer, a: a, timer: t, ver: a.timerV[t]})
		}
	}
}

// ---- retirement and the ledger ----

// maybeRetire retires an attempt whose side finished and holds nothing,
// with nothing scheduled and no fact on its way to it here: forgotten
// once the coordinator said the attempt ended, kept until then (kept).
// No tombstone stays after: a later frame for it finds no attempt and
// changes nothing.
func (w *worker) maybeRetire(a *attempt) {
	if a.gone || a.kept || a.pending > 0 || len(a.sched) > 0 || a.waiting || !w.chk.Terminal(&a.st, system.RoleOf(w.mine), 0) || a.Hold[w.mine] != a.base {
		return
	}
	for t := range a.timerOn {
		if a.timerOn[t] {
			return
		}
	}
	if x := &a.st.W.H[0]; x.Xfer == model.XferRunning && x.Runner == w.mine {
		return
	}
	w.retirePrefix(a)
	// Its machine stays, not its buffers.
	a.sched, a.heldEv, a.heldFr = nil, nil, nil
	a.kept = true
	w.nkept++
	if a.ended {
		w.forget(a)
	}
}

// open counts the attempts something can still happen to: those not
// kept after they retired, legacy ones too.
func (w *worker) open() int { return len(w.atts) - w.nkept + len(w.latts) }

// unkeep opens a retired attempt's kept machine again: a fact, a cancel,
// a restart of its peer or a planned fault reached it, which it takes as
// the model's machine in its terminal state does. It retires again, or
// holds what the step made it hold, as any open attempt.
func (w *worker) unkeep(a *attempt) {
	if a.kept {
		a.kept = false
		w.nkept--
	}
}

// ended: the coordinator relays nothing more for the attempt. A kept
// machine is forgotten now, an open one as soon as it retires.
func (w *worker) ended(a *attempt) {
	a.ended = true
	if a.kept && !a.held {
		w.forget(a)
	}
}

// forget drops an attempt: no step of it remains on this worker.
func (w *worker) forget(a *attempt) {
	w.unkeep(a)
	a.gone = true
	delete(w.atts, a.name)
}

// retirePrefix returns a retiring destination's cached prefix to the
// worker's anonymous cache and keeps its request's prompt prefix there,
// as the simulator's retire does: blocks any allocation may evict, for a
// request of its group that the decode router sends here while the index
// still advertises the group (another request's blocks of it), reported
// to the routers (reportCache).
func (w *worker) retirePrefix(a *attempt) {
	if w.mine != model.DestinationSide || a.prefixBack {
		return
	}
	a.prefixBack = true
	k := &w.k
	before := k.Cached
	if a.lk > 0 {
		w.sum = w.sum.Minus(a.base)
		a.Hold[w.mine] = model.Holdings{}
		// A kept machine holds nothing of it any more: it retires again
		// holding nothing.
		a.base = model.Holdings{}
		k.Prefix -= a.lk
		k.Cached += a.lk
	}
	if a.group != "" && a.prefix > 0 && a.valid {
		want := model.WholeBlocks(a.prefix, w.cfg.BlockSize()) - a.lk
		if n := min(max(want, 0), k.Free); n > 0 {
			k.Free -= n
			k.Cached += n
		}
	}
	if k.Cached != before {
		w.metrics.set(w.now(), k, w.role, ownMetrics)
		w.reportCache(a)
	}
}

// settled reports whether every attempt still open on the worker gave
// the attempt up holding something, or has reported its terminal
// outcome, with nothing left to happen to it (busy): it holds on for
// ever, and the drain need not wait for it. A side that came to hold
// something only after its outcome (a late fact its finished machine
// took, which started a prefill) never gave up holding it, but is as
// stuck.
func (w *worker) settled() bool {
	if len(w.latts) > 0 {
		return false
	}
	for _, a := range w.atts {
		if a.kept {
			continue
		}
		if a.gaveUp == "" && !w.chk.Terminal(&a.st, system.RoleOf(w.mine), 0) || w.busy(a) != "" {
			return false
		}
	}
	return true
}

func (w *worker) sendLedger() {
	w.send(&Frame{Kind: KLedger, Ledger: w.ledgerNow()})
}

// ledgerNow is the worker's ledgers as they are.
func (w *worker) ledgerNow() *Ledger {
	k := &w.k
	l := &Ledger{Role: sideNames[w.mine], Worker: w.opt.Worker, Gen: w.opt.Gen,
		Free: int64(k.Free), Cached: int64(k.Cached), Kept: int64(k.Kept), Active: int64(k.Active), Pinned: int64(k.Pinned),
		Reserved: int64(k.Reserved), Slots: int64(k.SlotsUsed), Headroom: int64(k.HeadroomUsed), InFlight: int64(k.InFlight),
		Owned: int64(k.Owned), PrefillTokens: int64(k.PrefillTokens), Booked: int64(k.BookedBlocks), Stored: int64(k.StoredBlocks),
		PrefixShortBlocks: w.prefixShort, Open: w.open(), Attempts: w.hosted, Refused: w.refused, RefusedWhy: w.refusedWhy, Findings: w.findings, Lateness: &w.late,
		Series: map[string]PeakMean{}, CPUUS: (processCPU() - w.cpu0).Microseconds()}
	for _, i := range ownMetrics {
		l.Series[cluster.WorkerMetrics[i]] = w.metrics[i].over(w.span[0], w.span[1])
	}
	names := make([]string, 0, len(w.atts))
	for name, a := range w.atts {
		if !a.kept {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names[:min(len(names), 8)] {
		a := w.atts[name]
		var timers []string
		for t := range a.timerOn {
			if a.timerOn[t] {
				timers = append(timers, model.Timer(t).String())
			}
		}
		l.OpenAttempts = append(l.OpenAttempts, fmt.Sprintf("%s: state %s; %s; deadlines %v; scheduled %v; waiting for room %v",
			name, w.chk.Protocol().StateName(system.RoleOf(w.mine), a.st.Role(system.RoleOf(w.mine), 0)), ownHeld(&a.st.W.H[0], w.mine), timers, a.sched, a.waiting))
	}
	l.OpenAttempts = append(l.OpenAttempts, w.legacyOpen()...)
	return l
}

// ownHeld says what a side holds for an attempt, in its own window.
func ownHeld(x *model.Handoff, sd model.Side) string {
	var parts []string
	if sd == model.SourceSide {
		parts = append(parts, "compute "+x.Compute.String(), "blocks "+x.Src.String(), "registration "+x.SrcReg.String())
		for _, r := range []model.Res{model.ResCompute, model.ResSourceLease, model.ResPrefillBooking} {
			parts = append(parts, r.String()+" "+x.Life[r].String())
		}
	} else {
		parts = append(parts, "pages "+x.Dst.String(), "registration "+x.DstReg.String(), fmt.Sprintf("pending %v, running %v", x.Pending, x.Running))
		for _, r := range []model.Res{model.ResDestReservation, model.ResDecodeBooking} {
			parts = append(parts, r.String()+" "+x.Life[r].String())
		}
	}
	parts = append(parts, fmt.Sprintf("in flight %v, transfer %s", x.InFlight[sd], x.Xfer))
	return strings.Join(parts, ", ")
}

// ---- the event queue ----

type wkind uint8

const (
	wMove wkind = iota
	wTimer
	wXfer
	wOffer
	wDeliver
	// wLegacy: an event of a legacy request (legacy.go): ev, the legacy
	// table's event, is taken for l.
	wLegacy
)

type wevent struct {
	at    time.Time
	seq   uint64
	kind  wkind
	a     *attempt
	m     system.Move
	timer model.Timer
	ver   uint32
	l     *lattempt
	ev    string
}

func (e *wevent) due() (time.Time, uint64) { return e.at, e.seq }

// stale reports whether e is a deadline or a transfer's health check
// that was disarmed or re-armed after it was queued: taken, it does
// nothing.
func (e *wevent) stale() bool {
	switch e.kind {
	case wTimer:
		return e.ver != e.a.timerV[e.timer]
	case wXfer:
		return e.ver != e.a.xferV
	}
	return false
}

func (w *worker) push(e *wevent) {
	e.seq = w.q.next()
	w.q.push(e)
}

// runDue takes every event whose time came.
func (w *worker) runDue() {
	now := time.Now()
	for w.q.Len() > 0 && !w.frozen && !w.q.peek().at.After(now) {
		e := w.q.pop()
		if e.kind == wLegacy {
			w.late.Events.add(now.Sub(e.at))
			w.legacyEvent(e)
			continue
		}
		a := e.a
		if a.gone || (a.kept && e.kind != wDeliver) {
			// Forgotten, or retired: what was queued for it before is
			// moot (a kept machine steps only on what reaches it).
			continue
		}
		if a.held {
			a.heldEv = append(a.heldEv, e)
			continue
		}
		w.late.Events.add(now.Sub(e.at))
		switch e.kind {
		case wMove:
			if e.m.Kind == system.MvCompute && (a.job == nil || a.job.Of != e) {
				// The prefill stopped, or its compute was moved earlier
				// (an event of its own).
				continue
			}
			if i := slices.Index(a.sched, e.m); i >= 0 {
				a.sched = slices.Delete(a.sched, i, i+1)
			}
			if a.job != nil && a.job.Of == e {
				// The worker computed the prefill: it is free for the next.
				w.unbook(a)
			}
			if !w.do(a, e.m, false) {
				w.scheduleRefused(a)
				w.maybeRetire(a)
			}
		case wTimer:
			if e.stale() {
				continue
			}
			a.timerOn[e.timer] = false
			if !w.do(a, system.Move{Kind: system.MvTimer, H: 0, Arg: int8(e.timer)}, false) {
				a.overdue[e.timer] = true
				w.maybeRetire(a)
			}
		case wXfer:
			if e.stale() {
				continue
			}
			a.xferDue = true
			w.maybeEndTransfer(a)
			if x := &a.st.W.H[0]; x.Xfer == model.XferRunning && x.Runner == w.mine {
				// Hung, or the peer has not answered (its process may
				// have died with the probe): ask again a health check
				// later. A hung transfer fails once a registration it
				// uses is no longer valid.
				if x.Hung {
					a.replied = false
				}
				w.send(&Frame{Kind: KProbe, Attempt: a.name, To: sideNames[w.mine.Other()], PeerGen: max(a.peerGen, 0)})
				w.push(&wevent{at: time.Now().Add(w.dur(w.cfg.HealthCheckUS)), kind: wXfer, a: a, ver: a.xferV})
			}
		case wOffer:
			w.schedule(a)
			w.maybeRetire(a)
		case wDeliver:
			w.deliver(a, e.m)
		}
	}
}
