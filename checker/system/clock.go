package system

import "github.com/handoffcheck/handoffcheck/model"

// Durations price, in microseconds, the work a timed driver gives time on
// its clock: the driver says what each kind of work costs there, the
// system says which work a move is (Move.Takes), so that no driver keeps
// its own table of move kinds. A func is called only for a move that
// takes its time, so a driver that draws a random latency draws it only
// then; a nil func or a zero costs nothing.
type Durations struct {
	// Arrival is the request reaching the source worker, or the cancel a
	// side is told of, crossing the network.
	Arrival func() int64
	// Fact is a fact in flight delivered, or the decode route reaching
	// the destination worker.
	Fact func() int64
	// Transfer is a running KV transfer ending.
	Transfer func() int64
	// Command is a scheduler core applying a command; SlowCore the same
	// while the core has fallen behind (the delay fault).
	Command, SlowCore int64
	// Decode is decode running to its end.
	Decode int64
	// HealthCheck is a side learning from health checks that its peer's
	// worker restarted.
	HealthCheck int64
}

// Takes is how long protocol move m of handoff x takes once enabled,
// priced by d: 0 for a move that takes no time of its own (admitting,
// promoting, the prefill's route, the moves on a worker) or whose time
// the driver keeps itself (compute's, on the worker's queue; a timer's,
// at its deadline).
func (m Move) Takes(x *model.Handoff, d *Durations) int64 {
	call := func(f func() int64) int64 {
		if f == nil {
			return 0
		}
		return f()
	}
	switch m.Kind {
	case mvDeliverRequest, mvDeliverCancel:
		return call(d.Arrival)
	case MvDeliver, MvRouteDecode:
		return call(d.Fact)
	case mvReserve, mvRefuse, mvDeferred:
		return d.Command
	case mvApply:
		if x.Slow[m.Arg] {
			return d.SlowCore
		}
		return d.Command
	case MvTransfer:
		return call(d.Transfer)
	case mvDecodeFinish:
		return d.Decode
	case mvPeerRestarted:
		return d.HealthCheck
	}
	return 0
}

// Taker says who takes protocol move m of handoff x where the roles run
// as processes of their own: the frontend's router (router), or the
// worker of side sd. The request's arrival and its admission and compute
// are the source's; reserving, refusing, promoting, decode's end and
// freeing background load the destination's; a transfer ends at the side
// that runs it; a fact, a cancel, a peer's restart, a deferred step and a
// command are the side's they are addressed to; a timer is its side's.
// ok is false for a fault: the environment's, nobody's.
func (m Move) Taker(x *model.Handoff) (sd model.Side, router, ok bool) {
	if _, fault := m.Kind.Spends(); fault {
		return 0, false, false
	}
	switch m.Kind {
	case MvRoutePrefill, MvRouteDecode:
		return 0, true, true
	case mvDeliverRequest, MvAdmit, MvCompute:
		return model.SourceSide, false, true
	case mvReserve, mvRefuse, MvPromote, mvDecodeFinish, mvFreeBackground:
		return model.DestinationSide, false, true
	case MvTransfer:
		return x.Runner, false, true
	case MvDeliver, mvDeliverCancel, mvPeerRestarted, mvApply, mvDeferred:
		return model.Side(m.Arg), false, true
	case MvTimer:
		return model.Timer(m.Arg).Side(), false, true
	}
	return 0, false, false
}
