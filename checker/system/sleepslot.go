package system

import "github.com/handoffcheck/handoffcheck/model"

// Sleep sets (the search's, checker/sleep.go) name a handoff's moves by
// slots of a 32-bit lane, the same in every state where a move is
// enabled: which kinds may sleep, and which workers a move touches or
// waits on, are the system's to say, so that the search reads no move
// kinds.

// sleepLane is the width of a handoff's lane of sleep slots.
const sleepLane = 32

// sleepSlots is, per move kind a handoff may put to sleep, its first
// slot and how many it spans: one per side for the moves that take a
// side, one per worker for the routes (both kinds share them: a worker
// is a prefill or a decode worker), the last of the lane. Kinds with
// span 0 never sleep.
var sleepSlots = func() (t [NumMoveKinds]struct{ first, span int }) {
	next := 0
	set := func(span int, ks ...MoveKind) {
		for _, k := range ks {
			t[k].first, t[k].span = next, span
		}
		next += span
	}
	for _, k := range []MoveKind{mvDeliverRequest, mvReserve, mvRefuse, MvAdmit, MvCompute, MvTransfer, MvPromote, mvDecodeFinish} {
		set(1, k)
	}
	for _, k := range []MoveKind{MvDeliver, mvDeliverCancel, mvPeerRestarted, mvDeferred, mvApply} {
		set(2, k)
	}
	set(model.MaxWorkers, MvRoutePrefill, MvRouteDecode)
	if next > sleepLane {
		panic("system: the sleep slots of a handoff do not fit in its lane")
	}
	return t
}()

// routeSlot is the first of the route moves' slots.
var routeSlot = sleepSlots[MvRoutePrefill].first

// sleepSlot names move m of its handoff for sleep sets, the same in
// every state where it is enabled: its kind and argument (the worker of
// a route, the side of a delivery, an apply, a cancel), a slot of the
// handoff's 32-bit lane. A delivery is the oldest fact of its channel (a
// later one spends the reorder budget, and may not sleep). -1: never
// asleep (a move on a worker, a timer, a fault).
func (m Move) sleepSlot() int {
	if m.H < 0 || m.Kind >= NumMoveKinds {
		return -1
	}
	sl := sleepSlots[m.Kind]
	arg := 0
	switch {
	case sl.span == 0:
		return -1
	case sl.span > 1:
		if m.Arg < 0 || int(m.Arg) >= sl.span {
			return -1
		}
		arg = int(m.Arg)
	}
	return sl.first + arg
}

// sleepWorkers is the set of workers move m of handoff x touches or
// waits on, for sleep sets' independence, given whether the move's
// footprint is shared (reducible): 0 when it reads no worker
// another handoff's move could change.
func (m Move) sleepWorkers(x *model.Handoff, shared bool) uint8 {
	// A move that waits on a worker's capacity reads that worker.
	wait := m.Kind == mvReserve || m.Kind == mvRefuse || m.Kind == MvAdmit || m.Kind == MvPromote ||
		x.Pending || x.Compute == model.ComputeQueued || x.Dst == model.DstActive && !x.Running
	if !shared && !wait {
		return 0
	}
	ws := uint8(0)
	if x.Prefill >= 0 {
		ws |= 1 << x.Prefill
	}
	if x.Decode >= 0 {
		ws |= 1 << x.Decode
	}
	if m.Kind == MvRoutePrefill || m.Kind == MvRouteDecode {
		ws |= 1 << m.Arg
	}
	if ws == 0 {
		// Waiting before any worker is known: it depends on all.
		ws = 0xff
	}
	return ws
}

// renameSleepLane is a handoff's lane l of sleep slots in the numbering
// of a state whose worker w was moved to wp[w] (the canonical form's
// renaming): the route slots name workers.
func renameSleepLane(l uint32, wp *[model.MaxWorkers]int8, nW int) uint32 {
	routes := l >> routeSlot & (1<<model.MaxWorkers - 1)
	l &^= (1<<model.MaxWorkers - 1) << routeSlot
	for w := 0; w < nW; w++ {
		if routes&(1<<w) != 0 {
			l |= 1 << (routeSlot + int(wp[w]))
		}
	}
	return l
}

// Sleep is how sleep sets may hold move m, enabled in s: its slot of its
// handoff's lane (sleepSlot), and the workers it touches or waits on, for
// independence (sleepWorkers). slot is -1 when the move may not sleep
// here: one that is never asleep, or one that may not be part of a
// persistent set in s (reducible).
func (c *System) Sleep(s *State, m Move) (slot int, workers uint8) {
	sl := m.sleepSlot()
	if sl < 0 {
		return -1, 0
	}
	ok, shared := c.reducible(s, m)
	if !ok {
		return -1, 0
	}
	return sl, m.sleepWorkers(&s.W.H[m.H], shared)
}

// RenameSleep renames a sleep set, given as each handoff's lane of
// slots, into the numbering of t's canonical form (Key): handoff
// h's lane goes to the position the canonical form gives h, and the route
// slots of a lane follow their workers.
func (c *System) RenameSleep(t *State, lanes *[model.MaxHandoffs]uint32) {
	var k Key
	var nm naming
	c.canonicalNaming(t, &k, &nm)
	var out [model.MaxHandoffs]uint32
	for h := 0; h < c.nH; h++ {
		if l := lanes[h]; l != 0 {
			out[nm.Hp[h]] = renameSleepLane(l, &nm.Wp, c.nW)
		}
	}
	*lanes = out
}
