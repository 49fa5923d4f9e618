package conform

import (
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
	// refs counts the open attempts judged in it; listed: j.worlds
	// offers it to attempts to come; pinned: an attempt left it for
	// another size and may keep states of it, so it is never recycled.
	refs           int
	listed, pinned bool
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
func (j *judge) fillWorld(w *world, prompt, hit int64) {
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
