package cluster

import (
	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/model"
)

// Evicts is the environment's reaction to a side that finished: once the
// side's role machine is terminal, the worker's cache evicts what the
// side keeps there (its pinned or received blocks). The explorer leaves
// the move out, since nothing of the protocol follows it, but a request
// outside a world cannot evict it later, so every driver takes it (the
// simulator, a live worker) or allows it (the conformance judge).
func Evicts(chk *checker.Checker, st *checker.State, sd model.Side) bool {
	tx := model.Tx{W: &st.W}
	return tx.CanEvict(0, sd) && chk.Terminal(st, checker.RoleOf(sd), 0)
}

// Evict is the move by which the cache evicts what side sd keeps.
func Evict(sd model.Side) checker.Move {
	return checker.Move{Kind: checker.MvEvict, H: 0, Arg: int8(sd)}
}
