package conform

import (
	"fmt"
	"slices"
	"sort"
	"unsafe"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/props"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// maxSlots bounds the processes that log facts of one attempt: its two
// workers and the routers.
const maxSlots = 6

// maxOwed bounds the facts one step makes observable that are still to
// be matched.
const maxOwed = 8

// maxFacts bounds the facts one process logs of one attempt (a node
// counts them in 16 bits).
const maxFacts = 1<<16 - 1

type judge struct {
	h     *obslog.Header
	cfg   *cluster.Config
	chk   *system.System
	bound int
	maxF  int
	open  bool
	// props are Options.Props: the rejection names the one broken.
	props *props.Set
	// clock judges them on the clock along each final explanation
	// (timed.go); clockUS is the latest time stamp read, cited the ids of
	// the attempts its report names, by their order.
	clock   *props.Clock
	clockUS int64
	cited   map[int]string
	scale   float64 // Options.TimeScale
	// skew is Options.ClockError in microseconds, -1 without one
	// (clock.go).
	skew int64

	procs   []procState
	routers []int // the router processes
	att     map[string]*attempt
	// recent holds open attempts of att by the address of their id's
	// string (openAttempt): an entry goes when its attempt leaves att.
	recent [recentAttempts]recentAttempt
	seq    int // attempts made, for their order
	// gone is every attempt the judge forgot once an explanation
	// finished it: attempt ids are never reused, so a fact about one
	// after its end is judged against what it ended holding, whether or
	// not its blocks were evicted since. lateHeld is the ids of those
	// with a late fact held (lateFact), in the order they came.
	gone *goneStore
	// held is the late fact held for a finished attempt (finished.held).
	held map[string]*obslog.Fact
	// goneErr is the first error reading a record of gone back, for
	// Judge.
	goneErr  error
	lateHeld []string
	rep      Report

	ledgers []ledger
	// sharing is the canonical blocks adopted at activation (adopt.go),
	// which the ledgers count once.
	sharing sharing

	moves   []system.Move
	stepper *cluster.Stepper // takes every move from a node, keeping its firings
	// ex is the invariants' triggers the steps of the final explanations
	// fired (exercise), exIDs the attempts it names (by seq).
	ex     cluster.Exercise
	exIDs  map[int]string
	cov    *system.Coverage
	labels []obslog.Label
	// refusedLabels is refused's scratch, apart from labels, which its
	// callers may be reading.
	refusedLabels []obslog.Label
	quiet         []quietStep

	// worlds is the attempts' world configurations by prompt and prefix
	// hit: attempts of one size share one, so their states compare equal
	// and greedy's searches are remembered across them (memo).
	worlds     map[[2]int64]*world
	freeWorlds []*world
	worldN     uint64
	tmpl       model.Config // the cluster's AttemptWorld, for fillWorld
	// memo holds greedy's searches: by the hash of their key, one more
	// than the index in memoTab of the latest (the others chained by
	// next). memoTab is reused when it fills.
	memo    map[uint64]int32
	memoTab []greedyMemo
	memoN   int
	// memoLooks and memoHits count the searches of the current probe
	// and those the memo had; memoSkip the searches left that skip it
	// (memoUse).
	memoLooks, memoHits, memoSkip int
	// memoRestN is the skip after the latest probe (memoUse).
	memoRestN int
	// far remembers greedy's breadth-first searches across attempts
	// (far.go).
	far farMemo
	// off is, per kind of fact, the fault kinds greedy's search leaves
	// out (greedyOff), once computed (offDone).
	off     [obslog.NumKinds]system.Remaining
	offDone bool

	// The pools of nodes and states (newNode, own, free), and greedy's
	// search's buffers: what a fact costs stays off the heap.
	freeNodes  []*node
	freeAtts   []*attempt
	freeFacts  []*obslog.Fact
	freeStates []*system.State
	scratch    []*node // the nodes a greedy search made
	frontier   []*node
	path       []*node // tallyTo's
	next       []*node
	seen       visited
	all        []*obslog.Fact // restart's
	greedySt   system.State   // greedyMovesOf's
	greedyMs   system.MoveSet
	// carried counts the explanations carried into the world of a
	// prefix hit learned late (carry).
	carried int
}

type procState struct {
	gen     int64
	seen    bool
	restart *obslog.Fact // its last restart
	// where the current generation began, for stale facts
	since string
	// stamped: a fact of the process was read with a clock error given
	// (clockStamp); lastUS is its stamp, lastFile and lastLine its place.
	stamped  bool
	lastUS   int64
	lastFile string
	lastLine int
}

type slot struct {
	proc  int
	facts []*obslog.Fact
}

type attempt struct {
	id      string
	seq     int
	p, d    int
	prompt  int64
	hit     int64
	wcfg    *model.Config // world's
	world   *world
	slots   []slot
	waiting []*node
	// seen is the visited set of the full search: by a node's hash, the
	// nodes with it, told apart by their identity (same), so that a
	// collision of the hash never drops a node the search has not seen.
	seen  map[uint64][]*node
	level int
	// full: the attempt is searched over every interleaving of its
	// processes' facts. Until an attempt needs it, one explanation is
	// followed in the order the facts were read, which respects each
	// process's order (cur is where it is): an explanation found so is
	// one of the full search's, found faster. When it cannot explain a
	// fact, the attempt is searched in full from its first fact, and only
	// the full search rejects.
	full bool
	cur  *node
	// chain is the nodes of the explanation followed greedily, root to
	// cur, with the state each owns (nil: shared): freeing them
	// (freeGreedy) reads this list, not the nodes, which have long left
	// the cache when the attempt ends.
	chain []chainNode
	// live is where in chain the states not yet given back begin
	// (dropPast).
	live int
	// shared counts the facts of the slots that are not the attempt's
	// alone (worker_restarted, which every attempt open on the worker
	// gets): freeFactsOf gives back the others.
	shared int
	// tally is what the explanation up to cur took unlogged (advance),
	// and countedSt the state of cur the ledgers count (counted).
	tally     tally
	countedSt *system.State
	// ex is the triggers the explanation up to cur fired (advance): the
	// judge's own notes them once the explanation is final (exercise).
	// Its kilobyte goes with the attempt when it is recycled (newAttempt),
	// cleared where it was written, not whole.
	ex      *cluster.Exercise
	cut     bool // the step bound cut the search at this level
	everCut bool
	fcut    bool // a fault was refused at this level
	last    *obslog.Fact
	broken  *model.Violation // a step an explanation would need broke this
	// stepBroke is, for a fact, the violation of the first step of the
	// tables found that would log it where the logs have it but breaks a
	// step or state invariant (refused): check judges a step's step and
	// state invariants before Quiescence, and so does the rejection.
	stepBroke map[*obslog.Fact]*model.Violation
	// furthest is the explanations that explained the most facts, for
	// the report when none goes further.
	furthest []*node
	// held is what the attempt counts in its workers' ledgers.
	held [2]model.Holdings
}

// finished is what the judge keeps of an attempt it forgot (44 bytes
// beside its id): ids are never reused, so none may be forgotten
// entirely; the oldest records wait in a file (goneStore).
type finished struct {
	// p and d are its prefill and decode processes (-1: none).
	p, d int16
	// gen is the generations of p and d when it ended: only that
	// incarnation may publish Removed for what it kept.
	gen [2]int32
	// removed is the blocks of the Removed each side may still publish
	// for what the index advertises of its cached blocks (-1: nothing).
	removed [2]int32
	// file (an index in the report's files) and line are where its last
	// fact was, for reports.
	line int32
	file uint16
	// dec is, when proc is not -1, the decoder it was when it finished
	// (sharing): its activation on decode process proc in generation
	// gen, with its prompt and prefix hit.
	dec finishedDecoder
}

type finishedDecoder struct {
	proc        int16
	gen         uint32
	prompt, hit int32
}

// chainNode is a node of an explanation followed greedily, and the state
// it owns (nil: its parent's).
type chainNode struct {
	n  *node
	st *system.State
	// fact and move are the node's, for its line of a report (its node
	// may be back in the pool: dropPast).
	fact *obslog.Fact
	move system.Move
}

// maxFurthest bounds the furthest explanations kept for a report.
const maxFurthest = 64

func newJudge(h *obslog.Header, file string, opt Options) (*judge, error) {
	cfg := opt.Config
	if cfg == nil && h.Config != nil {
		c, err := cluster.ParseConfig(file+" (header config)", h.Config)
		if err != nil {
			return nil, fmt.Errorf("%s:1: %w: the header's configuration: %v", file, ErrInput, err)
		}
		cfg = c
	}
	if cfg == nil {
		cfg = cluster.DefaultConfig()
	}
	c := *cfg
	if err := c.SetPolicy(h.Policy.String()); err != nil {
		return nil, fmt.Errorf("%s:1: %w: %v", file, ErrInput, err)
	}
	c.Engine = h.Engine
	p := opt.Protocol
	if p == nil {
		p = system.Generated()
	}
	budget := system.Budget{}
	for f := range budget {
		budget[f] = system.MaxBudget
	}
	var sj system.StateJudge
	if opt.Props != nil {
		sj = opt.Props
	}
	chk, err := system.New(p, &system.Config{World: *c.AttemptWorld(1, 0), Budget: budget, Renewal: c.Renewal, Commands: c.Commands, Judge: sj},
		system.Run{Name: "conform", Policy: h.Policy, Engine: h.Engine})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInput, err)
	}
	j := &judge{h: h, cfg: &c, chk: chk, skew: skewOf(opt), bound: opt.Bound, maxF: opt.MaxFaults, open: opt.Open, props: opt.Props,
		procs: make([]procState, len(h.Processes)), att: map[string]*attempt{}, gone: newGoneStore(), held: map[string]*obslog.Fact{}, worlds: map[[2]int64]*world{}, memo: map[uint64]int32{}, cov: system.NewCoverage(p.Spec())}
	if j.bound <= 0 {
		j.bound = DefaultBound
	}
	if j.bound > 250 {
		j.bound = 250
	}
	switch {
	case j.maxF < 0:
		j.maxF = 0
	case j.maxF == 0:
		j.maxF = DefaultMaxFaults
	}
	j.stepper = cluster.NewStepper(j.chk, j.cov)
	j.ex.Unordered, j.exIDs = true, map[int]string{}
	j.tmpl = *c.AttemptWorld(1, 0)
	for i, pr := range h.Processes {
		if pr.Role == obslog.RoleRouter {
			j.routers = append(j.routers, i)
		}
	}
	j.rep = Report{Verdict: Explained, Policy: h.Policy.String(), Engine: h.Engine.String(), Bound: j.bound, MaxFaults: j.maxF, ClockError: clockErrorText(opt)}
	if opt.Props != nil {
		j.rep.Props = opt.Props.File
		j.clock, j.cited, j.scale = props.NewClock(opt.Props), map[int]string{}, opt.TimeScale
	}
	j.initLedgers(opt.Config != nil || h.Config != nil)
	return j, nil
}

// newAttempt is a new attempt, from those greedy's explanations ended
// (freeAtts, which keep their lists of slots, facts and nodes), or new.
func (j *judge) newAttempt(id string) *attempt {
	var a *attempt
	if k := len(j.freeAtts); k > 0 {
		a = j.freeAtts[k-1]
		j.freeAtts = j.freeAtts[:k-1]
	} else {
		a = new(attempt)
	}
	ex := a.ex
	if ex == nil {
		ex = new(cluster.Exercise)
	} else {
		ex.Reset()
	}
	*a = attempt{id: id, seq: j.seq, p: -1, d: -1, slots: a.slots[:0], chain: a.chain[:0], ex: ex}
	return a
}

// newFact is a copy of f the judge may keep: from the facts of the
// attempts it forgot (freeFacts), or new.
func (j *judge) newFact(f *obslog.Fact) *obslog.Fact {
	p := j.takeFact()
	*p = *f
	return p
}

// takeFact is a fact the judge may keep, its content undefined: from the
// facts of the attempts it forgot (freeFacts), or new.
func (j *judge) takeFact() *obslog.Fact { return take(&j.freeFacts) }

// freeFactsOf gives back the facts only a forgotten attempt held: all but
// restarts, which reach every attempt open on their worker.
//
// A fact given back is not cleared (newFact overwrites all of it), and
// without a restart among them none is read: most have left the cache.
func (j *judge) freeFactsOf(a *attempt) {
	for _, sl := range a.slots {
		for i, f := range sl.facts {
			if a.shared == 0 || f.Kind != obslog.WorkerRestarted {
				j.freeFacts = append(j.freeFacts, f)
			}
			sl.facts[i] = nil
		}
	}
	a.last = nil
}

func (j *judge) report() *Report {
	r := j.rep
	return &r
}

// fact takes one fact of the logs.
func (j *judge) fact(f *obslog.Fact) error {
	if err := j.needStamps(f); err != nil {
		return err
	}
	if err := j.clockStamp(f); err != nil {
		return err
	}
	j.clockUS = max(j.clockUS, j.at(f))
	j.rep.Facts++
	f.Seq = j.rep.Facts
	ps := &j.procs[f.Proc]
	name := j.h.Processes[f.Proc].Name
	if f.Kind == obslog.WorkerRestarted {
		if ps.seen && f.Gen <= ps.gen {
			return fmt.Errorf("%s: %w: worker_restarted to generation %d, but %s is already at generation %d; a restart starts a newer generation", f.Where(), ErrInput, f.Gen, name, ps.gen)
		}
		ps.gen, ps.seen, ps.since = f.Gen, true, f.Where()
		ps.restart = f
		j.rep.Restarts++
		// The restart reaches the attempts the worker had logged facts
		// of: only its own order says what it held when it restarted (a
		// router's line, read from another log, says nothing of when).
		// An attempt routed to it that it never logs was lost in a
		// restart; end gives it one. The shares there end after every
		// attempt's restart: ended before, the ledger would count the
		// shared blocks of the attempts not yet restarted twice.
		for _, a := range j.sortedOpen() {
			if (a.p == f.Proc || a.d == f.Proc) && j.logged(a, f.Proc) {
				if !j.add(a, f) {
					return nil
				}
			}
		}
		j.shareFact(nil, f)
		return nil
	}
	switch {
	case !ps.seen:
		ps.gen, ps.seen, ps.since = f.Gen, true, f.Where()
	case f.Gen < ps.gen:
		j.reject(&Rejection{File: f.File, Line: f.Line, Attempt: f.Attempt, Fact: Describe(j.h, f), Invariant: model.NameAttemptIsolation,
			Detail: fmt.Sprintf("%s logs a fact as generation %d, but its generation %d began at %s: an earlier incarnation of a restarted worker acted after the restart", name, f.Gen, ps.gen, ps.since)})
		return nil
	case f.Gen > ps.gen:
		return fmt.Errorf("%s: %w: generation %d of %s, but it is at generation %d and no worker_restarted line moved it", f.Where(), ErrInput, f.Gen, name, ps.gen)
	}
	a := j.openAttempt(f.Attempt)
	if a == nil {
		e, gone, err := j.gone.get(f.Attempt)
		if err != nil {
			return err
		}
		if gone {
			j.late(f, &e)
			j.gone.put(f.Attempt, e)
			return nil
		}
		j.seq++
		a = j.newAttempt(f.Attempt)
		j.att[f.Attempt] = a
		j.recent[recentSlot(a.id)] = recentAttempt{id: a.id, a: a}
		j.rep.Attempts++
		j.rep.PeakOpen = max(j.rep.PeakOpen, len(j.att))
	}
	if why := j.bind(a, f); why != "" {
		j.reject(&Rejection{File: f.File, Line: f.Line, Attempt: f.Attempt, Fact: Describe(j.h, f), Invariant: model.NameAttemptIsolation, Detail: why})
		return nil
	}
	if why := j.shareFact(a, f); why != "" {
		j.reject(&Rejection{File: f.File, Line: f.Line, Attempt: f.Attempt, Fact: Describe(j.h, f), Detail: why})
		return nil
	}
	j.add(a, f)
	return nil
}

// openAttempt is the open attempt id, or nil: from recent when id is
// the very string the attempt was opened with (a reader gives every fact
// of an attempt the same copy of its id while it keeps the id among its
// latest), else from att.
func (j *judge) openAttempt(id string) *attempt {
	if r := &j.recent[recentSlot(id)]; r.a != nil && unsafe.StringData(r.id) == unsafe.StringData(id) && len(r.id) == len(id) {
		return r.a
	}
	return j.att[id]
}

// recentAttempt is an open attempt and the string it was opened with,
// which the entry keeps: the same address and length are the same id.
type recentAttempt struct {
	id string
	a  *attempt
}

// recentAttempts is how many open attempts recent holds, by the address
// of their id: a fact's attempt is found there without hashing the id,
// and anything else is looked up in att.
const recentAttempts = 1 << recentBits

const recentBits = 11

// recentSlot is id's entry in recent, by its string's address, mixed
// (short ids are allocated side by side, a few bytes apart).
func recentSlot(id string) uint64 {
	return uint64(uintptr(unsafe.Pointer(unsafe.StringData(id)))) * 0x9e3779b97f4a7c15 >> (64 - recentBits)
}

// logged reports whether process p logged a fact of the attempt.
func (j *judge) logged(a *attempt, p int) bool {
	for _, sl := range a.slots {
		if sl.proc == p {
			return len(sl.facts) > 0
		}
	}
	return false
}

// attachSilent gives an attempt that nothing explains the restart of a
// worker it was routed to and that never logged it: the route may have
// reached the worker just before it died, and what its peer did after
// may follow from that restart (which end gives such an attempt anyway).
// It reports whether it attached one.
func (j *judge) attachSilent(a *attempt) bool {
	for _, p := range []int{a.p, a.d} {
		if r := j.procRestart(p); r != nil && !j.logged(a, p) && len(a.slots) < maxSlots {
			a.slots = append(a.slots, slot{proc: p, facts: []*obslog.Fact{r}})
			a.shared++
			a.full = true
			return true
		}
	}
	return false
}

func (j *judge) procRestart(p int) *obslog.Fact {
	if p < 0 {
		return nil
	}
	return j.procs[p].restart
}

// bind learns where an attempt runs from a fact: the worker a router
// chose, the worker that logs it, and the attempt's size.
func (j *judge) bind(a *attempt, f *obslog.Fact) string {
	pr := j.h.Processes
	set := func(at *int, p int, what string) string {
		if *at >= 0 && *at != p {
			return fmt.Sprintf("the attempt's %s worker is %s, and %s logs it too: one attempt has one worker on each side", what, pr[*at].Name, pr[p].Name)
		}
		*at = p
		return ""
	}
	if f.Kind == obslog.Routed {
		at, what := &a.p, "prefill"
		if f.Stage == model.DestinationSide {
			at, what = &a.d, "decode"
			if f.PrefixHitTokens != a.hit {
				a.hit = f.PrefixHitTokens
				if a.wcfg != nil {
					a.wcfg = nil // rebuilt below with the hit
				}
			}
		}
		if why := set(at, f.To, what); why != "" {
			return why
		}
	}
	switch pr[f.Proc].Role {
	case obslog.RolePrefill:
		if why := set(&a.p, f.Proc, "prefill"); why != "" {
			return why
		}
	case obslog.RoleDecode:
		if why := set(&a.d, f.Proc, "decode"); why != "" {
			return why
		}
	}
	if f.PromptTokens > 0 {
		if a.prompt > 0 && a.prompt != f.PromptTokens {
			return fmt.Sprintf("prompt_tokens %d, but an earlier fact of the attempt gave %d", f.PromptTokens, a.prompt)
		}
		a.prompt = f.PromptTokens
	}
	return ""
}

// add gives an attempt one more fact and advances its search. It reports
// false when the attempt was rejected.
func (j *judge) add(a *attempt, f *obslog.Fact) bool {
	s := -1
	for i := range a.slots {
		if a.slots[i].proc == f.Proc {
			s = i
		}
	}
	if s < 0 {
		if len(a.slots) == maxSlots {
			j.reject(&Rejection{File: f.File, Line: f.Line, Attempt: a.id, Fact: Describe(j.h, f), Invariant: model.NameAttemptIsolation,
				Detail: fmt.Sprintf("more than %d processes log facts of one attempt", maxSlots)})
			return false
		}
		s = len(a.slots)
		if s < cap(a.slots) {
			// A recycled attempt's slot: its list of facts is reused.
			a.slots = a.slots[:s+1]
			a.slots[s].proc, a.slots[s].facts = f.Proc, a.slots[s].facts[:0]
		} else {
			a.slots = append(a.slots, slot{proc: f.Proc})
		}
	}
	idx := len(a.slots[s].facts)
	if idx == maxFacts {
		j.reject(&Rejection{File: f.File, Line: f.Line, Attempt: a.id, Fact: Describe(j.h, f),
			Detail: fmt.Sprintf("more than %d facts of one attempt from one process: no behavior of the tables logs that many", maxFacts)})
		return false
	}
	a.slots[s].facts = append(a.slots[s].facts, f)
	if f.Kind == obslog.WorkerRestarted {
		a.shared++
	}
	a.last = f
	if a.wcfg == nil {
		if a.prompt == 0 {
			return true // sized later: the facts wait
		}
		return j.restart(a)
	}
	if !a.full {
		if j.greedy(a, f, s) {
			if !j.counted(a) {
				return false
			}
			j.greedyDone(a)
			return true
		}
		a.full = true
		a.cur, a.countedSt = nil, nil
		j.dropGreedy(a)
		j.recount(a, nil)
		return j.replay(a, nil)
	}
	var prev []*node
	keep := a.waiting[:0:0]
	for _, n := range a.waiting {
		if int(n.pos[s]) == idx {
			prev = append(prev, n)
		} else {
			keep = append(keep, n)
		}
	}
	a.waiting = keep
	var work []*node
	for _, n := range prev {
		work = j.expand(a, n, work)
	}
	j.drain(a, work)
	return j.settle(a, prev)
}

// restart (re)builds an attempt's world and searches it from the start
// with every fact so far.
func (j *judge) restart(a *attempt) bool {
	w, err := j.world(a.prompt, a.hit)
	if err != nil {
		f := a.last
		j.reject(&Rejection{File: f.File, Line: f.Line, Attempt: a.id, Fact: Describe(j.h, f),
			Detail: fmt.Sprintf("the attempt (%d prompt tokens) does not fit the configuration: %v", a.prompt, err)})
		return false
	}
	if j.carry(a, w) {
		f := a.last
		if j.greedy(a, f, slices.IndexFunc(a.slots, func(sl slot) bool { return sl.proc == f.Proc })) {
			if !j.counted(a) {
				return false
			}
			j.greedyDone(a)
			return true
		}
		a.full, a.cur, a.countedSt = true, nil, nil
		j.dropGreedy(a)
		return j.replay(a, nil)
	}
	j.enter(a, w)
	if !a.full {
		a.cur, a.tally, a.countedSt = j.root(a), tally{}, nil
		a.ex.Reset()
		a.chain, a.live = append(a.chain[:0], chainNode{n: a.cur, st: a.cur.st}), 0
		all := j.all[:0]
		for _, sl := range a.slots {
			all = append(all, sl.facts...)
		}
		slices.SortFunc(all, func(x, y *obslog.Fact) int { return x.Seq - y.Seq })
		ok := true
		for _, f := range all {
			s := slices.IndexFunc(a.slots, func(sl slot) bool { return sl.proc == f.Proc })
			if !j.greedy(a, f, s) {
				ok = false
				break
			}
		}
		clear(all)
		j.all = all[:0]
		if ok {
			if !j.counted(a) {
				return false
			}
			j.greedyDone(a)
			return true
		}
		a.full, a.cur = true, nil
		j.dropGreedy(a)
	}
	return j.replay(a, nil)
}

func (j *judge) sortedOpen() []*attempt {
	out := make([]*attempt, 0, len(j.att))
	for _, a := range j.att {
		out = append(out, a)
	}
	sort.Slice(out, func(x, y int) bool { return out[x].seq < out[y].seq })
	return out
}
