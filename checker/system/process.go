package system

import (
	"fmt"

	"github.com/handoffcheck/handoffcheck/model"
)

// The processes of the composed system, for fairness: the system has no
// threads of its own, so its protocol moves are grouped by the actor that
// makes them, per handoff (the frontend, each side's role, the transfer
// engine, the transport in each direction, the clock per timer), then per
// decode worker its background load being freed. Faults are no process.
const (
	procFrontend = iota
	procSource
	procDestination
	procTransfer
	procToSource
	procToDestination
	procClock      // one per timer, from here
	procPerHandoff = procClock + int(model.NumTimers)
)

// A set of processes fits in one word.
var _ [64 - procPerHandoff*model.MaxHandoffs - model.MaxWorkers]struct{}

// process is the process whose move m is, below 64; m is a protocol move
// (MoveSet.Process).
func (m Move) process() uint8 {
	if m.H < 0 {
		return uint8(procPerHandoff*model.MaxHandoffs + int(m.Arg))
	}
	base := uint8(procPerHandoff * int(m.H))
	side := func(sd int8) uint8 {
		if sd == int8(model.SourceSide) {
			return procSource
		}
		return procDestination
	}
	switch m.Kind {
	case MvRoutePrefill, MvRouteDecode, mvDeliverRequest:
		return base + procFrontend
	case MvAdmit, MvCompute:
		return base + procSource
	case mvReserve, mvRefuse, MvPromote, mvDecodeFinish:
		return base + procDestination
	case mvApply, mvDeliverCancel, mvPeerRestarted, mvDeferred:
		return base + side(m.Arg)
	case MvTransfer:
		return base + procTransfer
	case MvDeliver:
		if m.Arg == int8(model.SourceSide) {
			return base + procToSource
		}
		return base + procToDestination
	case MvTimer:
		return base + procClock + uint8(m.Arg)
	}
	panic(fmt.Sprintf("system: no process for move %v", m))
}

// ProcessName names a process (MoveSet.Process) for a report: "h0 source",
// "worker 1 background".
func ProcessName(p int) string {
	if p >= procPerHandoff*model.MaxHandoffs {
		return fmt.Sprintf("worker %d background", p-procPerHandoff*model.MaxHandoffs)
	}
	names := [procClock]string{"frontend", "source", "destination", "transfer", "transport to the source", "transport to the destination"}
	h, k := p/procPerHandoff, p%procPerHandoff
	if k >= procClock {
		return fmt.Sprintf("h%d %s timer", h, model.Timer(k-procClock))
	}
	return fmt.Sprintf("h%d %s", h, names[k])
}
