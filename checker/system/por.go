package system

import (
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// Partial-order reduction (docs/scale.md, "Partial-order reduction").
//
// Moves of one handoff h that touch nothing but h's own record (its role
// machines, channels, timers, registrations and transfer) and workers
// that no other move can reach commute with every other move, as long as
// nothing else can write that record or change which of h's moves are
// enabled. Where h has only such moves enabled, the explorer takes h's
// moves alone from the state: a persistent (ample) set. The other moves
// are taken from the successors, in the order that reaches the same
// states.
//
// Why this keeps every verdict of a safety-only search:
//
//   - C0: the set is never empty, and a state whose moves are all one
//     handoff's gains nothing and is expanded fully.
//   - C1 (persistence): other moves cannot write h's record or h's
//     workers (exclusive), but for two model operations: a restart,
//     excluded while the budget has one, and an allocation that evicts
//     the blocks h keeps in another worker's cache. That eviction only
//     clears h's kept and advertised flags, which none of the set's
//     moves or guards reads, so it commutes with them; and clearing them
//     makes no invariant of h false. Other moves cannot enable a move of
//     h either: every move of h whose guard reads shared state (reserve,
//     refuse, admit and promote wait on an exclusive worker; a hang is
//     excluded while h's transfer runs; timers need the early-timer
//     budget, which makes them budget moves, or a stuck system, which the
//     set's moves keep from happening) is decided by h's record. So on
//     every path from the state, the first move of h is one of the set,
//     and it commutes to the front. One effect differs by order: another
//     handoff's early timer spends the budget if it fires before the set
//     and may fire free after it (the system then stuck). The state
//     reached with more budget left can take every move of the other
//     and reaches the same worlds, so nothing is lost.
//   - C2 (invisibility): the moves change only h's record and h's
//     exclusive workers, so every conjunct of a state invariant about
//     another worker or handoff keeps its value; conjuncts about h or
//     its workers read only what other moves leave alone, so one violated
//     after other moves was violated before them. Step invariants read a
//     step's own handoff: the same step judges the same way from a state
//     that differs elsewhere. No budget is spent by the set's moves.
//   - C3 (no ignoring): every move the set takes raises a measure that no
//     such move lowers: a role state moves to a later strongly connected
//     component of its table, or, staying in one, the move consumes
//     something (a fact, a cancel, a restart notice, a running transfer, a
//     queued request, a routing, a queued command) and produces nothing.
//     So no cycle consists of reduced states alone, and BFS cannot put
//     another handoff's moves off for ever.
//
// Quiescent states are kept: a quiescent state has no move of h left, so
// the path to it takes one of the set first. A violation's trace is the
// full search's (confirmShortest).
//
// EventuallyDrained (from every reachable state a drained state is
// reachable by the system's own moves) is judged on the reduced graph's
// drain chains, which conclude only that it holds (checker/liveness.go):
// a chain is a path, so each state whose chain drains can drain. Where a
// chain does not drain, the search starts again exploring every ordering
// and judges every edge. So the reduction keeps the verdict when every
// state of the full graph can drain as soon as every state of the reduced
// one can. Call a state stuck when it cannot. A stuck state t of the full
// graph, reached from a state s of the reduced one by a path u, gives a
// reduced state that is stuck, by induction on the length of u:
//
//   - If s is expanded fully, u's first move is one of its edges.
//   - If s is reduced to h's set and u has a move of h, the first one is
//     in the set (C1) and commutes to the front: u is one move shorter
//     from that successor.
//   - If u has no move of h, a move a of the set commutes with all of u:
//     a's successor reaches a(t) by u, and a(t) is stuck as t is, since a
//     is a move the system makes on its own (the set spends no budget;
//     the explorer checks it, ownSet). u is no shorter then, but a walk
//     taking only this case would stay among reduced states, and by C3 no
//     cycle of them exists: within finitely many steps u gets shorter.
//
// With symmetry the same holds of the representatives: drained states
// are closed under renaming, and a renamed path is as long.

// footprint says what an action of a role row touches.
type footprint uint8

const (
	// footShared: the action is not known to be reducible. Every action
	// not in actionFootprints is, so a new action is never reduced
	// until its footprint is written down.
	footShared footprint = iota
	// footQuiet: only the handoff's own record, producing nothing that
	// another move consumes (timers, registrations, the announcement).
	footQuiet
	// footProduces: only the handoff's own record, but it gives a later
	// move something to consume (a fact in flight, a running transfer, a
	// queued reservation request).
	footProduces
	// footWorker: also the pools, ledgers, admission or KV index of the
	// handoff's workers, producing nothing to consume.
	footWorker
	// footWorkerProduces: footWorker, and it produces (a queued prefill,
	// an activation that waits for a slot, a command that may queue).
	footWorkerProduces
)

// local reports whether the footprint stays within the handoff's record.
func (f footprint) local() bool { return f == footQuiet || f == footProduces }

// quiet reports whether the footprint produces nothing to consume.
func (f footprint) quiet() bool { return f == footQuiet || f == footWorker }

// actionFootprints is the footprint of every action whose physics
// (apply, and model.Tx's command path for the commands) touches only
// the handoff's record and its own workers. Every other action is
// footShared. TestPOR_FootprintsHold checks each entry on real states.
var actionFootprints = func() (m [numActions]footprint) {
	set := func(f footprint, as ...action) {
		for _, a := range as {
			m[a] = f
		}
	}
	set(footQuiet, aSrcRegisterSource, aSrcFenceSource, aSrcAnnouncePinned,
		aSrcArmLease, aSrcRenewLease, aSrcDisarmLease, aSrcArmBootstrap, aSrcDisarmBootstrap,
		aSrcArmTransferDeadline, aSrcDisarmTransferDeadline,
		aDstRegisterDestination, aDstFenceDestination,
		aDstArmHeartbeat, aDstDisarmHeartbeat, aDstArmReservationTimer, aDstDisarmReservationTimer,
		aDstArmTransferDeadline, aDstDisarmTransferDeadline)
	set(footProduces, aSrcSendReceiveCompleted, aSrcSendCancelled, aSrcStartPush,
		aDstSendCancelled, aDstSendLeaseRenewed, aDstSendDestinationReserved, aDstSendReaderCompleted, aDstStartPull,
		aDstRequestReservation)
	set(footWorker, aSrcAcceptRequest, aDstAcceptRequest, aSrcComplete, aDstComplete,
		aSrcPinSource, aSrcPublishCached, aSrcReportComputeDone, aSrcReportReleased, aSrcReportAborted,
		aDstPublishStored, aDstReleaseActive, aDstReportDecodeDone, aDstReportDecodeFailed)
	set(footWorkerProduces, aSrcStartPrefill)
	// The scheduler commands act on the worker and may queue (the
	// command path, or a slow core): they produce.
	for _, k := range commandKinds {
		m[k.act] = footWorkerProduces
	}
	return m
}()

// moveFootprints is, per move kind, the footprint of the move's own
// physics (before the rows it fires), and whether it consumes something
// in the progress measure (C3 above). Kinds not listed (timers, faults,
// the environment's worker moves) are never reduced.
var moveFootprints = [NumMoveKinds]struct {
	foot     footprint
	consumes bool
}{
	MvRoutePrefill:   {footWorker, true}, // the target worker's router ledgers
	mvDeliverRequest: {footQuiet, true},
	MvRouteDecode:    {footWorker, true},
	mvReserve:        {footWorker, true},
	mvRefuse:         {footQuiet, true},
	MvAdmit:          {footWorker, true},
	MvCompute:        {footQuiet, true},
	MvTransfer:       {footQuiet, true},
	MvDeliver:        {footQuiet, true}, // the oldest fact only: a later one spends the reorder budget
	MvPromote:        {footWorker, true},
	mvDecodeFinish:   {footQuiet, false},
	mvDeliverCancel:  {footQuiet, true},
	mvPeerRestarted:  {footQuiet, true},
	mvApply:          {footWorker, true},
	mvDeferred:       {footQuiet, false},
}

// porRanks numbers each role state so that every row leads to a state of
// the same or a higher number, the same exactly when both lie on one
// cycle of the table (one strongly connected component).
func porRanks(p *Protocol, pol spec.Policy) (ranks [2][]uint8) {
	for r := range ranks {
		t := p.tables[r][pol]
		n := len(t)
		succ := make([][]int, n)
		for s := range t {
			for ev := range t[s] {
				if t[s][ev].Row != 0 {
					succ[s] = append(succ[s], int(t[s][ev].To))
				}
			}
		}
		comp := sccs(succ)
		// Longest path over the components' DAG: a component's rank is
		// one more than the highest rank leading into it.
		nc := 0
		for _, c := range comp {
			nc = max(nc, c+1)
		}
		rank := make([]int, nc)
		for changed := true; changed; {
			changed = false
			for s := range succ {
				for _, u := range succ[s] {
					if comp[u] != comp[s] && rank[comp[u]] < rank[comp[s]]+1 {
						rank[comp[u]] = rank[comp[s]] + 1
						changed = true
					}
				}
			}
		}
		ranks[r] = make([]uint8, n)
		for s := range ranks[r] {
			ranks[r][s] = uint8(rank[comp[s]])
		}
	}
	return ranks
}

// sccs numbers the strongly connected components of a small graph
// (Tarjan's algorithm).
func sccs(succ [][]int) []int {
	n := len(succ)
	index, low, comp := make([]int, n), make([]int, n), make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i], comp[i] = -1, -1
	}
	var stack []int
	next, nc := 0, 0
	var visit func(v int)
	visit = func(v int) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, u := range succ[v] {
			if index[u] < 0 {
				visit(u)
				low[v] = min(low[v], low[u])
			} else if onStack[u] {
				low[v] = min(low[v], index[u])
			}
		}
		if low[v] == index[v] {
			for {
				u := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[u] = false
				comp[u] = nc
				if u == v {
					break
				}
			}
			nc++
		}
	}
	for v := range succ {
		if index[v] < 0 {
			visit(v)
		}
	}
	return comp
}

// Ample is the handoff whose enabled moves alone are explored from s, or
// -1 when s is expanded fully. Among the handoffs whose moves form a
// persistent set it takes the one with the fewest moves, the lowest
// index first.
func (c *System) Ample(s *State, ms *MoveSet) int {
	if s.B.has(Restart) {
		// A restart rewrites the record of every handoff placed on its
		// worker, and is enabled wherever a live record is.
		return -1
	}
	var count [model.MaxHandoffs]int
	for i := 0; i < ms.N; i++ {
		if h := ms.M[i].H; h >= 0 {
			count[h]++
		}
	}
	best := -1
	for h := 0; h < c.nH; h++ {
		if count[h] == 0 || count[h] == ms.N || (best >= 0 && count[h] >= count[best]) {
			continue
		}
		if c.ampleCandidate(s, ms, h) {
			best = h
		}
	}
	return best
}

// ampleCandidate reports whether handoff h's enabled moves are a
// persistent set of s (the comment at the top of this file).
func (c *System) ampleCandidate(s *State, ms *MoveSet, h int) bool {
	x := &s.W.H[h]
	if s.B.has(hang) && x.Xfer == model.XferRunning {
		// A hang is offered where the system waits on transfers alone.
		// Other handoffs' moves decide whether it does, so h's own hang
		// could come; and h's transfer ending may end the wait, taking
		// another handoff's hang away.
		return false
	}
	// Reserve, refuse, admit and promote wait on a worker's capacity:
	// another handoff on that worker could enable them.
	workers := x.Pending || x.Compute == model.ComputeQueued || x.Dst == model.DstActive && !x.Running
	var targets uint8
	for i := 0; i < ms.N; i++ {
		m := ms.M[i]
		if int(m.H) != h {
			continue
		}
		ok, shared := c.reducible(s, m)
		if !ok {
			return false
		}
		workers = workers || shared
		if m.Kind == MvRoutePrefill || m.Kind == MvRouteDecode {
			targets |= 1 << m.Arg
		}
	}
	if !workers {
		return true
	}
	// The moves touch h's workers (and the ones it may be routed to):
	// nothing but h may touch those, now or before h moves again.
	for w := 0; w < c.nW; w++ {
		if (int(x.Prefill) == w || int(x.Decode) == w || targets&(1<<w) != 0) && !c.exclusive(s, h, w) {
			return false
		}
	}
	return true
}

// exclusive reports whether no move but handoff h's may touch worker w
// until h moves: no background load comes or goes there, and every other
// handoff is neither routable to it nor placed on it with a side that
// may still act there (a live record, a command not yet applied, or a
// table with shared rows from terminal states).
func (c *System) exclusive(s *State, h, w int) bool {
	k := &s.W.W[w]
	decode := s.W.Role(w) == model.DecodeWorker
	if k.Background > 0 || decode && s.B.has(backgroundLoad) {
		return false
	}
	for h2 := 0; h2 < c.nH; h2++ {
		if h2 == h {
			continue
		}
		x := &s.W.H[h2]
		if decode && x.Decode < 0 && !x.NoShow && !x.Cancelled && !x.SourceFailed {
			return false
		}
		if !decode && x.Prefill < 0 {
			return false
		}
		for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
			if x.Worker(sd) != w {
				continue
			}
			r := roleOf(sd)
			if !c.terminal(s, r, h2) || x.Cmds[sd].Len() > 0 || c.sharedAfterEnd[r] {
				return false
			}
		}
	}
	return true
}

// reducible reports whether one enabled move of a handoff may be part of
// a persistent set: its kind and the rows it fires touch only the
// handoff's record and, when shared is set, its workers; it spends no
// budget; and it raises the progress measure (C3).
func (c *System) reducible(s *State, m Move) (ok, shared bool) {
	if m.Kind >= NumMoveKinds {
		return false, false
	}
	mf := moveFootprints[m.Kind]
	if mf.foot == footShared {
		return false, false
	}
	if m.Kind == MvDeliver && s.W.H[m.H].Ch[m.Arg].Index(m.Msg) != 0 {
		return false, false
	}
	shared = !mf.foot.local()
	r, h, ev, fires := c.firedBy(s, m)
	if !fires {
		// Nothing fires: the move's physics only (a routing, an admission).
		return mf.consumes, shared
	}
	from := s.Role(r, h)
	t, fires := c.proto.step(r, c.policy, from, ev)
	if !fires {
		// A terminal record that takes nothing: the move only consumes.
		return mf.consumes, shared
	}
	rowOK, rowShared, quiet := c.rowsReducible(r, t, 0)
	if !rowOK {
		return false, false
	}
	if c.ranks[r][t.To] > c.ranks[r][from] {
		return true, shared || rowShared
	}
	return mf.consumes && quiet, shared || rowShared
}

// rowsReducible judges a row and, for a command the
// core applies at once, the rows of both its answers: whether every
// action is in actionFootprints, whether one touches a worker, and
// whether all are quiet.
func (c *System) rowsReducible(r spec.Role, t *transition, depth int) (ok, shared, quiet bool) {
	if depth > 2 {
		return false, false, false
	}
	quiet = true
	answered := 0
	for i := 0; i < int(t.N); i++ {
		a := t.Acts[i]
		f := actionFootprints[a]
		if f == footShared {
			return false, false, false
		}
		shared = shared || !f.local()
		quiet = quiet && f.quiet()
		k := commandOf[a]
		if k < 0 || c.cmds[commandKinds[k].side][commandKinds[k].cmd] == cmdDirect {
			continue
		}
		// Answered after the row, from the row's target state; with two
		// answers the second fires from a state not known here.
		if answered++; answered > 1 {
			return false, false, false
		}
		ck := &commandKinds[k]
		for _, applied := range []bool{false, true} {
			at, fires := c.proto.step(r, c.policy, t.To, answer(ck.side, ck.cmd, applied))
			if !fires {
				continue
			}
			aok, ash, aq := c.rowsReducible(r, at, depth+1)
			if !aok {
				return false, false, false
			}
			shared, quiet = shared || ash, quiet && aq
		}
	}
	return true, shared, quiet
}

// sharedAfterEnd reports, per role, whether a row from a terminal state
// has an action that touches more than the handoff's record: a variant's
// late reaction, which keeps a finished side able to act on its worker.
func sharedAfterEnd(p *Protocol, pol spec.Policy) (out [2]bool) {
	for r := range out {
		for st, row := range p.tables[r][pol] {
			if !p.terminal[r][st] {
				continue
			}
			for ev := range row {
				t := &row[ev]
				for i := 0; i < int(t.N); i++ {
					out[r] = out[r] || !actionFootprints[t.Acts[i]].local()
				}
			}
		}
	}
	return out
}
