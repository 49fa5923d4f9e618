package conform

import (
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// Worlds: each attempt is judged in a world of its own size (its prompt
// and its prefix hit). Attempts of one size share one configuration, so
// their states compare equal and greedy's searches are remembered across
// them (greedyMemo); a configuration is kilobytes, and a log of varied
// sizes would make one per attempt, so one no attempt uses any more is
// recycled for the next size.

// world is the configuration of attempts of one size.
type world struct {
	cfg model.Config
	// the lists the configuration points to, reused with it
	workers  []model.WorkerConfig
	hits     []model.Tokens
	handoffs []model.HandoffConfig
	// id is this incarnation's number: a recycled world is another
	// configuration for greedy's memo, as a new one would be.
	id uint64
	// size is its attempts' prompt and prefix hit: its configuration is
	// the cluster's AttemptWorld of that size (fillWorld).
	size [2]int64
	// refs counts the open attempts judged in it; listed: j.worlds
	// offers it to attempts to come; pinned: an attempt left it for
	// another size and may keep states of it, so it is never recycled.
	refs           int
	listed, pinned bool
	// filled: cfg is the cluster's AttemptWorld of some size (fillWorld);
	// only the size and what Prepare derives from it differ from one
	// size to another.
	filled bool
}

// world is the configuration of attempts of a size, prepared, or an
// error when the size does not fit the cluster's configuration.
func (j *judge) world(prompt, hit int64) (*world, error) {
	size := [2]int64{prompt, hit}
	if w := j.worlds[size]; w != nil {
		return w, nil
	}
	var w *world
	if k := len(j.freeWorlds); k > 0 {
		w = j.freeWorlds[k-1]
		j.freeWorlds = j.freeWorlds[:k-1]
	} else {
		w = new(world)
	}
	j.worldN++
	w.id = j.worldN
	j.fillWorld(w, prompt, hit)
	if err := w.cfg.Prepare(); err != nil {
		return nil, err
	}
	if len(j.worlds) == maxWorlds {
		// Many sizes: few attempts share one.
		for _, x := range j.worlds {
			x.listed = false
			j.release(x)
		}
		clear(j.worlds)
	}
	j.worlds[size] = w
	w.listed = true
	return w, nil
}

// fillWorld makes w's configuration the cluster's AttemptWorld for the
// size, in w's own lists: a configuration the size does not change,
// copied, with the size set where AttemptWorld sets it.
//
// A world filled before (recycled) differs from the template only where
// the size is set, and in what Prepare derives, which it sets again
// whole: only the size is set, not the kilobytes of the configuration
// copied again.
func (j *judge) fillWorld(w *world, prompt, hit int64) {
	w.size = [2]int64{prompt, hit}
	if w.filled {
		for x := range w.hits {
			w.hits[x] = model.Tokens(hit)
		}
		for i := range w.handoffs {
			w.handoffs[i].PromptTokens = model.Tokens(prompt)
		}
		return
	}
	w.filled = true
	t := &j.tmpl
	w.cfg = *t
	w.workers = append(w.workers[:0], t.Workers...)
	n := 0
	for _, wc := range t.Workers {
		n += len(wc.PrefixHit)
	}
	w.hits = append(w.hits[:0], make([]model.Tokens, n)...)
	n = 0
	for i := range w.workers {
		k := len(w.workers[i].PrefixHit)
		if k == 0 {
			continue
		}
		hs := w.hits[n : n+k : n+k]
		for x := range hs {
			hs[x] = model.Tokens(hit)
		}
		w.workers[i].PrefixHit = hs
		n += k
	}
	w.handoffs = append(w.handoffs[:0], t.Handoffs...)
	for i := range w.handoffs {
		w.handoffs[i].PromptTokens = model.Tokens(prompt)
	}
	w.cfg.Workers, w.cfg.Handoffs = w.workers, w.handoffs
	// The worker may have queued the prefill for room: no fact says.
	w.cfg.DeferAdmission = true
}

// enter judges attempt a in world w from now on (a size learned late:
// the prefix hit of its decode worker).
func (j *judge) enter(a *attempt, w *world) {
	if a.world == w {
		return
	}
	if old := a.world; old != nil {
		if a.cur != nil {
			// An explanation followed greedily is the only holder of
			// the old world's states.
			j.freeGreedy(a)
			a.cur, a.countedSt = nil, nil
		}
		// A full search's nodes (the furthest, for a report) may still
		// hold states of the world it leaves.
		old.pinned = old.pinned || a.full
		old.refs--
		j.release(old)
	}
	a.world, a.wcfg = w, &w.cfg
	w.refs++
}

// leave notes that attempt a, forgotten, uses its world no more.
func (j *judge) leave(a *attempt) {
	if w := a.world; w != nil {
		a.world = nil
		w.refs--
		j.release(w)
	}
}

// release recycles a world nothing uses or offers any more.
func (j *judge) release(w *world) {
	if w.refs == 0 && !w.listed && !w.pinned {
		j.freeWorlds = append(j.freeWorlds, w)
	}
}

// carry moves an attempt that learned its prefix hit from the route of
// its decode side into the world of its new size w with the explanation
// it followed greedily so far, and reports whether it did; the route's
// fact (its last) is still to be explained. Otherwise nothing changed,
// and the attempt is searched again from its first fact.
//
// The two worlds differ in the decode side's pricing and in what the
// decode worker caches from the start (the hit's prefix), nothing else.
// Until the decode router routes the attempt, its steps are the prefill
// side's and the routers': none reads or changes the decode worker or the
// decode side's pricing, so the search for each of its facts goes the
// same way in both, and the explanation's state in the new world is its
// state in the old one with the decode worker as the new world starts
// it. That is checked where it can be: the decode worker is as the old
// world started it, the explanation took no fault, no restart and no
// decode step, and the state keeps every invariant in the new world.
// Properties (--props) judge each state and the clock walks the states
// of the explanation: with either, nothing is carried.
func (j *judge) carry(a *attempt, w *world) bool {
	old := a.world
	if !carryLate || old == nil || old == w || a.full || a.cur == nil || j.props != nil || j.clock != nil || a.cur.owedN != 0 {
		return false
	}
	f := a.last
	if f.Kind != obslog.Routed || f.Stage != model.DestinationSide {
		return false
	}
	facts := 0
	for _, sl := range a.slots {
		facts += len(sl.facts)
	}
	if int(a.cur.consumed) != facts-1 {
		return false
	}
	for _, cn := range a.chain {
		if m := cn.move; m.Kind != 0 {
			if _, fault := m.Kind.Spends(); fault || m.Kind == system.MvRouteDecode {
				return false
			}
		}
		if g := cn.fact; g != nil && (g.Kind == obslog.WorkerRestarted || g.Proc == a.d) {
			return false
		}
	}
	st := a.cur.st
	const dw = 1 // the decode worker of an attempt's world (AttemptWorld)
	if st.W.W[dw] != model.NewWorld(&old.cfg).W[dw] {
		return false
	}
	ns := j.takeState()
	*ns = *st
	ns.W.Rebind(&w.cfg)
	ns.W.W[dw] = model.NewWorld(&w.cfg).W[dw]
	if j.chk.CheckState(ns) != nil {
		j.freeStates = append(j.freeStates, ns)
		return false
	}
	// The old world's states go back to the pool; the chain keeps each
	// step's fact and move for a report.
	last := len(a.chain) - 1
	for i := a.live; i <= last; i++ {
		if cn := &a.chain[i]; cn.st != nil {
			j.freeStates = append(j.freeStates, cn.st)
			cn.st = nil
		}
	}
	a.cur.st, a.cur.owns, a.cur.stKey = ns, true, j.stateKey(ns)
	a.chain[last].st, a.live = ns, last
	a.countedSt = nil
	old.refs--
	j.release(old)
	a.world, a.wcfg = w, &w.cfg
	w.refs++
	j.carried++
	return true
}

// carryLate says whether carry may carry an explanation over. A variable
// for the tests: without it, every attempt that learns its hit late is
// searched again from its first fact, and judged alike.
var carryLate = true

// delivers reports whether a move hands a fact in flight to the side it
// is for: a delivery, or a fault struck in place of one that still
// delivers the fact (FaultKinds' Delivers: a duplicate), which a log
// shows as a delivery.
func delivers(k system.MoveKind) bool {
	if k == system.MvDeliver {
		return true
	}
	f, fault := k.Spends()
	return fault && system.FaultKinds[f].Instead == system.MvDeliver && system.FaultKinds[f].Delivers > 0
}
