package live

import (
	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// Who takes a move of an attempt's world in a live run: the process whose
// state and ledgers the move changes. Every process steps its own window
// onto each of its attempts with the checker's moves, but takes only the
// moves it owns; the others reach it as frames (a fact, a route, a
// cancel, a peer's restart) or not at all.
type owner uint8

const (
	ownRouter owner = iota
	ownSource
	ownDestination
	ownNobody // environment faults: a live run's faults are real
)

func sideOwner(s model.Side) owner {
	if s == model.SourceSide {
		return ownSource
	}
	return ownDestination
}

// ownerOf is the one table of who takes which move.
func ownerOf(m checker.Move, x *model.Handoff) owner {
	if _, fault := m.Kind.Spends(); fault {
		return ownNobody
	}
	switch m.Kind {
	case checker.MvRoutePrefill, checker.MvRouteDecode:
		return ownRouter
	case checker.MvDeliverRequest, checker.MvAdmit, checker.MvCompute:
		return ownSource
	case checker.MvReserve, checker.MvRefuse, checker.MvPromote, checker.MvDecodeFinish, checker.MvFreeBackground:
		return ownDestination
	case checker.MvTransfer:
		return sideOwner(x.Runner)
	case checker.MvDeliver, checker.MvDeliverCancel, checker.MvPeerRestarted, checker.MvApply, checker.MvDeferred:
		return sideOwner(model.Side(m.Arg))
	case checker.MvTimer:
		return sideOwner(model.Timer(m.Arg).Side())
	}
	return ownNobody
}

func roleOf(s model.Side) spec.Role {
	if s == model.SourceSide {
		return spec.Source
	}
	return spec.Destination
}

var sideNames = [2]string{"source", "destination"}

func msgNamed(name string) (model.Msg, bool) {
	for m := model.Msg(1); m < model.NumMsgs; m++ {
		if m.String() == name {
			return m, true
		}
	}
	return 0, false
}

func regNamed(name string) (model.Reg, bool) {
	for r := model.RegNone; r <= model.RegClosed; r++ {
		if r.String() == name {
			return r, true
		}
	}
	return 0, false
}

func srcHoldNamed(name string) (model.SrcHold, bool) {
	for h := model.SrcNone; h <= model.SrcPinned; h++ {
		if h.String() == name {
			return h, true
		}
	}
	return 0, false
}

func dstHoldNamed(name string) (model.DstHold, bool) {
	for h := model.DstNone; h <= model.DstActive; h++ {
		if h.String() == name {
			return h, true
		}
	}
	return 0, false
}
