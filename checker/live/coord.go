package live

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// Options are a live run's inputs.
type Options struct {
	Config   *cluster.Config
	Workload cluster.Source
	// Rewind, when set, gives the workload again from its start, for a
	// run again at a larger time scale (see Run).
	Rewind func() (cluster.Source, error)
	// Faults is the plan, the simulator's: marks on requests strike at
	// their phase; a restart of a worker strikes at its time (scaled), a
	// restart "after" a fact strikes when the worker logs it.
	Faults []cluster.Fault
	// Proxy, when Seed is set, also drops, duplicates and delays the facts
	// the workers send each other at random.
	Proxy ProxyFaults
	// Scale: a configured duration lasts Scale times as long on the wall
	// clock (0.001: a 30 s lease lasts 30 ms); arrivals too.
	Scale float64
	// Dir receives the run's logs (one per process) and configuration.
	Dir   string
	Spawn Spawner
	// SpecFile, when set, is a spec the workers load instead of the
	// generated machines (they run it with the table interpreter).
	SpecFile string
	Protocol *system.Protocol
	// Errors receives what the coordinator refuses (nil: stderr).
	Errors io.Writer
	// DrainTimeout bounds the wait for the workers' ledgers once every
	// attempt finished (0: 10 s).
	DrainTimeout time.Duration
	// Listening, when set, is told the coordinator's address once it
	// listens (tests connect to it).
	Listening func(addr string)
	// UntilUS, when positive, ends the run with handoffs unresolved, as
	// the simulator's Options.UntilUS does: that long after the first
	// arrival (configured time, scaled) no later arrival, timed restart
	// or client cancel of the workload happens, and every attempt whose
	// handoff is unresolved is cut by the client cancel its lifecycle
	// answers (Teardown). The run then ends as any other: every worker's
	// ledger is read and whatever is still held is a leak.
	UntilUS int64
	// StallAsk, when positive, is how long a silence lasts before the
	// coordinator asks whether the unfinished attempts are stuck (0: the
	// bound it takes a stall after, stall.go). Tests ask often, to hold
	// the workers' answers to what they still have to do; the bound of
	// an inconclusive end stays the run's own.
	StallAsk time.Duration
}

// ProxyFaults are the proxy's random faults: of the facts it relays,
// Rate of them are hit, each by one of drop, duplicate or delay (which
// reorders), drawn with the seed.
type ProxyFaults struct {
	Seed uint64
	Rate float64
	// MaxDelayUS bounds a delay, in configured microseconds (scaled).
	MaxDelayUS int64
}

// Spawner starts and kills worker processes.
type Spawner interface {
	// Start starts worker w's process of generation gen, which dials addr.
	Start(ctx context.Context, a WorkerArgs) (Proc, error)
}

// WorkerArgs is what a worker process is started with.
type WorkerArgs struct {
	Coordinator string
	Worker      int
	Gen         int64
	ConfigFile  string
	SpecFile    string
	LogFile     string
	Scale       float64
	Epoch       time.Time
}

// Proc is a started worker process.
type Proc interface {
	// Kill kills it at once (SIGKILL for a process).
	Kill() error
	// Wait waits for it to end.
	Wait() error
}

// coord is the coordinator: the frontend, both routers and the proxy.
type coord struct {
	opt Options
	cfg *cluster.Config
	*stepper
	ctx   context.Context
	epoch time.Time
	ln    net.Listener
	in    chan inbound
	done  chan struct{} // closed when the run ends: readers stop
	ws    []*cworker
	wk    []model.Worker // the routers' ledgers of each worker
	// sums is what the attempts hold on each worker, as the routers
	// see them: what a window shows held outside its attempt.
	sums   []model.Holdings
	atts   map[string]*catt
	order  []*catt
	q      queue[*cevent]
	rng    *rand.Rand // the routers\' draws
	prng   *rand.Rand // the proxy\'s
	nextP  int
	nextD  int
	log    *obslog.Writer
	logF   *os.File
	header *obslog.Header
	files  []string
	errs   io.Writer

	arrived, finished int
	moreArrivals      bool
	// torn is set once the run tore its attempts down (Options.UntilUS).
	torn       bool
	next       *cluster.Request
	marks      map[int]*marks
	timed      []cluster.Fault // restarts of workers at their times
	rep        Report
	lat        []float64
	start, end time.Time
	draining   bool
	forced     bool
	// settled: the workers were told nothing more is queued for them
	// (drain "settled"), once the drain found the coordinator's queue
	// empty.
	settled    bool
	drainStart time.Time
	ledgers    int
	// lastRoute is when each stage (prefill, decode) was last routed.
	lastRoute [2]time.Time
	late      Lateness
	wbuf      []byte // sendTo's buffer
	// booked follows the decode router's booking on each worker
	// (decode_booked_blocks); strands is the finished attempts' stranded
	// source KV.
	booked  []workerGauges
	strands []strand
	// cpu0 is the coordinator's process CPU time at the first arrival,
	// cpu what it used until the last attempt's end.
	cpu0, cpu time.Duration
	// latts, in a run of policy disabled (legacy.go), holds the legacy
	// requests in flight; atts and order stay empty.
	latts map[string]*lcatt
	// index is the KV index as the workers publish it (their KKV frames,
	// and the worker_restarted the coordinator declares), which the
	// kv-aware decode router reads; cache is each worker's anonymous
	// cache as it last reported it (cacheOf: less the hits routed there
	// it had not taken then). Both are as stale as the frames in flight:
	// a real KV router's indexer hears the workers' events as late as
	// they reach it.
	index *cluster.KVIndex
	cache []model.Blocks
	// hitBlocks is the prefix blocks of the hits routed to each worker's
	// generation, and taken what it last said it took of them: the hits
	// between are routed but not yet taken from the cache it reported.
	hitBlocks, taken []int64
	// qt is the question whether the unfinished attempts are stuck
	// (stall.go).
	qt quiet
}

type cworker struct {
	w      int
	gen    int64
	conn   *wconn
	proc   Proc
	ledger *Ledger
	logf   string
	// pending holds the frames for a generation that is starting: they
	// go out once it says hello.
	pending  []*Frame
	starting bool
	// stopping: the coordinator asked the process to stop (KStop) for a
	// restart at a time, and kills it when it answers.
	stopping bool
	// routed counts the routes sent to the current generation, which
	// started (its restart declared) at started.
	routed  int
	started time.Time
	// spare is the next generation's process, started ahead and idle
	// until a restart makes it the worker (spareConn once it said
	// hello): in the model a restarted worker is back at once, and a
	// process that starts only at the restart would leave the requests
	// routed to it meanwhile waiting for as long as starting takes.
	spare     Proc
	spareConn *wconn
}

type wconn struct {
	c   net.Conn
	out *bufio.Writer
	w   int // -1 until its hello
	bad bool
}

type inbound struct {
	c   *wconn
	f   Frame
	err error // the connection ended
	// raw is a frame the proxy relays, as it came (length included): it
	// goes on as it is, not encoded again.
	raw []byte
}

// catt is an attempt as the frontend and routers know it.
type catt struct {
	name string
	req  cluster.Request
	// Window is its world (Cfg) onto the routers' ledgers of its two
	// workers, the one window every driver shows counters through.
	cluster.Window
	st      system.State
	p, d    int
	pGen    int64
	dGen    int64
	arrive  time.Time
	done    bool
	outcome [2]model.Outcome
	// outAt is when each side's outcome was made (its worker's send
	// time, microseconds from the epoch; a restart's: its declaration):
	// the peer's obligation to return what it holds runs from it.
	outAt  [2]int64
	m      marks
	strand strand // what its workers said of its stranded source KV
	// A router's move waiting for the attempt's workers to be held
	// (KHold): the moves, which side's answer is still awaited, and the
	// generation each held worker had (-1: none held).
	acts    []ckind
	holding bool
	wait    [2]bool
	heldGen [2]int64
	// cut: the teardown cancels it (Options.UntilUS).
	cut bool
	// hit is the prefix hit the decode router found on its worker.
	hit model.Tokens
}

// marks are the planned faults of a request that the coordinator makes
// strike (the proxy's loss and duplicate, the client's cancel) or hands
// to the workers.
type marks struct {
	cluster.Marks
	worker []Frame // KMark frames, with the side they go to in To
}

// maxScaleTries bounds how often Run runs again at twice the time scale.
const maxScaleTries = 4

// Run runs a live run to its end and reports it. A run whose processes
// fell further behind the clock than its deadlines absorb (the report's
// TooLate) is run again from the start at twice the time scale, when
// opt.Rewind can give the workload again, up to maxScaleTries runs; the
// report is the last run's, with the scales that were too late.
func Run(ctx context.Context, opt Options) (*Report, error) {
	var tried []float64
	for try := 1; ; try++ {
		rep, err := runOnce(ctx, opt)
		if err != nil || rep.Interrupted || !rep.TooLate || opt.Rewind == nil || try == maxScaleTries || ctx.Err() != nil {
			if rep != nil {
				rep.ScalesTried = tried
			}
			return rep, err
		}
		errs := opt.Errors
		if errs == nil {
			errs = os.Stderr
		}
		fmt.Fprintf(errs, "live: %s; running again at time scale %g\n", rep.LateWhy, 2*opt.Scale)
		tried = append(tried, opt.Scale)
		if opt.Workload, err = opt.Rewind(); err != nil {
			return nil, err
		}
		opt.Scale *= 2
	}
}

func runOnce(ctx context.Context, opt Options) (*Report, error) {
	c, err := newCoord(ctx, opt)
	if c != nil {
		// What started is stopped, whatever happens next.
		defer c.shutdown()
	}
	if err != nil {
		return nil, err
	}
	if err := c.run(); err != nil {
		return nil, err
	}
	return &c.rep, nil
}

func newCoord(ctx context.Context, opt Options) (*coord, error) {
	if opt.Scale <= 0 {
		return nil, fmt.Errorf("live: time scale %g, want more than 0", opt.Scale)
	}
	legacy := opt.Config.Policy == cluster.Disabled
	if opt.Config.Aggregated {
		// Aggregated serving runs on the simulator's clock only: live
		// processes run disaggregated.
		return nil, fmt.Errorf("live: policy %q runs only in simulate (aggregated serving has no live processes); a live run needs source-first, destination-first or %s", opt.Config.PolicyName(), cluster.Disabled)
	}
	if opt.Config.MaxRetries > 0 {
		return nil, fmt.Errorf("live: max_retries %d: a live run makes one attempt per request", opt.Config.MaxRetries)
	}
	var st *stepper
	var err error
	if legacy {
		err = legacyRefuse(&opt)
	} else {
		st, err = newStepper(opt.Protocol, opt.Config)
	}
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opt.Dir, 0o755); err != nil {
		return nil, err
	}
	c := &coord{opt: opt, cfg: opt.Config, stepper: st, ctx: ctx, in: make(chan inbound, 4096), done: make(chan struct{}),
		atts: map[string]*catt{}, marks: map[int]*marks{}, errs: opt.Errors,
		rng: rand.New(rand.NewPCG(opt.Config.Seed, 0x6c697665)), prng: rand.New(rand.NewPCG(opt.Proxy.Seed, 0x70726f7879))}
	if c.errs == nil {
		c.errs = os.Stderr
	}
	if legacy {
		c.latts = map[string]*lcatt{}
	}
	n := c.cfg.NumWorkers()
	c.wk = make([]model.Worker, n)
	c.sums = make([]model.Holdings, n)
	c.booked = make([]workerGauges, n)
	c.index = cluster.NewKVIndex(n)
	c.cache = make([]model.Blocks, n)
	c.hitBlocks, c.taken = make([]int64, n), make([]int64, n)
	if err := c.plan(); err != nil {
		return nil, err
	}
	cfgFile := filepath.Join(opt.Dir, "config.json")
	if err := os.WriteFile(cfgFile, c.cfg.JSON(), 0o644); err != nil {
		return nil, err
	}
	// One log per process, each with the run's header: conform reads
	// them together.
	c.header = c.cfg.LogHeader(obslog.All)
	for i, p := range c.header.Processes {
		name := filepath.Join(opt.Dir, p.Name+".jsonl")
		f, err := os.Create(name)
		if err != nil {
			return nil, err
		}
		hw, err := obslog.NewWriter(f, c.header)
		if err == nil {
			err = hw.Flush()
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		c.files = append(c.files, name)
		if i == 0 {
			c.logF, c.log = f, hw
		} else {
			f.Close()
		}
	}
	c.ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	if opt.Listening != nil {
		opt.Listening(c.ln.Addr().String())
	}
	c.epoch = time.Now()
	c.ws = make([]*cworker, n)
	for w := range c.ws {
		c.ws[w] = &cworker{w: w, logf: c.files[w+1]}
	}
	go c.accept()
	for w := range c.ws {
		if err := c.spawn(w); err != nil {
			return c, err
		}
		if err := c.spawnSpare(w); err != nil {
			return c, err
		}
	}
	c.rep.Config = cfgFile
	c.rep.Logs = c.files
	return c, nil
}

// plan turns the fault plan into marks and timed restarts.
func (c *coord) plan() error {
	for i := range c.opt.Faults {
		f := &c.opt.Faults[i]
		k, err := f.FaultKind()
		if err != nil {
			return err
		}
		if f.WorkerRestart() {
			if f.Worker >= c.cfg.NumWorkers() {
				return fmt.Errorf("%s:%d: %w: worker %d, the configuration has workers 0 to %d", f.File, f.Line, cluster.ErrInput, f.Worker, c.cfg.NumWorkers()-1)
			}
			c.timed = append(c.timed, *f)
			continue
		}
		if f.Request < 0 {
			continue
		}
		if !strikes(k) {
			return fmt.Errorf("%s:%d: %w: a live run strikes no planned %s", f.File, f.Line, cluster.ErrInput, k)
		}
		if err := cluster.CheckPhase(f); err != nil {
			// Aimed at a phase no worker logs: refused as the
			// simulator refuses it.
			return err
		}
		m := c.marks[f.Request]
		if m == nil {
			m = &marks{}
			c.marks[f.Request] = m
		}
		if err := m.Mark(f); err != nil {
			return err
		}
	}
	for _, m := range c.marks {
		m.worker = workerMarks(&m.Marks)
	}
	return nil
}

// workerMarks are the frames that hand a request's workers the marks they
// strike themselves: every mark but the ones the coordinator strikes (a
// loss or a duplicate by its proxy, the client's cancel by its frontend:
// FaultKinds' Frontend), a mark of a kind whose move names a side to that side, one
// that names none (a hang, a transfer failure: either side may run the
// transfer) to both, and a restart's phase to the side whose worker stops
// there.
func workerMarks(m *cluster.Marks) []Frame {
	var fs []Frame
	mark := func(fault string, sd model.Side) {
		fs = append(fs, Frame{Kind: KMark, Fault: fault, To: sideNames[sd]})
	}
	for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
		m.Each(func(k system.Fault, on model.Side, either bool) {
			if !system.FaultKinds[k].Frontend && (either || on == sd) {
				mark(k.String(), sd)
			}
		})
		if m.RestartAfter[sd] != "" {
			mark(m.RestartAfter[sd], sd)
		}
	}
	// A fault aimed at a phase goes to the side that logs the fact it
	// waits for, a cancel too: that worker tells the coordinator then.
	// One aimed at the other side's fact (after_side) names the side it
	// strikes: the logging worker tells the coordinator, which marks
	// that side's worker before it relays anything the step sent.
	m.PhaseMarksBy(func(k system.Fault, sd, by model.Side, after string) {
		f := Frame{Kind: KMark, Fault: k.String(), Msg: after, To: sideNames[by]}
		if by != sd {
			f.Side = sideNames[sd]
		}
		fs = append(fs, f)
	})
	return fs
}

// strikes reports whether a live run strikes planned faults of kind k
// aimed at a request, by the fault table's rules: the coordinator those
// of its proxy (in place of a fact it relays) and of its frontend
// (Frontend: cancel), a worker those whose move names its side (where
// its window first offers them) and those of the transfer it runs
// (Runner: hang; in place of the transfer's end: transfer_failure), and
// a worker's at a time (restart). A kind struck by no rule here is
// refused with the plan's line, not left unstruck.
func strikes(k system.Fault) bool {
	kind := &system.FaultKinds[k]
	switch {
	case cluster.AtTime(k):
		return true
	case kind.Instead != 0:
		// In place of a fact the coordinator relays, or of the end of a
		// transfer a worker runs.
		return kind.Instead == system.MvDeliver || kind.Instead == system.MvTransfer
	case kind.Offered:
		return kind.Frontend || kind.Runner || cluster.NamesSide(k)
	}
	return false
}

func (c *coord) fromStart(us int64) time.Time { return c.start.Add(c.dur(us)) }

func (c *coord) dur(us int64) time.Duration { return time.Duration(float64(us) * c.opt.Scale * 1000) }

func (c *coord) now() int64 { return time.Since(c.epoch).Microseconds() }

func (c *coord) accept() {
	for {
		conn, err := c.ln.Accept()
		if err != nil {
			return
		}
		wc := &wconn{c: conn, out: bufio.NewWriterSize(conn, 64<<10), w: -1}
		go c.read(wc)
	}
}

// read forwards a connection's frames; a frame it cannot read closes the
// connection, and nothing else is lost.
func (c *coord) read(wc *wconn) {
	r := bufio.NewReaderSize(wc.c, 64<<10)
	var buf []byte
	for {
		var f Frame
		var err error
		f, buf, err = ReadFrame(r, buf)
		ib := inbound{c: wc, f: f, err: err}
		if err == nil && (f.Kind == KFact || f.Kind == KProbe || f.Kind == KProbeReply) {
			ib.raw = binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(buf)), uint32(len(buf)))
			ib.raw = append(ib.raw, buf...)
		}
		select {
		case c.in <- ib:
		case <-c.done:
			return
		}
		if err != nil {
			return
		}
	}
}

// spawnSpare starts worker w's next generation, which waits idle.
func (c *coord) spawnSpare(w int) error {
	cw := c.ws[w]
	p, err := c.opt.Spawn.Start(c.ctx, WorkerArgs{Coordinator: c.ln.Addr().String(), Worker: w, Gen: cw.gen + 1,
		ConfigFile: filepath.Join(c.opt.Dir, "config.json"), SpecFile: c.opt.SpecFile, LogFile: cw.logf, Scale: c.opt.Scale, Epoch: c.epoch})
	if err != nil {
		return fmt.Errorf("live: starting worker %d: %w", w, err)
	}
	cw.spare = p
	return nil
}

func (c *coord) spawn(w int) error {
	cw := c.ws[w]
	p, err := c.opt.Spawn.Start(c.ctx, WorkerArgs{Coordinator: c.ln.Addr().String(), Worker: w, Gen: cw.gen,
		ConfigFile: filepath.Join(c.opt.Dir, "config.json"), SpecFile: c.opt.SpecFile, LogFile: cw.logf, Scale: c.opt.Scale, Epoch: c.epoch})
	if err != nil {
		return fmt.Errorf("live: starting worker %d: %w", w, err)
	}
	cw.proc = p
	return nil
}

func (c *coord) shutdown() {
	close(c.done)
	if c.ln != nil {
		c.ln.Close()
	}
	for _, cw := range c.ws {
		if cw == nil {
			continue
		}
		if cw.conn != nil {
			cw.conn.c.Close()
		}
		if cw.spareConn != nil {
			cw.spareConn.c.Close()
		}
	}
	// Workers end when their connection does; one that does not is
	// killed, so that no process outlives the run.
	done := make(chan struct{})
	go func() {
		for _, cw := range c.ws {
			if cw != nil && cw.proc != nil {
				cw.proc.Wait()
			}
			if cw != nil && cw.spare != nil {
				cw.spare.Wait()
			}
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		for _, cw := range c.ws {
			if cw != nil && cw.proc != nil {
				cw.proc.Kill()
			}
			if cw != nil && cw.spare != nil {
				cw.spare.Kill()
			}
		}
		<-done
	}
	if c.logF != nil {
		c.log.Flush()
		c.logF.Close()
	}
}

// ---- the loop ----

func (c *coord) run() error {
	if err := c.readArrival(); err != nil {
		return err
	}
	// Wait for every worker's hello before the first request.
	deadline := time.After(30 * time.Second)
	for c.up() < len(c.ws) {
		select {
		case ib := <-c.in:
			c.inbound(ib)
		case <-deadline:
			return fmt.Errorf("live: %d of %d workers did not connect within 30 s", len(c.ws)-c.up(), len(c.ws))
		case <-c.ctx.Done():
			c.interrupted()
			return nil
		}
	}
	// Arrivals and timed restarts count from the first arrival; the logs'
	// t_us from the epoch every process was given.
	c.start = time.Now()
	c.cpu0 = processCPU()
	c.qt.active = c.start
	c.scheduleArrival()
	for _, f := range c.timed {
		c.push(&cevent{at: c.fromStart(f.AtUS), kind: cRestart, w: f.Worker})
	}
	if c.opt.UntilUS > 0 {
		c.push(&cevent{at: c.fromStart(c.opt.UntilUS), kind: cTeardown})
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if c.q.Len() > 0 {
			timer.Reset(time.Until(c.q.peek().at))
		} else {
			// Nothing queued: wake to ask whether the attempts are stuck.
			wake := 100 * time.Millisecond
			if c.opt.StallAsk > 0 {
				wake = min(wake, c.opt.StallAsk)
			}
			timer.Reset(wake)
		}
		select {
		case ib := <-c.in:
			c.inbound(ib)
		drain:
			for i := 0; i < 512; i++ {
				select {
				case ib := <-c.in:
					c.inbound(ib)
				default:
					break drain
				}
			}
		case <-timer.C:
		case <-c.ctx.Done():
			c.interrupted()
			return nil
		}
		if err := c.runDue(); err != nil {
			return err
		}
		c.flush()
		c.checkStall()
		if !c.moreArrivals && c.finished == c.arrived && !c.draining {
			c.end = time.Now()
			c.cpu = processCPU() - c.cpu0
			c.draining = true
			c.drainStart = time.Now()
			for _, cw := range c.ws {
				c.sendTo(cw.w, c.drain(""))
			}
			c.flush()
		}
		if c.draining {
			if c.ledgers == len(c.ws) {
				c.report()
				return nil
			}
			if !c.settled && c.q.Len() == 0 {
				// Nothing is queued for any worker: one whose open
				// attempts all gave up holding something, with nothing
				// left to happen to them, sends its ledger now rather
				// than at the drain's timeout (a stuck side holds on for
				// ever).
				c.settled = true
				for _, cw := range c.ws {
					if cw.ledger == nil {
						c.sendTo(cw.w, c.drain("settled"))
					}
				}
				c.flush()
			}
			limit := c.opt.DrainTimeout
			if limit == 0 {
				limit = 10 * time.Second
			}
			if time.Since(c.drainStart) > limit {
				if !c.forced {
					// Ask once more, for the ledgers as they are.
					c.forced = true
					c.drainStart = time.Now()
					for _, cw := range c.ws {
						if cw.ledger == nil {
							c.sendTo(cw.w, c.drain("now"))
						}
					}
					c.flush()
					continue
				}
				c.report()
				return nil
			}
		}
	}
}

// interrupted stops the run: each worker is asked for its ledgers as
// they are, for a second at most, and the report says what was held.
func (c *coord) interrupted() {
	c.rep.Interrupted = true
	if c.end.IsZero() {
		c.end = time.Now()
	}
	for _, cw := range c.ws {
		if cw.ledger == nil {
			c.sendTo(cw.w, c.drain("now"))
		}
	}
	c.flush()
	deadline := time.After(time.Second)
	for c.ledgers < len(c.ws) {
		select {
		case ib := <-c.in:
			if ib.err == nil && ib.f.Kind == KLedger {
				c.inbound(ib)
			}
		case <-deadline:
			c.report()
			return
		}
	}
	c.report()
}

// drain asks a worker for its ledgers ("now": as they are), with the
// run's span, over which it averages its metrics.
func (c *coord) drain(now string) *Frame {
	f := &Frame{Kind: KDrain, Outcome: now}
	if !c.start.IsZero() {
		f.FromUS, f.ToUS = c.start.Sub(c.epoch).Microseconds(), c.end.Sub(c.epoch).Microseconds()
	}
	return f
}

// connected makes wc the connection of cw's current generation, and
// sends what waited for it.
func (c *coord) connected(cw *cworker, wc *wconn) {
	cw.conn = wc
	cw.starting = false
	for _, g := range cw.pending {
		g.SentUS = max(c.now(), 1)
		if b, err := AppendFrame(nil, g); err == nil {
			wc.out.Write(b)
		}
	}
	cw.pending = nil
}

func (c *coord) up() int {
	n := 0
	for _, cw := range c.ws {
		if cw.conn != nil && (cw.spare == nil || cw.spareConn != nil) {
			n++
		}
	}
	return n
}

func (c *coord) flush() {
	for _, cw := range c.ws {
		if cw.conn != nil && !cw.conn.bad {
			if err := cw.conn.out.Flush(); err != nil {
				cw.conn.bad = true
			}
		}
	}
	c.log.Flush()
}

// sendRaw sends a relayed frame f as it came (raw); to a process that is
// starting, it waits as any frame does.
func (c *coord) sendRaw(w int, f *Frame, raw []byte) bool {
	cw := c.ws[w]
	if raw == nil || cw.starting {
		return c.sendTo(w, f)
	}
	if cw.conn == nil || cw.conn.bad {
		return false
	}
	cw.conn.out.Write(raw)
	return true
}

func (c *coord) sendTo(w int, f *Frame) bool {
	cw := c.ws[w]
	if f.SentUS == 0 {
		f.SentUS = max(c.now(), 1)
	}
	b, err := AppendFrame(c.wbuf[:0], f)
	if err != nil {
		fmt.Fprintf(c.errs, "coordinator: %v\n", err)
		return false
	}
	c.wbuf = b
	if cw.starting {
		// Sent once the process is up, stamped then: a process's start
		// is not lateness.
		g := *f
		cw.pending = append(cw.pending, &g)
		return true
	}
	if cw.conn == nil || cw.conn.bad {
		return false // the worker is down: the frame is lost with it
	}
	cw.conn.out.Write(b)
	return true
}

func (c *coord) inbound(ib inbound) {
	wc := ib.c
	if ib.err != nil {
		if errors.Is(ib.err, ErrFrame) {
			fmt.Fprintf(c.errs, "coordinator: closing a connection of worker %d: %v\n", wc.w, ib.err)
		}
		wc.c.Close()
		if wc.w >= 0 && c.ws[wc.w].spareConn == wc {
			// The spare died idle: a restart starts a process then.
			cw := c.ws[wc.w]
			cw.spare.Kill()
			cw.spare.Wait()
			cw.spare, cw.spareConn = nil, nil
			return
		}
		if wc.w >= 0 && c.ws[wc.w].conn == wc {
			c.ws[wc.w].conn = nil
			if !c.draining && c.ctx.Err() == nil && !errors.Is(ib.err, ErrFrame) {
				// The process died on its own: it restarts as a new
				// generation, as a killed one does.
				c.restart(wc.w)
			}
		}
		return
	}
	f := &ib.f
	if f.Kind == KQuietReply {
		if wc.w >= 0 && f.Gen == c.ws[wc.w].gen {
			c.quietReply(wc.w, f)
		}
		return
	}
	c.activity()
	if f.SentUS > 0 {
		c.late.Frames.add(time.Duration(c.now()-f.SentUS) * time.Microsecond)
	}
	if wc.w < 0 {
		if f.Kind == KHello && f.Index >= 0 && f.Index < len(c.ws) && f.Gen == c.ws[f.Index].gen+1 && c.ws[f.Index].spare != nil && c.ws[f.Index].spareConn == nil {
			// The spare: idle until a restart makes it the worker.
			wc.w = f.Index
			c.ws[f.Index].spareConn = wc
			return
		}
		if f.Kind != KHello || f.Index < 0 || f.Index >= len(c.ws) || f.Gen != c.ws[f.Index].gen {
			fmt.Fprintf(c.errs, "coordinator: closing a connection that did not start with the hello of a current worker\n")
			wc.c.Close()
			return
		}
		wc.w = f.Index
		c.connected(c.ws[f.Index], wc)
		return
	}
	if f.Gen != c.ws[wc.w].gen {
		return // an old generation's frame changes nothing
	}
	if c.latts != nil {
		// A legacy run's facts and outcomes (legacy.go); its ledgers as
		// any run's.
		switch f.Kind {
		case KFact:
			c.legacyRelay(wc.w, f, ib.raw)
			return
		case KOutcome:
			c.legacyOutcome(wc.w, f)
			return
		}
	}
	switch f.Kind {
	case KFact, KProbe, KProbeReply:
		c.relay(wc.w, f, ib.raw)
	case KAnnounce:
		if a := c.atts[f.Attempt]; a != nil && a.p == wc.w && !a.done {
			a.st.W.H[0].Announced = true
			c.laterRouteDecode(a)
		}
	case KOutcome:
		c.outcome(wc.w, f)
	case KTrigger:
		if k, ok := system.ParseFault(f.Fault); ok && system.FaultKinds[k].Frontend {
			c.phaseFrontend(f, k)
			break
		}
		if f.Fault != "" {
			c.phaseOther(f)
			break
		}
		c.rep.FaultsStruck++
		c.restart(wc.w)
	case KStopped:
		if c.ws[wc.w].stopping {
			c.restart(wc.w)
		}
	case KHeld:
		if a := c.atts[f.Attempt]; a != nil && a.holding {
			for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
				if a.wait[sd] && a.worker(sd) == wc.w {
					a.wait[sd] = false
				}
			}
			c.maybeAct(a)
		}
	case KStruck:
		c.rep.FaultsStruck++
	case KKV:
		c.kvEvent(wc.w, f)
	case KLedger:
		if c.ws[wc.w].ledger == nil {
			c.ledgers++
		}
		c.ws[wc.w].ledger = f.Ledger
	}
}

// ---- the frontend and routers ----

func (c *coord) readArrival() error {
	r, err := c.opt.Workload.Next()
	if err == io.EOF {
		c.moreArrivals = false
		c.next = nil
		return nil
	}
	if err != nil {
		return err
	}
	c.moreArrivals = true
	c.next = &r
	return nil
}

func (c *coord) scheduleArrival() {
	if c.next != nil {
		c.push(&cevent{at: c.fromStart(c.next.ArrivalUS), kind: cArrive})
	}
}

// project shows the routers' ledgers of the attempt's workers in its
// window (cluster.Window), and what the other attempts hold there; the
// decode worker, until routed, is the window's own.
func (c *coord) project(a *catt) {
	a.Project(&a.st, 0, c.wk[a.p], c.sums[a.p])
	if a.d >= 0 {
		a.Project(&a.st, 1, c.wk[a.d], c.sums[a.d])
	} else {
		// The world configuration is shared (stepper.world): another
		// attempt's decode worker may be shown there.
		a.Alone(&a.st, 1, a.st.W.W[1])
	}
}

// writeBack stores the attempt's window into the routers' ledgers after
// a step (cluster.Window).
func (c *coord) writeBack(a *catt) {
	hs := a.Held(&a.st)
	now := c.now()
	c.wk[a.p] = a.st.W.W[0]
	c.sums[a.p] = a.WriteBack(0, c.sums[a.p], &hs)
	c.booked[a.p].set(now, &c.wk[a.p], c.cfg.Role(a.p), routerMetrics)
	if a.d >= 0 {
		c.wk[a.d] = a.st.W.W[1]
		c.sums[a.d] = a.WriteBack(1, c.sums[a.d], &hs)
		c.booked[a.d].set(now, &c.wk[a.d], c.cfg.Role(a.d), routerMetrics)
	} else {
		a.Hold[1] = hs[1]
	}
}

// step takes a router's move in the attempt's window and logs it.
func (c *coord) step(a *catt, m system.Move, force bool) bool {
	c.project(a)
	before := a.st
	if !c.take(&a.st, m, force) {
		return false
	}
	c.writeBack(a)
	ls := c.observed(&before, &a.st, m, obslog.ByRouter)
	for i := range ls {
		l := &ls[i]
		f := obslog.FactOf(l, 0, 0, a.name, c.now())
		if l.Kind == obslog.Routed {
			if l.Stage == model.SourceSide {
				f.To, f.PromptTokens = a.p+1, int64(a.req.PromptTokens)
			} else {
				f.To, f.PrefixHitTokens = a.d+1, int64(a.hit)
			}
		}
		c.log.Write(&f)
	}
	return true
}

func (c *coord) arrive() error {
	r := *c.next
	if err := c.readArrival(); err != nil {
		return err
	}
	c.scheduleArrival()
	c.arrived++
	wc, err := c.world(r.PromptTokens, 0)
	if err != nil {
		return fmt.Errorf("%w: request %d: %v", cluster.ErrInput, r.Index, err)
	}
	a := &catt{name: cluster.AttemptName(&r, 0), req: r, Window: cluster.Window{Cfg: wc}, p: -1, d: -1, arrive: time.Now()}
	if m := c.marks[r.Index]; m != nil {
		a.m = *m
		delete(c.marks, r.Index)
	}
	a.st = c.steps.Initial(wc)
	c.atts[a.name] = a
	c.order = append(c.order, a)
	if r.PrefixGroup != "" && r.PrefixTokens > 0 {
		c.rep.PrefixRequests++
	}
	a.p = cluster.Choose(c.cfg.PrefillRouter, 0, c.cfg.Prefill.Workers, &c.nextP, c.rng, c.prefillLoad, nil)
	a.pGen = c.ws[a.p].gen
	c.step(a, system.Move{Kind: system.MvRoutePrefill, H: 0, Arg: 0}, false)
	// The marks go first: the worker keeps them until the route comes,
	// so that they strike where the world first offers them, however
	// late the worker reads the frames after the route.
	c.sendMarks(a, model.SourceSide)
	c.sendTo(a.p, &Frame{Kind: KRoute, Attempt: a.name, Stage: "prefill", Request: c.info(a), Group: r.PrefixGroup, PrefixTokens: int64(r.PrefixTokens)})
	c.routedTo(a.p, model.SourceSide)
	if r.CancelUS >= 0 {
		c.push(&cevent{at: c.fromStart(r.CancelUS), kind: cCancel, a: a})
	}
	for k := range system.NumFaults {
		if system.FaultKinds[k].Frontend && a.m.Spend(k, 0) {
			c.rep.FaultsStruck++
			c.frontend(a, k)
		}
	}
	c.laterRouteDecode(a)
	return nil
}

// laterRouteDecode routes decode a network latency from now, as the
// simulator does: the frontend's hop to the decode router.
func (c *coord) laterRouteDecode(a *catt) {
	c.push(&cevent{at: time.Now().Add(c.dur(c.cfg.LatencyUS)), kind: cRouteDecode, a: a})
}

// kvEvent applies a KV event worker w published (KKV) to the index, and
// takes its report of the cache. An event the index cannot take (a
// Removed of more than the worker advertised) is the run's bookkeeping
// gone wrong: a finding, named as the invariant the simulator judges it.
func (c *coord) kvEvent(w int, f *Frame) {
	c.taken[w] = f.HitBlocks
	c.cache[w] = model.Blocks(f.Cached)
	kind := obslog.Stored
	switch f.Msg {
	case "stored":
	case "removed":
		kind = obslog.Removed
	default:
		return // the cache alone
	}
	lf := obslog.Fact{Kind: kind, Proc: w + 1, Attempt: f.Attempt, Blocks: f.Blocks}
	if err := c.index.Apply(&lf, f.Group); err != nil {
		c.rep.Findings = append(c.rep.Findings, fmt.Sprintf("%s: %v", model.NameIndexMatchesCache, err))
	}
}

// cacheOf is worker w's anonymous cache as the router sees it: as the
// worker last reported it, less the hits routed there that it had not
// taken when it did.
func (c *coord) cacheOf(w int) model.Blocks {
	return c.cache[w] - model.Blocks(c.hitBlocks[w]-c.taken[w])
}

func (c *coord) info(a *catt) *RequestInfo {
	return &RequestInfo{Index: a.req.Index, PromptTokens: int64(a.req.PromptTokens), OutputTokens: int64(a.req.OutputTokens)}
}

func (c *coord) sendMarks(a *catt, sd model.Side) {
	for _, m := range a.m.worker {
		if m.To == sideNames[sd] {
			f := m
			f.Attempt, f.To = a.name, ""
			c.sendTo(a.worker(sd), &f)
		}
	}
}

func (a *catt) worker(sd model.Side) int {
	if sd == model.SourceSide {
		return a.p
	}
	return a.d
}

func (c *coord) prefillLoad(w int) int64 {
	k := &c.wk[w]
	return int64(k.PrefillTokens)<<16 + int64(k.Owned)
}

func (c *coord) decodeLoad(w int) int64 { return int64(c.wk[w].BookedBlocks) }

// routeDecode routes the attempt's decode where the frontend would now:
// source-first once the source announced, destination-first at once.
func (c *coord) routeDecode(a *catt) {
	if !c.decodeRoutable(a) {
		return
	}
	// The kv-aware router reads the index the workers published
	// (KKV): a worker that advertises the request's prefix group steers
	// it, and the prefix is a hit there when the cache the worker
	// reported holds its blocks, as the simulator's routeDecode rules.
	var cached func(int) bool
	r := &a.req
	if c.cfg.DecodeRouter == cluster.KVAware && r.PrefixGroup != "" && r.PrefixTokens > 0 {
		cached = func(w int) bool { return c.index.Holds(w, r.PrefixGroup) }
	}
	d := cluster.Choose(c.cfg.DecodeRouter, c.cfg.Prefill.Workers, c.cfg.NumWorkers(), &c.nextD, c.rng, c.decodeLoad, cached)
	hit, lk := model.Tokens(0), model.Blocks(0)
	if cached != nil && cached(d) {
		wc, err := c.world(r.PromptTokens, r.PrefixTokens)
		if err != nil {
			fmt.Fprintf(c.errs, "coordinator: request %d: %v\n", r.Index, err)
		} else if lk = wc.DestQuote(0, 1, false).LockedBlocks; lk <= c.cacheOf(d) {
			hit = r.PrefixTokens
			a.Cfg = wc
			a.st.W.Rebind(wc)
		} else {
			lk = 0
		}
	}
	a.d = d
	a.dGen = c.ws[d].gen
	a.hit = hit // the routed fact logs it
	if !c.step(a, system.Move{Kind: system.MvRouteDecode, H: 0, Arg: 1}, false) {
		a.d, a.hit = -1, 0
		if hit > 0 {
			wc, _ := c.world(r.PromptTokens, 0)
			a.Cfg = wc
			a.st.W.Rebind(wc)
		}
		return
	}
	c.hitBlocks[d] += int64(lk)
	c.rep.PrefixHitTokens += int64(hit)
	if hit > 0 {
		c.rep.PrefixHits++
	}
	c.sendMarks(a, model.DestinationSide)
	c.sendTo(d, &Frame{Kind: KRoute, Attempt: a.name, Stage: "decode", Request: c.info(a), PeerGen: a.pGen,
		Group: r.PrefixGroup, PrefixTokens: int64(r.PrefixTokens), HitTokens: int64(hit)})
	c.routedTo(d, model.DestinationSide)
}

// decodeRoutable says whether the frontend would route the attempt's
// decode now: not routed yet, neither cancelled nor failed at its
// source, and, source-first, announced.
func (c *coord) decodeRoutable(a *catt) bool {
	x := &a.st.W.H[0]
	return a.d < 0 && !x.Cancelled && !x.SourceFailed && (c.cfg.SpecPolicy() != spec.SourceFirst || x.Announced)
}

func (c *coord) routedTo(w int, sd model.Side) {
	c.ws[w].routed++
	c.lastRoute[sd] = time.Now()
}

// noWork says why a worker's generation took no attempt: the run routed
// nothing more to its stage after it started, or the router placed every
// request elsewhere.
func (c *coord) noWork(cw *cworker, l *Ledger) string {
	if l.Attempts > 0 {
		return ""
	}
	sd := model.SourceSide
	stage := "prefill"
	if cw.w >= c.cfg.Prefill.Workers {
		sd, stage = model.DestinationSide, "decode"
	}
	ms := func(t time.Time) float64 { return float64(t.Sub(c.start).Microseconds()) / 1000 }
	last := c.lastRoute[sd]
	switch {
	case cw.routed > 0:
		return fmt.Sprintf("took no attempt: the %d routes sent to it reached no process of this generation", cw.routed)
	case cw.gen > 0 && (last.IsZero() || !last.After(cw.started)):
		if last.IsZero() {
			return fmt.Sprintf("took no attempt: it started at %.1f ms and no request was routed to a %s worker in the run", ms(cw.started), stage)
		}
		why := fmt.Sprintf("took no attempt: it started at %.1f ms, after the last request was routed to a %s worker (%.1f ms)", ms(cw.started), stage, ms(last))
		if l.Refused > 0 {
			why += "; the frames it refused were about its earlier generation's attempts"
		}
		return why
	case last.IsZero():
		return fmt.Sprintf("took no attempt: no request was routed to a %s worker in the run", stage)
	}
	return fmt.Sprintf("took no attempt: the %s router placed every request on other workers", stage)
}

// phaseFrontend is a fault of the frontend (a client cancel) aimed at a
// phase: the side's worker logged the fact it waited for, and the
// frontend strikes now.
func (c *coord) phaseFrontend(f *Frame, k system.Fault) {
	a := c.atts[f.Attempt]
	sd, ok := cluster.SideNamed(f.Side)
	if a == nil || !ok {
		return
	}
	a.m.Logged(sd, f.Msg)
	if a.m.Spend(k, 0) {
		c.rep.FaultsStruck++
		c.frontend(a, k)
	}
}

// phaseOther is a fault aimed at the other side's phase (after_side):
// the side's worker logged the fact it waited for (Side), and the worker
// of the side it strikes (To) is marked now. The frame comes ahead of
// the facts the logging step sent, on the same connection, so the mark
// is set before the peer hears of that step.
func (c *coord) phaseOther(f *Frame) {
	a := c.atts[f.Attempt]
	by, ok := cluster.SideNamed(f.Side)
	on, ok2 := cluster.SideNamed(f.To)
	k, ok3 := system.ParseFault(f.Fault)
	if a == nil || !ok || !ok2 || !ok3 || a.done {
		return
	}
	a.m.Logged(by, f.Msg)
	if !a.m.Spend(k, on) {
		return
	}
	mark := Frame{Kind: KMark, Fault: f.Fault, To: sideNames[on]}
	if w := a.worker(on); w >= 0 {
		mark.Attempt = a.name
		mark.To = ""
		c.sendTo(w, &mark)
		return
	}
	// Not routed yet: the mark goes with the side's route.
	a.m.worker = append(a.m.worker, mark)
}

// cancel is the client cancelling the request: the workload's cancel,
// the teardown's, or a plan's.
func (c *coord) cancel(a *catt) { c.frontend(a, system.Cancel) }

// frontend takes the move of a fault of the frontend (FaultKinds'
// Frontend: a client cancel) and tells each side's worker what the step
// left pending for it.
func (c *coord) frontend(a *catt, k system.Fault) {
	if a.done || !c.step(a, system.Move{Kind: k.Move(), H: 0}, false) {
		return
	}
	// The request's own count is taken when it finishes (tally); a cut
	// attempt's cancel is the teardown's.
	if a.cut {
		c.rep.Teardown.Cancelled++
	}
	x := &a.st.W.H[0]
	for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
		if x.CancelPending[sd] {
			x.CancelPending[sd] = false
			c.sendTo(a.worker(sd), &Frame{Kind: KCancel, Attempt: a.name})
		}
	}
}

// act takes a router's move that depends on what the attempt's workers
// report (routing its decode, the client's cancel) once every worker of
// the attempt whose outcome is still unknown is held. In the model a
// side's outcome reaches its router in the step that makes it, so the
// routers never act on an attempt whose side already finished without
// knowing it; here the report crosses a connection, and a router that
// acted while it was on the way (a decode routed after its source
// failed, a cancel after both sides finished) would log a move the
// model cannot take. Held, a worker takes no step of the attempt, and
// everything it sent before its answer was read first.
func (c *coord) act(a *catt, k ckind) {
	if a.done || (k == cRouteDecode && !c.decodeRoutable(a)) {
		// Routing decode would do nothing now, and nothing a worker
		// reports could change that but the source's announce, which
		// routes decode itself: no hold (three frames fewer).
		return
	}
	a.acts = append(a.acts, k)
	if a.holding {
		return
	}
	a.holding = true
	for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
		a.heldGen[sd], a.wait[sd] = -1, false
		w := a.worker(sd)
		if w < 0 || a.outcome[sd] != model.OutcomeNone {
			continue
		}
		cw := c.ws[w]
		if cw.gen != a.gen(sd) || !c.sendTo(w, &Frame{Kind: KHold, Attempt: a.name}) {
			continue // that process is gone, and with it what it knew
		}
		a.heldGen[sd], a.wait[sd] = cw.gen, true
	}
	c.maybeAct(a)
}

// gen is the generation of the worker the attempt's side was routed to.
func (a *catt) gen(sd model.Side) int64 {
	if sd == model.SourceSide {
		return a.pGen
	}
	return a.dGen
}

// maybeAct takes the attempt's waiting moves once no held worker's
// answer is awaited, and releases the held workers.
func (c *coord) maybeAct(a *catt) {
	if !a.holding || a.wait[0] || a.wait[1] {
		return
	}
	acts := a.acts
	a.acts, a.holding = nil, false
	for _, k := range acts {
		if a.done {
			break
		}
		switch k {
		case cRouteDecode:
			c.routeDecode(a)
		case cCancel:
			c.cancel(a)
		}
	}
	for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
		if g := a.heldGen[sd]; g >= 0 && c.ws[a.worker(sd)].gen == g {
			c.sendTo(a.worker(sd), &Frame{Kind: KRelease, Attempt: a.name})
		}
		a.heldGen[sd] = -1
	}
}

// outcome is a side's terminal outcome on its request stream: the
// router's booking ends.
func (c *coord) outcome(w int, f *Frame) {
	a := c.atts[f.Attempt]
	sd, ok := cluster.SideNamed(f.Side)
	if a == nil || !ok || a.worker(sd) != w || a.outcome[sd] != model.OutcomeNone {
		return
	}
	okOut := f.Outcome == model.OutcomeOK.String()
	if sd == model.SourceSide {
		a.strand.from, a.strand.to, a.strand.blocks = f.FromUS, f.ToUS, f.Blocks
	} else {
		a.strand.ready = f.DecodeReadyUS
	}
	c.project(a)
	tx := model.Tx{W: &a.st.W}
	if sd == model.SourceSide {
		tx.ReportSourceOutcome(0, sd, okOut)
	} else {
		tx.ReportDecodeOutcome(0, sd, okOut)
	}
	c.writeBack(a)
	a.outcome[sd] = a.st.W.H[0].Outcome[sd]
	a.outAt[sd] = f.SentUS
	if a.outAt[sd] <= 0 {
		a.outAt[sd] = c.now()
	}
	c.maybeFinish(a)
}

func (c *coord) maybeFinish(a *catt) {
	if a.done {
		return
	}
	x := &a.st.W.H[0]
	srcDone := x.Outcome[model.SourceSide] != model.OutcomeNone
	dstDone := x.Outcome[model.DestinationSide] != model.OutcomeNone
	if !srcDone || (a.d >= 0 && !dstDone) {
		return
	}
	if a.d < 0 && !x.SourceFailed && !x.Cancelled {
		return // decode not routed yet
	}
	a.done = true
	if a.holding {
		// The attempt ended while a router's move waited for its held
		// workers' answers (an outcome that crossed the hold on the
		// wire): the move is moot, but the workers stay held until told,
		// and a later answer would find no attempt here to release them.
		a.wait = [2]bool{}
		c.maybeAct(a)
	}
	c.finished++
	delete(c.atts, a.name)
	if a.strand.from > 0 {
		a.strand.w = a.p
		c.strands = append(c.strands, a.strand)
	}
	c.tally(a, x.Outcome[0] == model.OutcomeOK && x.Outcome[1] == model.OutcomeOK, x.Cancelled)
	// Nothing more is relayed for the attempt: each of its workers still
	// of the generation it was routed to forgets the machine it kept for
	// it once it took the facts relayed before this frame.
	for sd, w := range [2]int{a.p, a.d} {
		if w >= 0 && a.outcome[sd] != model.OutcomeForgotten && c.ws[w].gen == [2]int64{a.pGen, a.dGen}[sd] {
			c.sendTo(w, &Frame{Kind: KEnded, Attempt: a.name})
		}
	}
}

// tally counts a finished request once: succeeded when both sides
// succeeded (a client's cancel that reached its workers after they
// finished changed nothing), else cancelled when the client cancelled
// it, else failed. Counting the cancel when the router took it would
// count such a request twice, as succeeded and as cancelled.
func (c *coord) tally(a *catt, ok, cancelled bool) {
	switch {
	case ok:
		c.rep.Succeeded++
		c.lat = append(c.lat, float64(time.Since(a.arrive).Microseconds())/1000)
	case cancelled:
		c.rep.Cancelled++
	default:
		c.rep.Failed++
	}
}

// ---- the proxy ----

// relay takes a frame between the workers of an attempt through the
// proxy: the plan's loss and duplicate for the request, then the seeded
// faults.
func (c *coord) relay(from int, f *Frame, raw []byte) {
	a := c.atts[f.Attempt]
	to, ok := cluster.SideNamed(f.To)
	if a == nil || !ok {
		return // the attempt ended for the frontend; late frames go nowhere
	}
	dst := a.worker(to)
	if dst < 0 || a.worker(to.Other()) != from {
		return
	}
	copies := 1
	if msg, ok := msgNamed(f.Msg); ok && f.Kind == KFact {
		if _, k, ok := a.m.Instead(system.Move{Kind: system.MvDeliver, H: 0, Arg: int8(to), Msg: msg}); ok {
			// The fault table says how many times the fact arrives.
			c.rep.FaultsStruck++
			copies = int(system.FaultKinds[k].Delivers)
			if copies == 0 {
				c.rep.Proxy.Dropped++
				return
			}
			if copies > 1 {
				c.rep.Proxy.Duplicated++
			}
		}
		if p := &c.opt.Proxy; p.Seed != 0 && c.prng.Float64() < p.Rate {
			switch c.prng.IntN(3) {
			case 0:
				c.rep.Proxy.Dropped++
				return
			case 1:
				c.rep.Proxy.Duplicated++
				copies = 2
			case 2:
				c.rep.Proxy.Delayed++
				g := *f
				c.push(&cevent{at: time.Now().Add(c.dur(c.prng.Int64N(max(p.MaxDelayUS, 1)))), kind: cRelay, w: dst, f: &g})
				return
			}
		}
	}
	for range copies {
		c.sendRaw(dst, f, raw)
	}
}

// ---- restarts ----

// stop begins a restart the plan times: the process is asked to take no
// further step, and killed once it says so. The model's restart falls
// between two steps of the worker, each step's reports reaching the
// routers with it; a process killed while its last frames are still on
// the wire would leave facts in its log (an outcome, a fact to its peer)
// that no one heard, so the kill waits for everything it sent to be
// read first. A process that does not answer within a second (or whose
// connection is down) is killed as it is.
func (c *coord) stop(w int) {
	cw := c.ws[w]
	if cw.stopping {
		return
	}
	if cw.starting || cw.conn == nil || cw.conn.bad || !c.sendTo(w, &Frame{Kind: KStop}) {
		c.restart(w)
		return
	}
	cw.stopping = true
	c.push(&cevent{at: time.Now().Add(time.Second), kind: cStopTimeout, w: w, gen: cw.gen})
}

// restart is worker w's process ending (killed by the plan, or on its
// own): every attempt it had takes the restart in the routers' windows,
// the routers' bookings there end, and a health check tells each peer.
// Every frame the process sent before it stopped was read and acted on
// already (it stopped on a trigger or a stop, or its connection ended),
// so nothing it logged is lost to the routers.
func (c *coord) restart(w int) {
	cw := c.ws[w]
	cw.stopping = false
	if cw.proc != nil {
		cw.proc.Kill()
		cw.proc.Wait()
	}
	if cw.conn != nil {
		cw.conn.c.Close()
		cw.conn = nil
	}
	cw.gen++
	cw.starting = true
	cw.routed, cw.started = 0, time.Now()
	c.rep.Restarts++
	// The restart enters the worker's log now, before any route to its
	// next generation: a new process may take long to start on a busy
	// machine, and a restart logged only then would come after routes
	// the routers sent it (which the judge would take for routes lost in
	// the restart). The old process is dead, so nothing else writes.
	c.logRestart(cw)
	// The restart drops everything the worker advertised, as its
	// worker_restarted tells a KV router's indexer; its cache is empty.
	c.index.Apply(&obslog.Fact{Kind: obslog.WorkerRestarted, Proc: w + 1}, "")
	c.cache[w], c.hitBlocks[w], c.taken[w] = 0, 0, 0
	for _, a := range c.order {
		if a.done || (a.p != w && a.d != w) {
			continue
		}
		k := int8(0)
		if a.d == w {
			k = 1
		}
		c.project(a)
		before := a.st.W.H[0]
		c.take(&a.st, system.Move{Kind: system.Restart.Move(), H: -1, Arg: k}, true)
		// The restart resets the worker in the window; the routers keep
		// their ledgers of it (minus this attempt's bookings).
		kw := a.st.W.W[k]
		c.project(a)
		a.st.W.W[k].Owned, a.st.W.W[k].PrefillTokens, a.st.W.W[k].BookedBlocks = kw.Owned, kw.PrefillTokens, kw.BookedBlocks
		a.st.W.W[k].StoredBlocks = 0
		c.writeBack(a)
		x := &a.st.W.H[0]
		sd := model.Side(k)
		if before.Outcome[sd] == model.OutcomeNone {
			a.outcome[sd] = model.OutcomeForgotten
			a.outAt[sd] = c.now()
		}
		if x.PeerGone[sd.Other()] {
			peer := a.worker(sd.Other())
			c.push(&cevent{at: time.Now().Add(c.dur(c.cfg.HealthCheckUS)), kind: cPeerRestarted, a: a, w: peer, gen: cw.gen})
		}
		c.maybeFinish(a)
		if a.holding && a.wait[sd] {
			// The held process is gone: everything it sent was read.
			a.wait[sd], a.heldGen[sd] = false, -1
			c.maybeAct(a)
		}
	}
	c.order = slices.DeleteFunc(c.order, func(a *catt) bool { return a.done })
	// The spare takes over at once (its frames wait for its hello if it
	// has not said it yet), and a new spare starts.
	switch {
	case cw.spare != nil:
		cw.proc, cw.spare = cw.spare, nil
		if wc := cw.spareConn; wc != nil {
			cw.spareConn = nil
			c.connected(cw, wc)
		}
	default:
		if err := c.spawn(w); err != nil {
			fmt.Fprintf(c.errs, "coordinator: %v\n", err)
		}
	}
	if err := c.spawnSpare(w); err != nil {
		fmt.Fprintf(c.errs, "coordinator: %v\n", err)
	}
}

// lateBudget is the lateness the run's deadlines absorb: a tenth of the
// shortest of them (the timers and the health check) on the wall clock,
// and which it is. A process that takes its events later than that moves
// a deadline by a tenth of itself or more, enough to reorder it with
// what the configuration puts around it.
func (c *coord) lateBudget() (time.Duration, string) {
	us, what := c.cfg.HealthCheckUS, "health check"
	for t := model.Timer(0); t < model.NumTimers; t++ {
		if d := c.cfg.TimerUS(t); d > 0 && d < us {
			us, what = d, t.String()+" timer"
		}
	}
	return c.dur(us) / 10, what
}

// logRestart appends worker_restarted for cw's new generation to its log.
func (c *coord) logRestart(cw *cworker) {
	f, err := os.OpenFile(cw.logf, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		fmt.Fprintf(c.errs, "coordinator: %v\n", err)
		return
	}
	defer f.Close()
	lw := obslog.AppendWriter(f, c.header)
	lf := obslog.Fact{Proc: cw.w + 1, Gen: cw.gen, Kind: obslog.WorkerRestarted, TUS: c.now(), To: -1}
	lw.Write(&lf)
	if err := lw.Flush(); err != nil {
		fmt.Fprintf(c.errs, "coordinator: %v\n", err)
	}
}

// ---- the event queue ----

type ckind uint8

const (
	cArrive ckind = iota
	cCancel
	cRelay
	cPeerRestarted
	cRestart
	cRouteDecode
	cStopTimeout
	cTeardown
)

type cevent struct {
	at   time.Time
	seq  uint64
	kind ckind
	a    *catt
	w    int
	gen  int64
	f    *Frame
	l    *lcatt // a legacy request's arrival, cancel or decode route
}

func (e *cevent) due() (time.Time, uint64) { return e.at, e.seq }

func (c *coord) push(e *cevent) {
	e.seq = c.q.next()
	c.q.push(e)
}

func (c *coord) runDue() error {
	now := time.Now()
	for c.q.Len() > 0 && !c.q.peek().at.After(now) {
		e := c.q.pop()
		c.activity()
		c.late.Events.add(now.Sub(e.at))
		switch {
		case e.kind == cArrive && c.latts != nil:
			if err := c.legacyArrive(); err != nil {
				return err
			}
			continue
		case e.kind == cCancel && e.l != nil:
			c.legacyCancel(e.l)
			continue
		case e.kind == cRouteDecode && e.l != nil:
			c.legacyRouteDecode(e.l)
			continue
		}
		switch e.kind {
		case cArrive:
			if c.torn {
				continue // the arrival queued before the teardown
			}
			if err := c.arrive(); err != nil {
				return err
			}
		case cCancel:
			if c.torn {
				continue // the teardown cut the attempt already, or it was resolved
			}
			c.act(e.a, cCancel)
		case cRelay:
			// The proxy's delay is the fault, not lateness.
			e.f.SentUS = 0
			c.sendTo(e.w, e.f)
		case cPeerRestarted:
			if !e.a.done && e.w >= 0 {
				c.sendTo(e.w, &Frame{Kind: KPeerRestarted, Attempt: e.a.name, Gen: e.gen})
			}
		case cRestart:
			if c.torn {
				continue // a restart planned after the teardown
			}
			c.rep.FaultsStruck++
			c.stop(e.w)
		case cStopTimeout:
			if cw := c.ws[e.w]; cw.stopping && cw.gen == e.gen {
				// The process did not answer: it is killed as it is, and
				// what it sent but the coordinator did not read is lost.
				c.restart(e.w)
			}
		case cRouteDecode:
			c.act(e.a, cRouteDecode)
		case cTeardown:
			if err := c.tearDown(); err != nil {
				return err
			}
		}
	}
	return nil
}

// Teardown is what ending a live run with handoffs unresolved did
// (Options.UntilUS), in the simulator's terms as far as the router can
// tell them: a destination reports its outcome only when its record
// ends, so the router cannot tell an attempt whose KV activated and
// decodes from one still in its handoff, and cuts both.
type Teardown struct {
	// AtMS is the teardown's time after the first arrival, in configured
	// milliseconds.
	AtMS float64 `json:"at_ms"`
	// Cut counts the attempts the router had not seen end at the
	// teardown; Cancelled those the client cancel reached (the others
	// were ending on their own).
	Cut       int `json:"cut"`
	Cancelled int `json:"cancelled"`
	// Activated counts the cut attempts whose destination then reported
	// success: their KV had activated, and the cancel stopped their
	// decode (the handoff itself succeeded).
	Activated int `json:"activated"`
	// NotArrived counts the workload's requests after the teardown,
	// never started.
	NotArrived int `json:"not_arrived"`
}

// tearDown cuts every attempt the router has not seen end, in arrival
// order, through the router's cancel (held like any router's move), and
// stops the workload.
func (c *coord) tearDown() error {
	c.torn = true
	td := &Teardown{AtMS: float64(c.opt.UntilUS) / 1000}
	c.rep.Teardown = td
	for c.next != nil {
		td.NotArrived++
		if err := c.readArrival(); err != nil {
			return err
		}
	}
	for _, a := range c.order {
		if a.done {
			continue
		}
		td.Cut++
		a.cut = true
		c.act(a, cCancel)
	}
	return nil
}

// ---- the report ----

func (c *coord) report() {
	r := &c.rep
	if td := r.Teardown; td != nil {
		td.Activated = 0
		for _, a := range c.order {
			if a.cut && a.outcome[model.DestinationSide] == model.OutcomeOK {
				td.Activated++
			}
		}
	}
	r.Policy, r.Engine = c.cfg.Policy, c.cfg.Engine.String()
	r.Requests = c.arrived
	r.Finished = c.finished
	if !c.start.IsZero() {
		end := c.end
		if end.IsZero() {
			end = time.Now()
		}
		r.ElapsedMS = float64(end.Sub(c.start).Microseconds()) / 1000
		if r.ElapsedMS > 0 {
			r.Throughput = float64(c.finished) / (r.ElapsedMS / 1000)
		}
	}
	sort.Float64s(c.lat)
	r.LatencyMS = pcts(c.lat)
	_, inProcess := c.opt.Spawn.(*GoSpawner)
	if c.cpu == 0 && !c.start.IsZero() {
		c.cpu = processCPU() - c.cpu0 // interrupted
	}
	r.CPU.InProcess = inProcess
	if c.finished > 0 {
		r.CPU.CoordinatorUS = round3(float64(c.cpu.Microseconds()) / float64(c.finished))
	}
	sf := strandedFigures(c.strands, len(c.ws), c.opt.Scale)
	r.StrandedSourceBlockSeconds, r.StrandedSourcePeak = sf.totalBS, sf.totalPeak
	var from, to int64
	if !c.start.IsZero() {
		from, to = c.start.Sub(c.epoch).Microseconds(), c.end.Sub(c.epoch).Microseconds()
	}
	for _, cw := range c.ws {
		if cw.ledger == nil {
			r.Leaks = append(r.Leaks, fmt.Sprintf("worker %d (gen %d) sent no ledger", cw.w, cw.gen))
			continue
		}
		cw.ledger.NoWork = c.noWork(cw, cw.ledger)
		if cw.ledger.Series == nil {
			cw.ledger.Series = map[string]PeakMean{}
		}
		for _, i := range routerMetrics {
			cw.ledger.Series[cluster.WorkerMetrics[i]] = c.booked[cw.w][i].over(from, to)
		}
		cw.ledger.StrandedSourceBlockSeconds, cw.ledger.StrandedSourcePeak = sf.blockSeconds[cw.w], sf.peak[cw.w]
		if !inProcess && c.finished > 0 {
			r.CPU.WorkersUS += float64(cw.ledger.CPUUS) / float64(c.finished)
		}
		r.PrefixShortBlocks += cw.ledger.PrefixShortBlocks
		r.Workers = append(r.Workers, *cw.ledger)
		if h := cw.ledger.Held(); h != "" {
			r.Leaks = append(r.Leaks, fmt.Sprintf("worker %d holds %s", cw.w, h))
		}
		for _, f := range cw.ledger.Findings {
			r.Findings = append(r.Findings, fmt.Sprintf("worker %d: %s", cw.w, f))
		}
	}
	for w := range c.wk {
		k := &c.wk[w]
		rl := RouterLedger{Worker: w, Owned: int64(k.Owned), PrefillTokens: int64(k.PrefillTokens), Booked: int64(k.BookedBlocks)}
		r.Routers = append(r.Routers, rl)
		if rl.Owned != 0 || rl.PrefillTokens != 0 || rl.Booked != 0 {
			r.Leaks = append(r.Leaks, fmt.Sprintf("the routers still book on worker %d: owned %d, prefill_tokens %d, booked %d", w, rl.Owned, rl.PrefillTokens, rl.Booked))
		}
	}
	r.CPU.WorkersUS = round3(r.CPU.WorkersUS)
	r.Scale = c.opt.Scale
	r.Lateness = Lateness{}
	r.Lateness.merge(&c.late)
	for _, cw := range c.ws {
		if cw.ledger != nil && cw.ledger.Lateness != nil {
			r.Lateness.merge(cw.ledger.Lateness)
		}
	}
	budget, what := c.lateBudget()
	r.LateBudgetUS = budget.Microseconds()
	for _, lc := range []struct {
		name string
		c    *LateCount
	}{{"events", &r.Lateness.Events}, {"frames", &r.Lateness.Frames}} {
		if p := lc.c.QuantileUS(0.99); p > r.LateBudgetUS && !r.TooLate {
			r.TooLate = true
			r.LateWhy = fmt.Sprintf("at time scale %g the processes took 1 in 100 of their %s %.2f ms late or more (at most %.2f ms), past the %.2f ms the run's deadlines absorb (a tenth of the %s, %.0f ms on the wall clock): the outcome would describe the machine's load, not the workload",
				c.opt.Scale, lc.name, float64(p)/1000, float64(lc.c.MaxUS)/1000, float64(r.LateBudgetUS)/1000, what, float64(budget.Microseconds())*10/1000)
		}
	}
	if open := c.arrived - c.finished; open > 0 {
		r.Leaks = append(r.Leaks, fmt.Sprintf("%d attempts never finished for the frontend", open))
	}
	r.Clean = len(r.Leaks) == 0 && !r.Interrupted
}
