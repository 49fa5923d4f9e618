package checker

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/handoffcheck/handoffcheck/model"
)

// MoveKind is what the environment does in one step.
type MoveKind uint8

// The moves. Protocol moves are what the routers, schedulers, transfer
// engine, transport and timers do on their own; fault moves are optional
// and bounded by the budget.
const (
	_ MoveKind = iota
	MvRoutePrefill
	MvDeliverRequest
	MvRouteDecode
	MvReserve
	MvRefuse
	MvAdmit
	MvCompute
	MvTransfer
	MvDeliver
	MvTimer
	MvPromote
	MvDecodeFinish
	MvDeliverCancel
	MvPeerRestarted
	MvFreeBackground
	// faults
	MvDuplicate
	MvLose
	MvCancel
	MvAbort
	MvFailTransfer
	MvRestart
	MvNoShow
	MvOccupy
	numMoveKinds
)

var moveNames = [...]string{"", "route-prefill", "deliver-request", "route-decode", "reserve", "refuse", "admit", "compute",
	"transfer", "deliver", "timer", "promote", "decode-finish", "deliver-cancel", "peer-restarted", "free-background",
	"duplicate", "lose", "cancel", "abort", "fail-transfer", "restart", "no-show", "occupy"}

func (k MoveKind) String() string { return moveNames[k] }

// Fault reports whether the move is an optional environment fault.
func (k MoveKind) Fault() bool { return k >= MvDuplicate }

// Move is one step of the environment. H is the handoff (-1 for worker
// moves), Arg the worker, side, timer or receiving side, and Msg the
// message for deliveries.
type Move struct {
	Kind MoveKind
	H    int8
	Arg  int8
	Msg  model.Msg
}

var sideNames = [2]string{"source", "destination"}

func (m Move) String() string {
	var b strings.Builder
	b.WriteString(m.Kind.String())
	if m.H >= 0 {
		fmt.Fprintf(&b, " h=%d", m.H)
	}
	switch m.Kind {
	case MvRoutePrefill, MvRouteDecode, MvFreeBackground, MvRestart, MvOccupy:
		fmt.Fprintf(&b, " worker=%d", m.Arg)
	case MvDeliver, MvDuplicate, MvLose:
		fmt.Fprintf(&b, " to=%s msg=%s", sideNames[m.Arg], m.Msg)
	case MvTimer:
		fmt.Fprintf(&b, " timer=%s", model.Timer(m.Arg))
	case MvDeliverCancel, MvPeerRestarted, MvAbort:
		fmt.Fprintf(&b, " side=%s", sideNames[m.Arg])
	}
	return b.String()
}

// ParseMove reads the String form of a move. It is the step syntax of
// scenario files and trace files.
func ParseMove(s string) (Move, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return Move{}, fmt.Errorf("empty move")
	}
	m := Move{H: -1}
	for k := MoveKind(1); k < numMoveKinds; k++ {
		if moveNames[k] == fields[0] {
			m.Kind = k
		}
	}
	if m.Kind == 0 {
		return Move{}, fmt.Errorf("unknown move %q (want one of %s)", fields[0], strings.Join(moveNames[1:], ", "))
	}
	seen := map[string]bool{}
	for _, f := range fields[1:] {
		key, val, ok := strings.Cut(f, "=")
		if !ok {
			return Move{}, fmt.Errorf("argument %q is not key=value", f)
		}
		if seen[key] {
			return Move{}, fmt.Errorf("argument %q given twice", key)
		}
		seen[key] = true
		switch key {
		case "h", "worker":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 || n >= model.MaxWorkers {
				return Move{}, fmt.Errorf("%s=%q is not a small non-negative number", key, val)
			}
			if key == "h" {
				m.H = int8(n)
			} else {
				m.Arg = int8(n)
			}
		case "to", "side":
			i := indexOf(sideNames[:], val)
			if i < 0 {
				return Move{}, fmt.Errorf("%s=%q is not source or destination", key, val)
			}
			m.Arg = int8(i)
		case "msg":
			found := false
			for x := model.Msg(1); x < model.NumMsgs; x++ {
				if x.String() == val {
					m.Msg, found = x, true
				}
			}
			if !found {
				return Move{}, fmt.Errorf("msg=%q is not a message kind", val)
			}
		case "timer":
			found := false
			for t := model.Timer(0); t < model.NumTimers; t++ {
				if t.String() == val {
					m.Arg, found = int8(t), true
				}
			}
			if !found {
				return Move{}, fmt.Errorf("timer=%q is not lease, bootstrap, heartbeat or reservation", val)
			}
		default:
			return Move{}, fmt.Errorf("unknown argument %q", key)
		}
	}
	want := map[MoveKind][]string{
		MvRoutePrefill: {"h", "worker"}, MvRouteDecode: {"h", "worker"}, MvFreeBackground: {"worker"}, MvRestart: {"worker"}, MvOccupy: {"worker"},
		MvDeliver: {"h", "to", "msg"}, MvDuplicate: {"h", "to", "msg"}, MvLose: {"h", "to", "msg"}, MvTimer: {"h", "timer"},
		MvDeliverCancel: {"h", "side"}, MvPeerRestarted: {"h", "side"}, MvAbort: {"h", "side"},
	}[m.Kind]
	if want == nil {
		want = []string{"h"}
	}
	for _, k := range want {
		if !seen[k] {
			return Move{}, fmt.Errorf("%s needs %s=", m.Kind, k)
		}
	}
	if len(seen) != len(want) {
		return Move{}, fmt.Errorf("%s takes only %s", m.Kind, strings.Join(want, ", "))
	}
	return m, nil
}

func indexOf(xs []string, s string) int {
	for i, x := range xs {
		if x == s {
			return i
		}
	}
	return -1
}
