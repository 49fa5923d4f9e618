package cluster

import (
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// Evicts is the environment's reaction to a side that finished: once the
// side's role machine is terminal, the worker's cache evicts what the
// side keeps there (its pinned or received blocks). The explorer leaves
// the move out, since nothing of the protocol follows it, but a request
// outside a world cannot evict it later, so every driver takes it (the
// simulator, a live worker) or allows it (the conformance judge).
func Evicts(chk *system.System, st *system.State, sd model.Side) bool {
	tx := model.Tx{W: &st.W}
	return tx.CanEvict(0, sd) && chk.Terminal(st, system.RoleOf(sd), 0)
}

// Evict is the move by which the cache evicts what side sd keeps.
func Evict(sd model.Side) system.Move {
	return system.Move{Kind: system.Evict.Move(), H: 0, Arg: int8(sd)}
}

// HangStrikes is when a planned hang strikes a request's transfer: once
// the transfer is all the request waits on (it runs and has not hung
// yet), the moment the checker offers the hang. It reports missed once
// the transfer has ended: the plan's hang found nothing to strike.
func HangStrikes(x *model.Handoff) (now, missed bool) {
	return x.Xfer == model.XferRunning && !x.Hung, x.Xfer.Finished()
}
