package cluster

import (
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// Window is a request's world onto the shared worker counters. The world
// (Cfg, from AttemptWorld) has the request as its only handoff and two
// workers, 0 its prefill worker and 1 its decode worker; each shows the
// counters of the cluster worker behind it, and what the other requests
// hold there as the world's outside holdings, so that every state
// invariant still compares a worker's counters with everything held on
// it. Hold is what the request itself held on each at its last step.
type Window struct {
	Cfg  *model.Config
	Hold [2]model.Holdings
}

// Project shows in st, as world worker i, the counters k of a cluster
// worker on which everything held sums to sum.
func (w *Window) Project(st *system.State, i int, k model.Worker, sum model.Holdings) {
	st.W.W[i] = k
	w.Cfg.SetOutside(i, sum.Minus(w.Hold[i]))
}

// Alone shows in st, as world worker i, counters k that stand for no
// cluster worker yet (the decode worker before decode is routed): nothing
// is held there outside the request.
func (w *Window) Alone(st *system.State, i int, k model.Worker) {
	st.W.W[i] = k
	w.Cfg.SetOutside(i, model.Holdings{})
}

// Held is what the request holds on its two workers in st, after a step.
func (w *Window) Held(st *system.State) [model.MaxWorkers]model.Holdings {
	return st.W.HandoffHoldings(0)
}

// WriteBack is the sum held on the cluster worker behind world worker i
// after a step, from sum before it and what the request holds now (hs,
// from Held), and records hs[i] as what the request holds there.
func (w *Window) WriteBack(i int, sum model.Holdings, hs *[model.MaxWorkers]model.Holdings) model.Holdings {
	out := sum.Minus(w.Hold[i]).Plus(hs[i])
	w.Hold[i] = hs[i]
	return out
}
