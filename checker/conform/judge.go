package conform

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
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
	chk   *checker.Checker
	bound int
	maxF  int
	open  bool

	procs   []procState
	routers []int // the router processes
	att     map[string]*attempt
	seq     int // attempts made, for their order
	// gone is every attempt the judge forgot once an explanation
	// finished it: attempt ids are never reused, so a fact about one
	// after its end is judged against what it ended holding, whether or
	// not its blocks were evicted since. lateHeld is the ids of those
	// with a late fact held (lateFact), in the order they came.
	gone map[string]finished
	// held is the late fact held for a finished attempt (finished.held).
	held     map[string]*obslog.Fact
	lateHeld []string
	rep      Report

	ledgers []ledger

	moves   []checker.Move
	firings []checker.Firing
	cov     *checker.Coverage
	labels  []obslog.Label
	quiet   []quietStep

	// worlds is the attempts' world configurations by prompt and prefix
	// hit: attempts of one size share one, so their states compare equal
	// and greedy's searches are remembered across them (memo).
	worlds map[[2]int64]*model.Config
	memo   map[uint64][]*greedyMemo
	memoN  int
}

type procState struct {
	gen     int64
	seen    bool
	restart *obslog.Fact // its last restart
	// where the current generation began, for stale facts
	since string
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
	wcfg    *model.Config
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
	full    bool
	cur     *node
	cut     bool // the step bound cut the search at this level
	everCut bool
	fcut    bool // a fault was refused at this level
	last    *obslog.Fact
	broken  *model.Violation // a step an explanation would need broke this
	// furthest is the explanations that explained the most facts, for
	// the report when none goes further.
	furthest []*node
	// held is what the attempt counts in its workers' ledgers.
	held [2]model.Holdings
}

// finished is what the judge keeps of an attempt it forgot: little
// enough (28 bytes beside its id) that every attempt of a long log fits:
// ids are never reused, so none may be forgotten entirely.
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
}

// maxFurthest bounds the furthest explanations kept for a report.
const maxFurthest = 64

type node struct {
	// st is the world and the machines; nodes that differ only in what
	// they explained share it. stKey is its hash.
	st       *checker.State
	stKey    uint64
	pos      [maxSlots]uint16
	owed     [maxOwed]obslog.Label
	owedN    uint8
	silent   uint8
	faults   uint8
	consumed uint32
	// hungry: the node may explain a fact not read yet.
	hungry bool
	// depth is the steps and facts from the attempt's start: of two
	// explanations of as many facts, a report shows the shorter.
	depth  uint16
	parent *node
	fact   *obslog.Fact // the fact this node explained, or nil
	move   checker.Move // the step that made this node (none: a fact owed)
	// succ is, once the node was expanded, its logged steps: a node
	// expanded again (a fact it may explain arrived) matches the fact
	// against them without stepping the world again.
	succ     []succ
	labels   []obslog.Label
	expanded bool
}

// succ is a logged step of a node: the move and what it makes observable.
type succ struct {
	m checker.Move
	// off and mn locate what the step makes observable in the node's
	// labels.
	off uint16
	mn  uint8
	// lazy: the labels hold only the step's first fact, known without
	// taking it; the step is taken when a fact of that kind arrives.
	lazy bool
}

// key is a node's identity for the search: its state, what it explained
// and owes, and the faults it used (they count toward a bound, so two
// paths with different counts may go different ways), hashed with a fixed
// hash (the same on every run: the search's course, and so its report,
// never depends on the process).
func (n *node) key() uint64 {
	h := n.stKey
	for _, p := range n.pos {
		h = mix(h, uint64(p))
	}
	h = mix(h, uint64(n.owedN)|uint64(n.faults)<<8)
	for _, l := range n.owed[:n.owedN] {
		h = mix(h, uint64(l.Kind)|uint64(l.By)<<8|uint64(l.Stage)<<16|uint64(l.Outcome)<<24|uint64(l.Timer)<<32)
		h = mix(h, uint64(l.Blocks))
		h = mix(h, uint64(l.Pages))
		h = mix(h, uint64(l.Slot))
		h = mix(h, uint64(l.Headroom))
		h = mix(h, uint64(l.Tokens))
	}
	return h
}

func mix(h, v uint64) uint64 {
	h ^= v
	h *= 0x9e3779b97f4a7c15
	return h ^ h>>29
}

// stateKey hashes a state's canonical packing.
func (j *judge) stateKey(st *checker.State) uint64 {
	h := uint64(0x68616e646f666663)
	for _, w := range j.chk.Key(st) {
		h = mix(h, w)
	}
	return h
}

// setState gives a node a new state, judged by the state invariants: a
// state that breaks one explains nothing.
func (j *judge) setState(a *attempt, n *node, st *checker.State) bool {
	if v := j.chk.CheckState(st); v != nil {
		a.broken = v
		return false
	}
	n.st, n.stKey = st, j.stateKey(st)
	return true
}

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
		p = checker.Generated()
	}
	budget := checker.Budget{}
	for f := range budget {
		budget[f] = checker.MaxBudget
	}
	chk, err := checker.New(p, &checker.Config{World: *c.AttemptWorld(1, 0), Budget: budget, Renewal: c.Renewal, Commands: c.Commands},
		checker.Run{Name: "conform", Policy: h.Policy, Engine: h.Engine})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInput, err)
	}
	j := &judge{h: h, cfg: &c, chk: chk, bound: opt.Bound, maxF: opt.MaxFaults, open: opt.Open,
		procs: make([]procState, len(h.Processes)), att: map[string]*attempt{}, gone: map[string]finished{}, held: map[string]*obslog.Fact{}, worlds: map[[2]int64]*model.Config{}, memo: map[uint64][]*greedyMemo{}, cov: checker.NewCoverage(p.Spec())}
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
	j.cov.Log = &j.firings
	for i, pr := range h.Processes {
		if pr.Role == obslog.RoleRouter {
			j.routers = append(j.routers, i)
		}
	}
	j.rep = Report{Verdict: Explained, Policy: h.Policy.String(), Engine: h.Engine.String(), Bound: j.bound, MaxFaults: j.maxF}
	j.initLedgers(opt.Config != nil || h.Config != nil)
	return j, nil
}

func (j *judge) report() *Report {
	r := j.rep
	return &r
}

// fact takes one fact of the logs.
func (j *judge) fact(f *obslog.Fact) error {
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
		// restart; end gives it one.
		for _, a := range j.sortedOpen() {
			if (a.p == f.Proc || a.d == f.Proc) && j.logged(a, f.Proc) {
				if !j.add(a, f) {
					return nil
				}
			}
		}
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
	a := j.att[f.Attempt]
	if a == nil {
		if e, ok := j.gone[f.Attempt]; ok {
			j.late(f, &e)
			j.gone[f.Attempt] = e
			return nil
		}
		j.seq++
		a = &attempt{id: f.Attempt, seq: j.seq, p: -1, d: -1}
		j.att[f.Attempt] = a
		j.rep.Attempts++
		j.rep.PeakOpen = max(j.rep.PeakOpen, len(j.att))
	}
	if why := j.bind(a, f); why != "" {
		j.reject(&Rejection{File: f.File, Line: f.Line, Attempt: f.Attempt, Fact: Describe(j.h, f), Invariant: model.NameAttemptIsolation, Detail: why})
		return nil
	}
	j.add(a, f)
	return nil
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
		a.slots = append(a.slots, slot{proc: f.Proc})
		s = len(a.slots) - 1
	}
	idx := len(a.slots[s].facts)
	if idx == maxFacts {
		j.reject(&Rejection{File: f.File, Line: f.Line, Attempt: a.id, Fact: Describe(j.h, f),
			Detail: fmt.Sprintf("more than %d facts of one attempt from one process: no behavior of the tables logs that many", maxFacts)})
		return false
	}
	a.slots[s].facts = append(a.slots[s].facts, f)
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
		a.cur = nil
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
	size := [2]int64{a.prompt, a.hit}
	cfg := j.worlds[size]
	if cfg == nil {
		cfg = j.cfg.AttemptWorld(model.Tokens(a.prompt), model.Tokens(a.hit))
		// The worker may have queued the prefill for room: no fact says.
		cfg.DeferAdmission = true
		if err := cfg.Prepare(); err != nil {
			f := a.last
			j.reject(&Rejection{File: f.File, Line: f.Line, Attempt: a.id, Fact: Describe(j.h, f),
				Detail: fmt.Sprintf("the attempt (%d prompt tokens) does not fit the configuration: %v", a.prompt, err)})
			return false
		}
		if len(j.worlds) == maxWorlds {
			// Many sizes: few attempts share one, and each configuration
			// is kilobytes; the attempts keep theirs.
			clear(j.worlds)
		}
		j.worlds[size] = cfg
	}
	a.wcfg = cfg
	if !a.full {
		a.cur = j.root(a)
		var all []*obslog.Fact
		for _, sl := range a.slots {
			all = append(all, sl.facts...)
		}
		sort.Slice(all, func(x, y int) bool { return all[x].Seq < all[y].Seq })
		ok := true
		for _, f := range all {
			s := slices.IndexFunc(a.slots, func(sl slot) bool { return sl.proc == f.Proc })
			if !j.greedy(a, f, s) {
				ok = false
				break
			}
		}
		if ok {
			if !j.counted(a) {
				return false
			}
			j.greedyDone(a)
			return true
		}
		a.full, a.cur = true, nil
	}
	return j.replay(a, nil)
}

func (j *judge) root(a *attempt) *node {
	st := j.chk.Initial()
	st.W = model.NewWorld(a.wcfg)
	st.B = j.chk.Budget()
	return &node{st: &st, stKey: j.stateKey(&st)}
}

// greedy explains the next fact from the attempt's current explanation:
// by a fact the explanation owes, by a restart the logs name, or by the
// first step, after as few unlogged steps as can be (none of them a
// fault), that makes it observable first of its process.
func (j *judge) greedy(a *attempt, f *obslog.Fact, s int) bool {
	n := a.cur
	for i := 0; i < int(n.owedN) && f.Kind != obslog.WorkerRestarted; i++ {
		l := &n.owed[i]
		if !j.logsIt(a, l, f) {
			continue
		}
		// The process owes facts of earlier steps: this is the next.
		if !firstOfItsProcess(n.owed[:n.owedN], i) || !matches(f, l) {
			return false
		}
		a.cur = j.payOwed(n, i, s, f)
		return true
	}
	if f.Kind == obslog.WorkerRestarted {
		k := int8(0)
		if f.Proc == a.d {
			k = 1
		}
		c := j.child(n)
		ns := *n.st
		ns.B = j.chk.Budget()
		j.firings = j.firings[:0]
		if _, v := j.chk.Apply(&ns, checker.Move{Kind: checker.MvRestart, H: -1, Arg: k}, j.cov); v != nil || !j.setState(a, c, &ns) {
			return false
		}
		j.forgive(a, c, f.Proc)
		c.pos[s]++
		c.consumed++
		c.fact = f
		a.cur = c
		return true
	}
	// Attempts of one size go through the same states: the search from
	// a state for a fact is done once and replayed (greedyMemo).
	mk := j.memoKey(a, n, f)
	for _, e := range j.memo[mk.hash] {
		if e.key == mk && *e.from == *n.st {
			if e.steps == nil {
				return false
			}
			a.cur = j.memoReplay(n, e, s, f)
			return true
		}
	}
	e := &greedyMemo{key: mk, from: n.st}
	if j.memoN == maxMemo {
		clear(j.memo)
		j.memoN = 0
	}
	j.memo[mk.hash] = append(j.memo[mk.hash], e)
	j.memoN++
	frontier := []*node{n}
	var seen map[uint64][]*node
	for depth := 0; len(frontier) > 0; depth++ {
		var next []*node
		for _, x := range frontier {
			if c := j.explainStep(a, x, f, s, depth < j.bound, &next); c != nil {
				for y := c; y != n; y = y.parent {
					e.steps = append(e.steps, memoStep{m: y.move, st: y.st, stKey: y.stKey})
				}
				slices.Reverse(e.steps)
				e.owed, e.owedN = c.owed, c.owedN
				a.cur = c
				return true
			}
		}
		frontier, seen = j.fresh(next, seen)
	}
	return false
}

// maxWorlds bounds the attempts' world configurations kept for attempts
// to come.
const maxWorlds = 64

// maxMemo bounds the searches greedy remembers.
const maxMemo = 1 << 9

// greedyMemo is greedy's search from a state for a fact: the steps to
// the node that explains it (nil: none does) and what that node owes.
type greedyMemo struct {
	key   memoKey
	from  *checker.State
	steps []memoStep
	owed  [maxOwed]obslog.Label
	owedN uint8
}

type memoStep struct {
	m     checker.Move
	st    *checker.State
	stKey uint64
}

// memoKey is all that greedy's search reads beside the state: what the
// node owes, the fact's kind and figures, which side logs it, and what
// the attempt's processes record.
type memoKey struct {
	hash uint64
	// size is the attempt's prompt and prefix hit: a state's hash leaves
	// out its configuration.
	size       [2]int64
	owed       [maxOwed]obslog.Label
	owedN      uint8
	kind       obslog.Kind
	stage      model.Side
	has        uint32
	figs       [8]int64
	outcome    model.Outcome
	timer      model.Timer
	side       int8
	recP, recD obslog.KindSet
	p, d       bool
}

func (j *judge) memoKey(a *attempt, n *node, f *obslog.Fact) memoKey {
	k := memoKey{size: [2]int64{a.prompt, a.hit}, owed: n.owed, owedN: n.owedN, kind: f.Kind, stage: f.Stage, outcome: f.Outcome, timer: f.Timer, side: 2, p: a.p >= 0, d: a.d >= 0}
	for i, g := range obslog.Kinds[f.Kind].Figures {
		if f.HasFigure(g) {
			k.has |= 1 << i
			k.figs[i] = figure(f, g)
		}
	}
	switch {
	case f.Proc == a.p:
		k.side = 0
	case f.Proc == a.d:
		k.side = 1
	case j.h.Processes[f.Proc].Role != obslog.RoleRouter:
		k.side = 3
	}
	if a.p >= 0 {
		k.recP = j.h.Processes[a.p].Records
	}
	if a.d >= 0 {
		k.recD = j.h.Processes[a.d].Records
	}
	h := mix(mix(mix(n.stKey, uint64(k.size[0])), uint64(k.size[1])), uint64(k.kind)|uint64(k.side)<<8|uint64(k.has)<<16|uint64(k.owedN)<<48)
	for _, v := range k.figs {
		h = mix(h, uint64(v))
	}
	for _, l := range n.owed[:n.owedN] {
		h = mix(h, uint64(l.Kind)|uint64(l.By)<<8|uint64(l.Blocks)<<16)
	}
	k.hash = h
	return k
}

// memoReplay is the node a remembered search reaches from n: the same
// nodes explainStep made, sharing their states.
func (j *judge) memoReplay(n *node, e *greedyMemo, s int, f *obslog.Fact) *node {
	x := n
	for i, st := range e.steps {
		c := j.child(x)
		c.st, c.stKey, c.move = st.st, st.stKey, st.m
		if i < len(e.steps)-1 {
			c.silent++
		} else {
			c.pos[s]++
			c.consumed++
			c.fact = f
			c.silent = 0
			c.owed, c.owedN = e.owed, e.owedN
		}
		x = c
	}
	return x
}

// fresh keeps the nodes of a breadth-first frontier whose states were not
// seen before.
func (j *judge) fresh(ns []*node, seen map[uint64][]*node) ([]*node, map[uint64][]*node) {
	if len(ns) == 0 {
		return nil, seen
	}
	if seen == nil {
		seen = map[uint64][]*node{}
	}
	out := ns[:0]
next:
	for _, n := range ns {
		for _, m := range seen[n.stKey] {
			if sameState(j.chk, m.st, n.st) {
				continue next
			}
		}
		seen[n.stKey] = append(seen[n.stKey], n)
		out = append(out, n)
	}
	return out, seen
}

// logsIt reports whether fact f is the process that logs label l.
func (j *judge) logsIt(a *attempt, l *obslog.Label, f *obslog.Fact) bool {
	if l.By == obslog.ByRouter {
		return j.h.Processes[f.Proc].Role == obslog.RoleRouter
	}
	return j.logger(a, l) == f.Proc
}

// explainStep tries each move of x: the first whose first fact for f's
// process is f makes the child returned; unlogged ones (no faults) are
// added to silent when more may be taken.
func (j *judge) explainStep(a *attempt, x *node, f *obslog.Fact, s int, more bool, silent *[]*node) *node {
	st, moves := j.movesOf(x)
	for _, m := range moves {
		switch m.Kind {
		case checker.MvLose, checker.MvDelay, checker.MvHang, checker.MvNoShow, checker.MvDuplicate:
			continue
		case checker.MvCancel:
			if f.Kind != obslog.ClientCancelled {
				continue
			}
		case checker.MvAbort:
			if f.Kind != obslog.Aborted {
				continue
			}
		}
		next := st
		j.firings = j.firings[:0]
		if _, v := j.chk.Apply(&next, m, j.cov); v != nil {
			continue
		}
		if (m.Kind == checker.MvDeliver) && ignored(j.firings) {
			continue
		}
		j.labels = obslog.Observe(j.labels[:0], 0, &st, &next, m, j.firings)
		var must [maxOwed]obslog.Label
		mn := 0
		for i := range j.labels {
			if j.mustLog(a, &j.labels[i]) && mn < maxOwed {
				must[mn] = j.labels[i]
				mn++
			}
		}
		if mn == 0 {
			if more && !(m.Kind.Fault() && m.Kind != checker.MvEvict) {
				// Made a node only if no move of x explains f: most
				// facts are explained at once, and then these go.
				j.quiet = append(j.quiet, quietStep{m: m, st: next})
			}
			continue
		}
		for i := 0; i < mn; i++ {
			if !firstOfItsProcess(must[:mn], i) || !j.logsIt(a, &must[i], f) || !matches(f, &must[i]) {
				continue
			}
			owed, on, ok := carry(x, must[:mn], i)
			if !ok {
				continue
			}
			c := j.child(x)
			ns := next
			if !j.setState(a, c, &ns) {
				j.flushQuiet(a, x, silent)
				return nil
			}
			c.move = m
			c.pos[s]++
			c.consumed++
			c.fact = f
			c.silent = 0
			c.owed, c.owedN = owed, on
			j.quiet = j.quiet[:0]
			return c
		}
	}
	j.flushQuiet(a, x, silent)
	return nil
}

// quietStep is an unlogged step explainStep found, not yet a node.
type quietStep struct {
	m  checker.Move
	st checker.State
}

// flushQuiet makes the unlogged steps explainStep found of x nodes of the
// next frontier, in the order found.
func (j *judge) flushQuiet(a *attempt, x *node, silent *[]*node) {
	for i := range j.quiet {
		q := &j.quiet[i]
		c := j.child(x)
		ns := q.st
		if j.setState(a, c, &ns) {
			c.move = q.m
			c.silent++
			*silent = append(*silent, c)
		}
	}
	j.quiet = j.quiet[:0]
}

// counted moves a greedily followed attempt's share of its workers'
// ledgers to its explanation; false when that breaks CapacityRespected,
// rejected at the attempt's last fact.
func (j *judge) counted(a *attempt) bool {
	v := j.recount(a, a.cur)
	if v == nil {
		return true
	}
	f := a.last
	j.reject(&Rejection{File: f.File, Line: f.Line, Attempt: a.id, Fact: Describe(j.h, f), Invariant: v.Invariant,
		Detail: v.Detail, Explained: j.history(a.cur)})
	return false
}

// greedyDone forgets an attempt its explanation finished, when no
// process could log anything more about it.
func (j *judge) greedyDone(a *attempt) {
	n := a.cur
	if n.owedN != 0 || !j.done(n) {
		return
	}
	// A Removed may still come for what its sides keep cached: the
	// record of the finished attempt says which (retire), so the attempt
	// goes now, not when its blocks are evicted, which may be never.
	j.retire(a, n)
}

// greedyEnd is the explanation that ends an attempt followed greedily:
// its own, or one it reaches by unlogged steps.
func (j *judge) greedyEnd(a *attempt) *node {
	n := a.cur
	if n.owedN != 0 {
		return nil
	}
	frontier := []*node{n}
	var seen map[uint64][]*node
	for depth := 0; len(frontier) > 0 && depth <= j.bound; depth++ {
		var next []*node
		for _, x := range frontier {
			if j.open || j.doneAtEnd(x) {
				return x
			}
			j.explainStep(a, x, &obslog.Fact{Kind: 0}, 0, depth < j.bound, &next)
		}
		frontier, seen = j.fresh(next, seen)
	}
	return nil
}

func (j *judge) replay(a *attempt, prev []*node) bool {
	a.seen = map[uint64][]*node{}
	a.waiting = nil
	a.cut, a.fcut = false, false
	st := j.chk.Initial()
	st.W = model.NewWorld(a.wcfg)
	st.B = j.chk.Budget()
	root := &node{st: &st, stKey: j.stateKey(&st)}
	a.seen[root.key()] = []*node{root}
	j.drain(a, []*node{root})
	return j.settle(a, prev)
}

// drain expands nodes until none is left to expand.
func (j *judge) drain(a *attempt, work []*node) {
	for len(work) > 0 {
		n := work[len(work)-1]
		work = work[:len(work)-1]
		work = j.expand(a, n, work)
	}
}

// settle looks at an attempt after its search advanced: retired when it
// finished, searched again with more unlogged faults, or rejected.
func (j *judge) settle(a *attempt, prev []*node) bool {
	if len(a.waiting) == 0 {
		if !a.full {
			a.full = true
			return j.replay(a, prev)
		}
		if a.fcut && a.level < j.maxF {
			a.level++
			return j.replay(a, prev)
		}
		if j.attachSilent(a) {
			return j.replay(a, nil)
		}
		j.dead(a, prev)
		return false
	}
	// An attempt is over when some explanation finished it and none
	// could explain a fact still to come: its memory goes.
	var fin *node
	for _, n := range a.waiting {
		if !j.caughtUp(a, n) {
			continue
		}
		// A finished explanation waits only for the Removed of what its
		// sides keep cached, which the record of the finished attempt
		// judges (retire): it does not keep the attempt open.
		over := n.owedN == 0 && j.done(n)
		if n.hungry && !(over && j.onlyRemovals(n)) {
			return true
		}
		if fin == nil && over {
			fin = n
		}
	}
	if fin != nil {
		j.retire(a, fin)
	}
	return true
}

// onlyRemovals reports whether every logged step a node has is a cache's
// eviction publishing Removed.
func (j *judge) onlyRemovals(n *node) bool {
	for _, sc := range n.succ {
		if !sc.lazy && sc.mn == 0 {
			continue // a step that explains nothing
		}
		if sc.lazy || sc.m.Kind != checker.MvEvict {
			return false
		}
	}
	return true
}

// done reports whether a node's attempt finished and returned everything.
// While the logs go on, a transfer still running keeps the attempt open:
// its end may yet be logged.
func (j *judge) done(n *node) bool {
	return j.chk.Finished(n.st, 0) && n.st.W.HandoffDrained(0)
}

// doneAtEnd reports whether a node's attempt is finished when the logs
// end, as docs/conform.md defines it: both sides terminal, and no block,
// page, slot, booking, timer or in-flight count held. A transfer that
// never ended (hung) holds none of them once both sides released what it
// read and wrote, so it does not keep the attempt unfinished.
func (j *judge) doneAtEnd(n *node) bool {
	if !j.chk.Finished(n.st, 0) {
		return false
	}
	w := &n.st.W
	if w.H[0].Xfer != model.XferRunning {
		return w.HandoffDrained(0)
	}
	cp := *w
	cp.H[0].Xfer = model.XferFailed
	return cp.HandoffDrained(0)
}

func (j *judge) caughtUp(a *attempt, n *node) bool {
	for s := range a.slots {
		if int(n.pos[s]) < len(a.slots[s].facts) {
			return false
		}
	}
	return true
}

func (j *judge) retire(a *attempt, n *node) {
	j.account(a, n)
	j.recount(a, nil)
	delete(j.att, a.id)
	e := finished{p: int16(a.p), d: int16(a.d), removed: j.stillRemoved(a, n), line: int32(a.last.Line)}
	e.file = uint16(max(0, slices.Index(j.rep.Files, a.last.File)))
	for k, p := range []int{a.p, a.d} {
		if p >= 0 {
			e.gen[k] = int32(j.procs[p].gen)
		}
	}
	// A copy of the id: the record must not keep what it was cut from.
	j.gone[strings.Clone(a.id)] = e
}

// stillRemoved is, for each side of a finished explanation, the blocks of
// the Removed its process may still log (a cache evicting what the index
// advertises), or -1.
func (j *judge) stillRemoved(a *attempt, n *node) [2]int32 {
	out := [2]int32{-1, -1}
	for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
		x := &n.st.W.H[0]
		if x.Worker(sd) < 0 || !(sd == model.SourceSide && x.SrcIndexed || sd == model.DestinationSide && x.Published) {
			continue
		}
		next := *n.st
		next.B = j.chk.Budget()
		j.firings = j.firings[:0]
		m := checker.Move{Kind: checker.MvEvict, H: 0, Arg: int8(sd)}
		if _, v := j.chk.Apply(&next, m, j.cov); v != nil {
			continue
		}
		for _, l := range obslog.Observe(j.labels[:0], 0, n.st, &next, m, j.firings) {
			if l.Kind == obslog.Removed && j.mustLog(a, &l) {
				out[sd] = l.Blocks
			}
		}
	}
	return out
}

// late judges a fact about an attempt that an explanation finished, which
// the judge forgot: the only facts a finished attempt may still log are
// the Removed of the blocks its sides keep cached and the index
// advertises. Anything else is judged by what it would physically do to
// an attempt that had released everything: a release is a second one
// (ExactlyOnceRelease), a Removed one of blocks the index does not
// advertise (IndexMatchesCache), a fact of the attempt's work a second
// attempt under the same id (AttemptIsolation). A fact that does nothing
// physical by itself (a cancel taken, a timer acted on) is held until the
// next late fact of its process, which says what it led to, or the end.
func (j *judge) late(f *obslog.Fact, e *finished) {
	sd := -1
	switch {
	case f.Proc == int(e.p):
		sd = int(model.SourceSide)
	case f.Proc == int(e.d):
		sd = int(model.DestinationSide)
	}
	name := j.h.Processes[f.Proc].Name
	end := j.endOf(e)
	held := j.held[f.Attempt]
	r := &Rejection{File: f.File, Line: f.Line, Attempt: f.Attempt, Fact: Describe(j.h, f), Allowed: j.lateAllowed(e)}
	if f.Kind == obslog.Removed {
		if sd >= 0 && e.removed[sd] >= 0 && int64(e.gen[sd]) == f.Gen && (!f.HasFigure(obslog.FigBlocks) || f.Blocks == int64(e.removed[sd])) {
			e.removed[sd] = -1
			return
		}
		r.Invariant = model.NameIndexMatchesCache
		switch {
		case sd >= 0 && e.removed[sd] >= 0 && int64(e.gen[sd]) == f.Gen:
			r.Detail = fmt.Sprintf("%s publishes Removed for %d blocks of the attempt, and the index advertises %d of them: Removed is published for what was Stored", name, f.Blocks, e.removed[sd])
		default:
			r.Detail = fmt.Sprintf("%s publishes Removed for blocks of the attempt the index does not advertise: the attempt ended at %s, and %s had no Stored of it left (never stored, or already removed): nothing is Removed that was not Stored", name, end, name)
		}
		j.reject(r)
		return
	}
	if held != nil && held.Proc != f.Proc {
		j.rejectHeld(f.Attempt, e)
		return
	}
	switch f.Kind {
	case obslog.SourceReleased, obslog.ReservationReleased, obslog.DecodeReleased, obslog.PrefillStopped:
		r.Invariant = model.NameExactlyOnceRelease
		r.Detail = fmt.Sprintf("%s logs %s for the attempt after its end at %s, where both sides had already released everything they held: a release happens exactly once", name, f.Kind, end)
		if held != nil {
			r.Detail += fmt.Sprintf(" (it follows %s at %s)", held.Kind, held.Where())
		}
	case obslog.OutcomeReported:
		r.Detail = fmt.Sprintf("%s reports a terminal outcome for the attempt after its end at %s, where both sides had reported theirs: a finished side takes no more steps", name, end)
	default:
		if physics[f.Kind] == nil && f.Kind != obslog.Routed && held == nil && sd >= 0 {
			j.held[f.Attempt] = f
			j.lateHeld = append(j.lateHeld, f.Attempt)
			return
		}
		if held != nil {
			j.rejectHeld(f.Attempt, e)
			return
		}
		r.Invariant = model.NameAttemptIsolation
		r.Detail = fmt.Sprintf("%s logs %s of attempt %s after its end at %s: attempt ids are never reused, so this is a second attempt under the same id", name, f.Kind, f.Attempt, end)
	}
	j.reject(r)
}

// rejectHeld rejects the late fact held for a finished attempt: nothing
// it led to explains it.
func (j *judge) rejectHeld(id string, e *finished) {
	f := j.held[id]
	j.reject(&Rejection{File: f.File, Line: f.Line, Attempt: f.Attempt, Fact: Describe(j.h, f), Allowed: j.lateAllowed(e),
		Detail: fmt.Sprintf("%s logs %s for the attempt after its end at %s: a finished side takes no more steps", j.h.Processes[f.Proc].Name, f.Kind, j.endOf(e))})
}

// endOf is where a finished attempt's last fact was.
func (j *judge) endOf(e *finished) string {
	return fmt.Sprintf("%s:%d", j.rep.Files[e.file], e.line)
}

// lateAllowed is what a finished attempt's processes may still log.
func (j *judge) lateAllowed(e *finished) []string {
	var out []string
	for sd, by := range []obslog.Who{obslog.BySource, obslog.ByDestination} {
		if e.removed[sd] >= 0 {
			out = append(out, obslog.Label{Kind: obslog.Removed, By: by, Blocks: e.removed[sd]}.String())
		}
	}
	return out
}

// account adds an explanation's figures to the report.
func (j *judge) account(a *attempt, n *node) {
	if a.everCut || a.cut {
		j.rep.BoundReached++
	}
	if a.level > 0 {
		j.rep.Escalated++
	}
	gap := 0
	for x := n; x != nil && x.parent != nil; x = x.parent {
		if x.fact != nil {
			gap = 0
			continue
		}
		j.rep.Unlogged++
		if x.move.Kind.Fault() {
			j.rep.FaultsUsed++
		}
		gap++
		j.rep.LongestGap = max(j.rep.LongestGap, gap)
	}
}

func (j *judge) push(a *attempt, n *node, work []*node) []*node {
	k := n.key()
	for _, m := range a.seen[k] {
		if j.same(m, n) {
			return work
		}
	}
	a.seen[k] = append(a.seen[k], n)
	return append(work, n)
}

// same reports whether two nodes are one for the search: the same state
// (by its canonical key), what they explained and owe, and faults used.
func (j *judge) same(x, y *node) bool {
	if x.pos != y.pos || x.owedN != y.owedN || x.owed != y.owed || x.faults != y.faults {
		return false
	}
	return sameState(j.chk, x.st, y.st)
}

// sameState reports whether two states are one: equal, or with the same
// canonical key.
func sameState(c *checker.Checker, x, y *checker.State) bool {
	return x == y || *x == *y || c.Key(x) == c.Key(y)
}

func (j *judge) child(n *node) *node {
	c := *n
	c.parent = n
	if c.depth < maxFacts {
		c.depth++
	}
	c.fact = nil
	c.move = checker.Move{}
	c.succ = nil
	c.labels = nil
	c.expanded = false
	c.hungry = false
	return &c
}

// mustLog reports whether some process that would log a label records
// its kind: a fact that happens without its line cannot explain a log
// that records it.
func (j *judge) mustLog(a *attempt, l *obslog.Label) bool {
	pr := j.h.Processes
	switch l.By {
	case obslog.ByRouter:
		for _, p := range j.routers {
			if pr[p].Records.Has(l.Kind) {
				return true
			}
		}
		return false
	case obslog.BySource:
		if a.p >= 0 {
			return pr[a.p].Records.Has(l.Kind)
		}
		return j.allOfRole(obslog.RolePrefill, l.Kind)
	default:
		if a.d >= 0 {
			return pr[a.d].Records.Has(l.Kind)
		}
		return j.allOfRole(obslog.RoleDecode, l.Kind)
	}
}

func (j *judge) allOfRole(r obslog.Role, k obslog.Kind) bool {
	for _, p := range j.h.Processes {
		if p.Role == r && !p.Records.Has(k) {
			return false
		}
	}
	return true
}

// logger is the process that logs a side's label, or -1 while unknown.
func (j *judge) logger(a *attempt, l *obslog.Label) int {
	if l.By == obslog.BySource {
		return a.p
	}
	return a.d
}

// consume tries to explain the head facts of the slots by label l. It
// returns the children and whether some process that would log l has no
// fact to match yet (the node then waits for one).
func (j *judge) consume(a *attempt, n *node, l *obslog.Label, make func(s int, f *obslog.Fact)) (waits bool) {
	try := func(p int) {
		s := -1
		for i := range a.slots {
			if a.slots[i].proc == p {
				s = i
			}
		}
		if s < 0 || int(n.pos[s]) >= len(a.slots[s].facts) {
			waits = true
			return
		}
		if f := a.slots[s].facts[n.pos[s]]; matches(f, l) {
			make(s, f)
		}
	}
	if l.By == obslog.ByRouter {
		for _, p := range j.routers {
			if j.h.Processes[p].Records.Has(l.Kind) {
				try(p)
			}
		}
		return waits
	}
	p := j.logger(a, l)
	if p < 0 {
		return true
	}
	try(p)
	return waits
}

// payOwed is the node that explains fact f, of slot s, by the label n
// owes at i.
func (j *judge) payOwed(n *node, i, s int, f *obslog.Fact) *node {
	c := j.child(n)
	c.pos[s]++
	c.consumed++
	c.fact = f
	copy(c.owed[i:], c.owed[i+1:c.owedN])
	c.owed[c.owedN-1] = obslog.Label{}
	c.owedN--
	c.silent = 0
	return c
}

// carry is what a node owes after a step that makes must observable and
// whose fact i it explains: what it owed before, then the step's other
// facts. A process's facts come in that order, so the fact explained
// must be its process's first: ok is false when the process still owes
// earlier ones (or when too many are owed).
func carry(n *node, must []obslog.Label, i int) (owed [maxOwed]obslog.Label, on uint8, ok bool) {
	for _, l := range n.owed[:n.owedN] {
		if l.By == must[i].By {
			return owed, 0, false
		}
	}
	if int(n.owedN)+len(must)-1 > maxOwed {
		return owed, 0, false
	}
	copy(owed[:], n.owed[:n.owedN])
	k := int(n.owedN)
	for x := range must {
		if x != i {
			owed[k] = must[x]
			k++
		}
	}
	return owed, uint8(k), true
}

// forgive drops the facts a node owes process p, which restarted: a
// process may die after a step and before it logs what the step did (a
// route that reached it as it died, a line it had not written), and the
// new process logs nothing of the old one's attempts.
func (j *judge) forgive(a *attempt, n *node, p int) {
	k := 0
	for _, l := range n.owed[:n.owedN] {
		if l.By == obslog.ByRouter || j.logger(a, &l) != p {
			n.owed[k] = l
			k++
		}
	}
	for i := k; i < int(n.owedN); i++ {
		n.owed[i] = obslog.Label{}
	}
	n.owedN = uint8(k)
}

// owes reports whether a node owes process p a fact.
func (j *judge) owes(a *attempt, n *node, p int) bool {
	for _, l := range n.owed[:n.owedN] {
		if l.By != obslog.ByRouter && j.logger(a, &l) == p {
			return true
		}
	}
	return false
}

// firstOfItsProcess reports whether label i is the first of ls that its
// process logs: the facts one step makes observable to one process come
// in the vocabulary's order (a receipt before what it causes, a release
// before the outcome reported on it).
func firstOfItsProcess(ls []obslog.Label, i int) bool {
	for k := 0; k < i; k++ {
		if ls[k].By == ls[i].By {
			return false
		}
	}
	return true
}

func matches(f *obslog.Fact, l *obslog.Label) bool {
	if f.Kind != l.Kind {
		return false
	}
	if f.Kind == obslog.Routed && f.Stage != l.Stage {
		return false
	}
	for _, g := range obslog.Kinds[f.Kind].Figures {
		if !f.HasFigure(g) {
			continue
		}
		switch g {
		case obslog.FigStage:
		case obslog.FigOutcome:
			if f.Outcome != l.Outcome {
				return false
			}
		case obslog.FigTimer:
			if f.Timer != l.Timer {
				return false
			}
		default:
			if figure(f, g) != labelFigure(l, g) {
				return false
			}
		}
	}
	return true
}

// expand takes every way a node can go on: explain an owed fact, or take
// a step (a restart a log names, or an enabled move), logged or not. A
// node that may explain a fact not read yet waits for it; so does one
// that explained every fact read, for the end of the logs.

func (j *judge) expand(a *attempt, n *node, work []*node) []*node {
	if len(a.furthest) == 0 || n.consumed > a.furthest[0].consumed {
		a.furthest = append(a.furthest[:0], n)
	} else if n.consumed == a.furthest[0].consumed && len(a.furthest) < maxFurthest {
		a.furthest = append(a.furthest, n)
	}
	caught := j.caughtUp(a, n)
	waits := false
	for i := 0; i < int(n.owedN); i++ {
		l := n.owed[i]
		if !firstOfItsProcess(n.owed[:n.owedN], i) {
			continue
		}
		if j.consume(a, n, &l, func(s int, f *obslog.Fact) {
			work = j.push(a, j.payOwed(n, i, s, f), work)
		}) {
			waits = true
		}
	}
	for s := range a.slots {
		if int(n.pos[s]) < len(a.slots[s].facts) {
			if f := a.slots[s].facts[n.pos[s]]; f.Kind == obslog.WorkerRestarted {
				k := int8(0)
				if a.slots[s].proc == a.d {
					k = 1
				}
				c := j.child(n)
				ns := *n.st
				ns.B = j.chk.Budget()
				j.firings = j.firings[:0]
				if _, v := j.chk.Apply(&ns, checker.Move{Kind: checker.MvRestart, H: -1, Arg: k}, j.cov); v != nil {
					a.broken = v
					continue
				}
				if !j.setState(a, c, &ns) {
					continue
				}
				j.forgive(a, c, f.Proc)
				c.pos[s]++
				c.consumed++
				c.fact = f
				c.silent = 0
				work = j.push(a, c, work)
			}
		}
	}
	if !n.expanded {
		n.expanded = true
		work = j.steps(a, n, work)
	}
	for k := range n.succ {
		sc := &n.succ[k]
		if sc.lazy {
			if !j.mayConsume(a, n, &n.labels[sc.off]) {
				if j.awaits(a, n, &n.labels[sc.off]) {
					waits = true
				}
				continue
			}
			j.resolve(a, n, sc)
		}
		var next *checker.State
		var nextKey uint64
		must := n.labels[sc.off : int(sc.off)+int(sc.mn)]
		for i := 0; i < int(sc.mn); i++ {
			l := must[i]
			if !firstOfItsProcess(must, i) {
				continue
			}
			owed, on, ok := carry(n, must, i)
			if !ok {
				continue
			}
			if j.consume(a, n, &l, func(s int, f *obslog.Fact) {
				if next == nil {
					next = j.step(n, sc.m)
					if v := j.chk.CheckState(next); v != nil {
						a.broken = v
						sc.mn = 0 // explains nothing
						return
					}
					nextKey = j.stateKey(next)
				}
				if sc.mn == 0 {
					return
				}
				c := j.child(n)
				c.st, c.stKey = next, nextKey
				c.move = sc.m
				c.pos[s]++
				c.consumed++
				c.fact = f
				c.silent = 0
				c.owed, c.owedN = owed, on
				work = j.push(a, c, work)
			}) {
				waits = true
			}
		}
	}
	if caught || (waits && a.full) {
		n.hungry = waits
		a.waiting = append(a.waiting, n)
	}
	return work
}

// movesOf is a node's state, its budget full, and the moves of the
// attempt it enables. A worker's restart is left out (the logs say when
// one happens) and so is other requests' load (outside the attempt); a
// cache evicting what a finished side keeps is added: the explorer leaves
// it out, since nothing of the protocol follows, but a log may say it
// happened.
func (j *judge) movesOf(n *node) (checker.State, []checker.Move) {
	st := *n.st
	st.B = j.chk.Budget()
	j.moves = j.chk.MovesInto(&st, j.moves[:0])
	for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
		if cluster.Evicts(j.chk, &st, sd) {
			j.moves = append(j.moves, cluster.Evict(sd))
		}
	}
	moves := make([]checker.Move, 0, len(j.moves))
	for _, m := range j.moves {
		switch m.Kind {
		case checker.MvRestart, checker.MvOccupy, checker.MvFreeBackground:
		default:
			moves = append(moves, m)
		}
	}
	return st, moves
}

// steps takes a node's enabled moves once: the unlogged ones make
// children now, the logged ones are kept for the facts that explain them.
func (j *judge) steps(a *attempt, n *node, work []*node) []*node {
	st, moves := j.movesOf(n)
	for _, m := range moves {
		switch m.Kind {
		case checker.MvLose, checker.MvDelay, checker.MvHang, checker.MvNoShow:
			// Never logged: a fault the level may not allow yet.
			if int(n.faults) >= a.level {
				a.fcut = true
				continue
			}
		case checker.MvCancel, checker.MvAbort:
			// Their first fact is known without taking them; most nodes
			// never see it, so the step waits for it.
			l := obslog.Label{Kind: obslog.ClientCancelled, By: obslog.ByRouter}
			if m.Kind == checker.MvAbort {
				l = obslog.Label{Kind: obslog.Aborted, By: obslog.BySource}
				if model.Side(m.Arg) == model.DestinationSide {
					l.By = obslog.ByDestination
				}
			}
			if j.mustLog(a, &l) {
				n.succ = append(n.succ, succ{m: m, off: uint16(len(n.labels)), mn: 1, lazy: true})
				n.labels = append(n.labels, l)
				continue
			}
		}
		// A cache evicting is no fault: caches do it all the time.
		fault := m.Kind.Fault() && m.Kind != checker.MvEvict
		next := st
		j.firings = j.firings[:0]
		_, v := j.chk.Apply(&next, m, j.cov)
		if v != nil {
			a.broken = v
			continue
		}
		if (m.Kind == checker.MvDeliver || m.Kind == checker.MvDuplicate) && ignored(j.firings) {
			// A fact no row acts on (a late one, a duplicate, one at a
			// side that finished) only leaves the channel. Leaving it
			// there instead explains every log the delivery would (a fact
			// in flight need never arrive), so the search skips it.
			continue
		}
		j.labels = obslog.Observe(j.labels[:0], 0, &st, &next, m, j.firings)
		sc := succ{m: m, off: uint16(len(n.labels))}
		for i := range j.labels {
			if j.mustLog(a, &j.labels[i]) && sc.mn < maxOwed {
				n.labels = append(n.labels, j.labels[i])
				sc.mn++
			}
		}
		if sc.mn > 0 {
			n.succ = append(n.succ, sc)
			continue
		}
		if fault && int(n.faults) >= a.level {
			a.fcut = true
			continue
		}
		if int(n.silent) >= j.bound {
			a.cut, a.everCut = true, true
			continue
		}
		c := j.child(n)
		ns := next
		if !j.setState(a, c, &ns) {
			continue
		}
		c.move = m
		c.silent++
		if fault {
			c.faults++
		}
		work = j.push(a, c, work)
	}
	return work
}

// mayConsume reports whether a head fact of the process that logs l is
// of l's kind.
func (j *judge) mayConsume(a *attempt, n *node, l *obslog.Label) bool {
	for s := range a.slots {
		p := int(n.pos[s])
		if p >= len(a.slots[s].facts) {
			continue
		}
		f := a.slots[s].facts[p]
		if f.Kind != l.Kind {
			continue
		}
		if l.By == obslog.ByRouter && j.h.Processes[f.Proc].Role == obslog.RoleRouter || l.By != obslog.ByRouter && f.Proc == j.logger(a, l) {
			return true
		}
	}
	return false
}

// awaits reports whether a process that would log l has no fact left to
// match yet: one may still come.
func (j *judge) awaits(a *attempt, n *node, l *obslog.Label) bool {
	return j.consume(a, n, l, func(int, *obslog.Fact) {})
}

// resolve takes a lazy step: what it makes observable replaces its first
// fact. A step that breaks an invariant or turns out to make nothing
// observable explains no fact.
func (j *judge) resolve(a *attempt, n *node, sc *succ) {
	sc.lazy = false
	next := *n.st
	next.B = j.chk.Budget()
	j.firings = j.firings[:0]
	_, v := j.chk.Apply(&next, sc.m, j.cov)
	sc.mn = 0
	if v != nil {
		a.broken = v
		return
	}
	j.labels = obslog.Observe(j.labels[:0], 0, n.st, &next, sc.m, j.firings)
	sc.off = uint16(len(n.labels))
	for i := range j.labels {
		if j.mustLog(a, &j.labels[i]) && sc.mn < maxOwed {
			n.labels = append(n.labels, j.labels[i])
			sc.mn++
		}
	}
}

// ignored reports whether the rows that fired (if any) did nothing.
func ignored(fs []checker.Firing) bool {
	for _, f := range fs {
		if f.From != f.To || len(f.Actions) > 0 {
			return false
		}
	}
	return true
}

// step is the state a node's move leads to.
func (j *judge) step(n *node, m checker.Move) *checker.State {
	next := *n.st
	next.B = j.chk.Budget()
	j.firings = j.firings[:0]
	j.chk.Apply(&next, m, j.cov)
	return &next
}

func (j *judge) sortedOpen() []*attempt {
	out := make([]*attempt, 0, len(j.att))
	for _, a := range j.att {
		out = append(out, a)
	}
	sort.Slice(out, func(x, y int) bool { return out[x].seq < out[y].seq })
	return out
}

func (j *judge) reject(r *Rejection) {
	if j.rep.Rejection != nil {
		return
	}
	r.Prefix = j.rep.Facts - 1
	j.rep.Rejection = r
	j.rep.Verdict = Rejected
}

// end judges what is open when the logs end. It returns an error when
// the logs do not say enough to judge an attempt (ErrInput).
func (j *judge) end() error {
	// An attempt none of whose facts gives its size cannot be judged: the
	// log lacks what the judgement rests on, which no fact broke.
	for _, a := range j.sortedOpen() {
		if a.wcfg == nil {
			f := a.last
			for _, sl := range a.slots {
				if len(sl.facts) > 0 && sl.facts[0].Seq < f.Seq {
					f = sl.facts[0]
				}
			}
			return fmt.Errorf("%s: %w: no fact of attempt %s gives its prompt_tokens (the prefill router's routed fact should carry them), so it cannot be sized", f.Where(), ErrInput, a.id)
		}
	}
	for _, id := range j.lateHeld {
		if e := j.gone[id]; j.held[id] != nil {
			j.rejectHeld(id, &e)
			return nil
		}
	}
	for _, a := range j.sortedOpen() {
		for _, p := range []int{a.p, a.d} {
			if r := j.procRestart(p); r != nil && !j.logged(a, p) && j.rep.Rejection == nil {
				j.add(a, r)
			}
		}
		if j.rep.Rejection != nil {
			return nil
		}
		if _, open := j.att[a.id]; !open {
			continue
		}
		for {
			if _, open := j.att[a.id]; !open {
				break // a search with more unlogged faults finished it
			}
			if !a.full {
				if best := j.greedyEnd(a); best != nil {
					j.account(a, best)
					break
				}
				a.full, a.cur = true, nil
				if !j.replay(a, nil) {
					return nil
				}
				continue
			}
			if best := j.ended(a); best != nil {
				j.account(a, best)
				break
			}
			if !a.full {
				a.full = true
				if !j.replay(a, nil) {
					return nil
				}
				continue
			}
			// Unlogged faults may be what ended it (a cancel or a lost
			// fact that no line records).
			if a.fcut && a.level < j.maxF {
				a.level++
				if !j.replay(a, nil) {
					return nil
				}
				continue
			}
			j.unfinished(a)
			return nil
		}
	}
	return nil
}

// ended is an explanation of all of an attempt's facts that finished it
// (or any, with Open).
func (j *judge) ended(a *attempt) *node {
	for _, n := range a.waiting {
		if j.caughtUp(a, n) && n.owedN == 0 && (j.open || j.doneAtEnd(n)) {
			return n
		}
	}
	return nil
}

// unfinished rejects an attempt the logs leave holding something, owing
// a fact, or with a fact no explanation reached.
func (j *judge) unfinished(a *attempt) {
	var caught *node
	for _, n := range a.waiting {
		if j.caughtUp(a, n) && n.owedN == 0 {
			caught = n
			break
		}
	}
	if caught == nil {
		j.dead(a, a.waiting)
		return
	}
	f := a.last
	j.reject(&Rejection{File: f.File, Line: f.Line, Attempt: a.id, Fact: Describe(j.h, f), Invariant: model.NameQuiescence,
		Detail: "the logs end with the attempt unfinished: " + j.unfinishedBy(a, caught), Explained: j.history(caught), Allowed: j.allowed(a, []*node{caught})})
}

// unfinishedBy says what keeps an explanation from the end of the logs:
// what its attempt holds, or else the side whose machine did not finish.
func (j *judge) unfinishedBy(a *attempt, n *node) string {
	x := &n.st.W.H[0]
	held := false
	for s := model.SourceSide; s <= model.DestinationSide; s++ {
		held = held || x.InFlight[s]
	}
	if held || x.Src != model.SrcNone || x.Dst != model.DstNone || x.Pending || x.Timers != 0 {
		return n.st.W.DescribeHeld()
	}
	var parts []string
	for sd, p := range []int{a.p, a.d} {
		if p >= 0 && x.Worker(model.Side(sd)) >= 0 && !j.chk.Terminal(n.st, checker.RoleOf(model.Side(sd)), 0) {
			parts = append(parts, fmt.Sprintf("%s never finished its side (no terminal outcome any behavior of the tables reaches from its facts)", j.h.Processes[p].Name))
		}
	}
	if len(parts) == 0 {
		return n.st.W.DescribeHeld()
	}
	return strings.Join(parts, "; ")
}

// dead rejects an attempt no explanation can carry further. The fact
// blamed is the first one the furthest explanations could not explain;
// the invariant named is the one its physical effect breaks in every
// explanation that reached it, if it breaks one in each.
func (j *judge) dead(a *attempt, ns []*node) {
	ns = append(slices.Clone(ns), a.furthest...)
	var best *node
	for _, n := range ns {
		if best == nil || better(n, best) {
			best = n
		}
	}
	// Blame the first fact (in reading order) the furthest explanations
	// cannot take; but a fact whose physical effect breaks an invariant in
	// every one of them is the cause, the others wait on it, so it is
	// blamed first whatever order the logs were read in.
	f := a.last
	var first *model.Violation
	var at []*node
	var figs string
	if best != nil {
		type cand struct {
			f  *obslog.Fact
			at []*node
			v  *model.Violation
			// figs says how the fact's figures differ from those of the
			// same kind every explanation gives there.
			figs string
		}
		var cs []cand
		for s := range a.slots {
			p := int(best.pos[s])
			if p >= len(a.slots[s].facts) {
				continue
			}
			c := cand{f: a.slots[s].facts[p]}
			for _, n := range ns {
				if n.consumed == best.consumed && n.pos[s] == best.pos[s] && !slices.Contains(c.at, n) {
					c.at = append(c.at, n)
				}
			}
			// A fact of a kind the explanations log next, but with other
			// figures, is wrong in its figures: its operation (which
			// takes the attempt's own figures) is not the cause.
			if c.figs = j.wrongFigures(a, c.at, c.f); c.figs == "" {
				c.v = j.breaksInAll(a, c.at, best, c.f)
			}
			cs = append(cs, c)
			// A fact that does nothing physical (a cancel taken, a timer
			// acted on) may be refused only because what it led to is
			// wrong: the process's next facts, up to its first physical
			// one, are judged where it stands, and one that breaks an
			// invariant there is the cause.
			// A source's facts that say why it may release are not
			// passed over: its release is judged on what it had learned.
			for q := p; c.v == nil && q+1 < len(a.slots[s].facts) && j.nothingPhysical(a, a.slots[s].facts[q]); q++ {
				g := a.slots[s].facts[q+1]
				if v := j.breaksInAll(a, c.at, best, g); v != nil {
					cs = append(cs, cand{f: g, at: c.at, v: v})
					break
				}
			}
		}
		sort.Slice(cs, func(x, y int) bool {
			if (cs[x].v != nil) != (cs[y].v != nil) {
				return cs[x].v != nil
			}
			return cs[x].f.Seq < cs[y].f.Seq
		})
		if len(cs) > 0 {
			f, at, first, figs = cs[0].f, cs[0].at, cs[0].v, cs[0].figs
		}
	}
	r := &Rejection{File: f.File, Line: f.Line, Attempt: a.id, Fact: Describe(j.h, f)}
	if a.everCut || a.cut {
		r.Detail = fmt.Sprintf("no explanation within %d unlogged steps between facts and %d unlogged faults; a longer search (--bound) may find one", j.bound, j.maxF)
		j.rep.BoundReached++
		j.reject(r)
		j.rep.Verdict = Inconclusive
		return
	}
	if best != nil {
		r.Explained = j.history(best)
	}
	r.Allowed = j.allowed(a, at)
	all := first != nil
	switch {
	case all && first != nil:
		r.Invariant, r.Detail = first.Invariant, first.Detail
	case figs != "":
		r.Detail = figs
	case best != nil && best.owedN > 0:
		r.Detail = j.outOfOrder(a, best, f)
	case len(at) == 0:
		r.Detail = "no behavior of the tables begins the attempt with this fact"
	default:
		r.Detail = "the tables allow no step here that this fact describes"
	}
	if r.Invariant == "" && a.broken != nil {
		r.Detail += fmt.Sprintf(" (a step that would explain it breaks %s: %s)", a.broken.Invariant, a.broken.Detail)
	}
	j.reject(r)
}

// outOfOrder says what an explanation owes when a fact comes instead:
// the facts the step that explains an earlier one makes observable, which
// each process logs in the vocabulary's order.
func (j *judge) outOfOrder(a *attempt, n *node, f *obslog.Fact) string {
	var names, mine []string
	for _, l := range n.owed[:n.owedN] {
		names = append(names, l.String())
		if j.logsIt(a, &l, f) {
			mine = append(mine, l.String())
		}
	}
	// The fact whose step owes them: the last explained by a step.
	var by *node
	for x := n; x != nil && x.parent != nil && by == nil; x = x.parent {
		if x.fact != nil && x.move.Kind != 0 {
			by = x
		}
	}
	step := "the attempt's previous fact"
	if by != nil {
		step = fmt.Sprintf("%s at %s (step %s)", by.fact.Kind, by.fact.Where(), by.move)
	}
	name := j.h.Processes[f.Proc].Name
	if len(mine) > 0 {
		return fmt.Sprintf("%s logs %s where it owes %s: the step that explains %s also makes it log %s, in this order, and %s never logged %s before this fact", name, f.Kind, mine[0], step, strings.Join(mine, ", "), name, mine[0])
	}
	return fmt.Sprintf("the step that explains %s also makes %s observable first, and %s logs %s instead", step, strings.Join(names, ", "), name, f.Kind)
}

// wrongFigures says how a fact's figures differ from those of the facts
// of its kind its process may log next in every one of the explanations
// ns, or "" when one of them logs it as it is, or none logs its kind.
func (j *judge) wrongFigures(a *attempt, ns []*node, f *obslog.Fact) string {
	if len(obslog.Kinds[f.Kind].Figures) == 0 || len(ns) == 0 {
		return ""
	}
	var want []string
	for i, n := range ns {
		if i == 16 {
			break
		}
		found := false
		for _, l := range j.nextOf(a, n, f) {
			if l.Kind != f.Kind || f.Kind == obslog.Routed && l.Stage != f.Stage {
				continue
			}
			// An outcome or a cause the physics judges (the fact's own
			// operation takes them): only counts and sizes are wrong here.
			if matches(f, &l) || sameCounts(f, &l) {
				return ""
			}
			found = true
			if s := l.String(); !slices.Contains(want, s) {
				want = append(want, s)
			}
		}
		if !found {
			return ""
		}
	}
	sort.Strings(want)
	d := Describe(j.h, f)
	return fmt.Sprintf("%s logs %s, figures no behavior of the tables gives it here: every explanation of the facts before it logs %s", j.h.Processes[f.Proc].Name, d[strings.LastIndex(d, ": ")+2:], strings.Join(want, " or "))
}

// sameCounts reports whether a fact's counts and sizes (its figures other
// than the outcome, the timer and the stage) are a label's.
func sameCounts(f *obslog.Fact, l *obslog.Label) bool {
	for _, g := range obslog.Kinds[f.Kind].Figures {
		switch g {
		case obslog.FigStage, obslog.FigOutcome, obslog.FigTimer:
		default:
			if f.HasFigure(g) && figure(f, g) != labelFigure(l, g) {
				return false
			}
		}
	}
	return true
}

// nextOf is what the process of fact f may log next in explanation n:
// the first fact n owes it, or else the first of its facts in a step n
// may take after unlogged steps of no fault (at most the bound).
func (j *judge) nextOf(a *attempt, n *node, f *obslog.Fact) []obslog.Label {
	var out []obslog.Label
	for k, l := range n.owed[:n.owedN] {
		if firstOfItsProcess(n.owed[:n.owedN], k) && j.logsIt(a, &l, f) {
			return []obslog.Label{l}
		}
	}
	frontier := []*node{n}
	var seen map[uint64][]*node
	for depth := 0; len(frontier) > 0 && depth <= j.bound; depth++ {
		var next []*node
		for _, x := range frontier {
			st, moves := j.movesOf(x)
			for _, m := range moves {
				if m.Kind.Fault() && m.Kind != checker.MvEvict {
					continue
				}
				ns := st
				j.firings = j.firings[:0]
				if _, v := j.chk.Apply(&ns, m, j.cov); v != nil {
					continue
				}
				var must []obslog.Label
				for _, l := range obslog.Observe(nil, 0, &st, &ns, m, j.firings) {
					if j.mustLog(a, &l) {
						must = append(must, l)
					}
				}
				if len(must) == 0 {
					if depth < j.bound {
						c := j.child(x)
						c.st, c.stKey = &ns, j.stateKey(&ns)
						next = append(next, c)
					}
					continue
				}
				for k, l := range must {
					if firstOfItsProcess(must, k) && j.logsIt(a, &l, f) {
						out = append(out, l)
					}
				}
			}
		}
		frontier, seen = j.fresh(next, seen)
	}
	return out
}

// nothingPhysical reports whether a fact changes nothing the physics
// judges: no operation of its own, and not what a source's release is
// judged on (releaseCause).
func (j *judge) nothingPhysical(a *attempt, f *obslog.Fact) bool {
	if physics[f.Kind] != nil || f.Kind == obslog.Removed {
		return false
	}
	if f.Proc != a.p {
		return true
	}
	switch f.Kind {
	case obslog.ReaderCompleted, obslog.TransferDone, obslog.Cancelled, obslog.Aborted, obslog.TransferFailed, obslog.LeaseExpired, obslog.DeadlineExpired:
		return false
	}
	return true
}

// better orders explanations for a report: more facts explained, then
// fewer owed, fewer unlogged faults, fewer steps.
func better(x, y *node) bool {
	switch {
	case x.consumed != y.consumed:
		return x.consumed > y.consumed
	case x.owedN != y.owedN:
		return x.owedN < y.owedN
	case x.faults != y.faults:
		return x.faults < y.faults
	}
	return x.depth < y.depth
}

// breaksInAll is the invariant a fact's physical effect breaks in every
// explanation that reached it (the best one's, when they differ), or nil
// when one of them allows it.
func (j *judge) breaksInAll(a *attempt, at []*node, best *node, f *obslog.Fact) *model.Violation {
	var first *model.Violation
	for _, n := range at {
		v := j.skipped(a, n, f)
		if v == nil {
			v = j.physical(a, n, f)
		}
		if v == nil {
			return nil
		}
		if first == nil || n == best {
			first = v
		}
	}
	return first
}

// skipped judges a fact that comes where an explanation owes its process
// a release: the step that explains the facts before it returns blocks
// the process never said it returned.
func (j *judge) skipped(a *attempt, n *node, f *obslog.Fact) *model.Violation {
	for _, l := range n.owed[:n.owedN] {
		if l.By == obslog.ByRouter || j.logger(a, &l) != f.Proc {
			continue
		}
		var what string
		switch l.Kind {
		case obslog.SourceReleased:
			what = fmt.Sprintf("%d pinned blocks", l.Blocks)
		case obslog.ReservationReleased:
			what = fmt.Sprintf("%d reserved pages", l.Pages)
		case obslog.DecodeReleased:
			what = fmt.Sprintf("%d active blocks", l.Blocks)
		case obslog.PrefillStopped:
			what = fmt.Sprintf("%d compute blocks", l.Blocks)
		default:
			return nil
		}
		if l.Kind == f.Kind {
			return nil
		}
		return &model.Violation{Invariant: model.NameQuiescence, Handoff: 0, Worker: -1,
			Detail: fmt.Sprintf("%s logs %s without returning its %s: every behavior of the tables that explains its facts so far returns them first, and it never says it did", j.h.Processes[f.Proc].Name, f.Kind, what)}
	}
	return nil
}

// history is an explanation's facts and unlogged steps, oldest first.
func (j *judge) history(n *node) []string {
	var out []string
	for x := n; x != nil && x.parent != nil; x = x.parent {
		switch {
		case x.fact != nil && x.move.Kind != 0:
			out = append(out, fmt.Sprintf("%s %s (step %s)", x.fact.Where(), Describe(j.h, x.fact), x.move))
		case x.fact != nil:
			out = append(out, fmt.Sprintf("%s %s", x.fact.Where(), Describe(j.h, x.fact)))
		default:
			out = append(out, "unlogged: "+x.move.String())
		}
	}
	slices.Reverse(out)
	return out
}

// allowed lists what the nodes could have logged next.
func (j *judge) allowed(a *attempt, ns []*node) []string {
	set := map[string]bool{}
	for i, n := range ns {
		if i == 16 {
			break
		}
		// What each process may log next: the first fact it owes, or
		// else the first fact of its own in a step.
		for k, l := range n.owed[:n.owedN] {
			if firstOfItsProcess(n.owed[:n.owedN], k) {
				set[l.String()] = true
			}
		}
		st, moves := j.movesOf(n)
		for _, m := range moves {
			next := st
			j.firings = j.firings[:0]
			if _, v := j.chk.Apply(&next, m, j.cov); v != nil {
				continue
			}
			var must []obslog.Label
			for _, l := range obslog.Observe(nil, 0, &st, &next, m, j.firings) {
				if j.mustLog(a, &l) {
					must = append(must, l)
				}
			}
			for k, l := range must {
				if firstOfItsProcess(must, k) && (l.By == obslog.ByRouter || !j.owes(a, n, j.logger(a, &l))) {
					set[l.String()] = true
				}
			}
		}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
