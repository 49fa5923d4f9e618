package system

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/handoffcheck/handoffcheck/model"
)

// MoveKind is what the environment does in one step.
type MoveKind uint8

// The protocol moves: what the routers, schedulers, transfer engine,
// transport and timers do on their own. The fault moves, optional and
// bounded by the budget, follow them (faults.go).
const (
	_ MoveKind = iota
	MvRoutePrefill
	mvDeliverRequest
	MvRouteDecode
	mvReserve
	mvRefuse
	MvAdmit
	MvCompute
	MvTransfer
	MvDeliver
	MvTimer
	MvPromote
	mvDecodeFinish
	mvDeliverCancel
	mvPeerRestarted
	mvFreeBackground
	mvDeferred
	mvApply
	numProtocolMoveKinds
)

// arg is one argument of a move's step syntax, written key=value.
type arg uint8

const (
	// argH is h=H, the handoff (Move.H).
	argH arg = iota
	// argWorker is worker=W (Move.Arg).
	argWorker
	// argTo is to=source|destination, the side a fact goes to (Move.Arg).
	argTo
	// argMsg is msg=M, the fact (Move.Msg).
	argMsg
	// argTimer is timer=lease|bootstrap|heartbeat|reservation (Move.Arg).
	argTimer
	// argSide is side=source|destination, the side that acts (Move.Arg).
	argSide
	numArgs
)

var argKeys = [numArgs]string{"h", "worker", "to", "msg", "timer", "side"}

// argPlaceholders name the values in a fault kind's step syntax
// (FaultKinds[f].Syntax).
var argPlaceholders = [numArgs]string{"H", "W", "S", "M", "T", "S"}

// key is the argument's key in the step syntax.
func (a arg) key() string { return argKeys[a] }

// moveSyntax is the step syntax of one move kind: its name and the
// arguments it takes, in the order String writes them.
type moveSyntax struct {
	name string
	args []arg
	// spends is the fault kind the move spends, NumFaults for a protocol move.
	spends Fault
}

// protocolMoves is the step syntax of the protocol moves.
var protocolMoves = [numProtocolMoveKinds]moveSyntax{
	MvRoutePrefill:   {name: "route-prefill", args: []arg{argH, argWorker}},
	mvDeliverRequest: {name: "deliver-request", args: []arg{argH}},
	MvRouteDecode:    {name: "route-decode", args: []arg{argH, argWorker}},
	mvReserve:        {name: "reserve", args: []arg{argH}},
	mvRefuse:         {name: "refuse", args: []arg{argH}},
	MvAdmit:          {name: "admit", args: []arg{argH}},
	MvCompute:        {name: "compute", args: []arg{argH}},
	MvTransfer:       {name: "transfer", args: []arg{argH}},
	MvDeliver:        {name: "deliver", args: []arg{argH, argTo, argMsg}},
	MvTimer:          {name: "timer", args: []arg{argH, argTimer}},
	MvPromote:        {name: "promote", args: []arg{argH}},
	mvDecodeFinish:   {name: "decode-finish", args: []arg{argH}},
	mvDeliverCancel:  {name: "deliver-cancel", args: []arg{argH, argSide}},
	mvPeerRestarted:  {name: "peer-restarted", args: []arg{argH, argSide}},
	mvFreeBackground: {name: "free-background", args: []arg{argWorker}},
	mvDeferred:       {name: "deferred", args: []arg{argH, argSide}},
	mvApply:          {name: "apply", args: []arg{argH, argSide}},
}

// moveTable is the syntax of every move kind: the protocol moves, then the
// fault moves of FaultKinds.
var moveTable = buildMoveTable()

func buildMoveTable() [NumMoveKinds]moveSyntax {
	var t [NumMoveKinds]moveSyntax
	for k := range t {
		t[k].spends = NumFaults // a protocol move, or a number that names no move
	}
	for k := range protocolMoves {
		t[k].name, t[k].args = protocolMoves[k].name, protocolMoves[k].args
	}
	for f := range FaultKinds {
		if mv := Fault(f).Move(); mv != 0 {
			name, args := parseSyntax(FaultKinds[f].Syntax)
			t[mv] = moveSyntax{name: name, args: args, spends: Fault(f)}
		}
	}
	return t
}

// parseSyntax reads a fault kind's step syntax with placeholders
// ("duplicate h=H to=S msg=M") into its move's name and arguments. The
// table is the program's own: a row it cannot read stops the program at
// its start, before any run.
func parseSyntax(syntax string) (name string, args []arg) {
	fields := strings.Fields(syntax)
	if len(fields) == 0 {
		panic(fmt.Sprintf("system: fault move syntax %q names no move", syntax))
	}
	for _, f := range fields[1:] {
		a := arg(0)
		for a < numArgs && f != argKeys[a]+"="+argPlaceholders[a] {
			a++
		}
		if a == numArgs {
			panic(fmt.Sprintf("system: fault move syntax %q: %q is no argument (key=placeholder, as h=H)", syntax, f))
		}
		args = append(args, a)
	}
	return fields[0], args
}

// kindList is every move kind that names a move, in MoveKind order.
var kindList = func() []MoveKind {
	var out []MoveKind
	for k := MoveKind(1); k < NumMoveKinds; k++ {
		if moveTable[k].name != "" {
			out = append(out, k)
		}
	}
	return out
}()

// MoveKinds lists every move kind, in MoveKind order: the protocol moves,
// then the fault moves in budget order. (A fault kind spent by a protocol
// move out of order has a number after the protocol moves but no move.)
func MoveKinds() []MoveKind { return slices.Clone(kindList) }

func (k MoveKind) String() string {
	if k < NumMoveKinds && moveTable[k].name != "" {
		return moveTable[k].name
	}
	return fmt.Sprintf("MoveKind(%d)", uint8(k))
}

// Spends is the fault kind whose budget the move spends; ok is false for
// a protocol move, true for an optional environment fault.
func (k MoveKind) Spends() (f Fault, ok bool) {
	f = moveTable[k].spends
	return f, f < NumFaults
}

// SpendsAt is the fault kind move m, enabled in s, would spend: its own
// for a fault move (MoveKind.Spends), reorder for the delivery of a fact
// that is not the oldest in flight, early_timer for a timer while the
// system is not stuck (MoveSet.Stuck). It is ApplyTx's rule, asked before
// the move is taken, so that a walk's fault schedule names what the move
// will spend without knowing which protocol moves spend a budget.
func (m Move) SpendsAt(s *State, stuck bool) (Fault, bool) {
	if f, ok := m.Kind.Spends(); ok {
		return f, true
	}
	switch m.Kind {
	case MvDeliver:
		if s.W.H[m.H].Ch[m.Arg].Index(m.Msg) > 0 {
			return reorder, true
		}
	case MvTimer:
		if !stuck {
			return earlyTimer, true
		}
	}
	return 0, false
}

// args is the move's arguments, in the order its step syntax writes them.
func (k MoveKind) args() []arg { return moveTable[k].args }

// Names says what a move of kind k names besides its kind: a handoff
// (Move.H), a worker (Move.Arg), the side that acts (Move.Arg), and a
// fact in flight, the side it goes to and the fact (Move.Arg, Move.Msg).
// A plan's line of a fault kind names what its move names; a reader that
// renumbers workers renumbers the moves that name one.
func (k MoveKind) Names() (handoff, worker, side, fact bool) {
	for _, a := range k.args() {
		switch a {
		case argH:
			handoff = true
		case argWorker:
			worker = true
		case argSide:
			side = true
		case argTo, argMsg:
			fact = true
		}
	}
	return handoff, worker, side, fact
}

// moveNames lists the move names in MoveKind order.
func moveNames() []string {
	names := make([]string, 0, len(kindList))
	for _, k := range kindList {
		names = append(names, moveTable[k].name)
	}
	return names
}

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
	if m.Kind >= NumMoveKinds {
		return b.String()
	}
	for _, a := range m.Kind.args() {
		switch a {
		case argWorker:
			fmt.Fprintf(&b, " worker=%d", m.Arg)
		case argTo:
			fmt.Fprintf(&b, " to=%s", sideNames[m.Arg])
		case argMsg:
			fmt.Fprintf(&b, " msg=%s", m.Msg)
		case argTimer:
			fmt.Fprintf(&b, " timer=%s", model.Timer(m.Arg))
		case argSide:
			fmt.Fprintf(&b, " side=%s", sideNames[m.Arg])
		}
	}
	return b.String()
}

// ParseMove reads the String form of a move. It is the step syntax of
// scenario files and trace files. A reader that knows the configuration
// the move is taken in passes its world, w: a handoff or worker number it
// lacks is refused in its terms, with its range. With a nil w a number is
// refused only when it is not one or beyond what any configuration has.
func ParseMove(s string, w *model.Config) (Move, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return Move{}, fmt.Errorf("empty move")
	}
	m := Move{H: -1}
	for _, k := range kindList {
		if moveTable[k].name == fields[0] {
			m.Kind = k
		}
	}
	if m.Kind == 0 {
		return Move{}, fmt.Errorf("unknown move %q (want one of %s)", fields[0], strings.Join(moveNames(), ", "))
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
			// Said in the file's terms: which numbers a key takes, and
			// why no larger one can name anything.
			what, most := "handoff", model.MaxHandoffs
			if key == "worker" {
				what, most = "worker", model.MaxWorkers
			}
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 || n >= most {
				if w != nil {
					have := numbered(w, key)
					return Move{}, fmt.Errorf("%s=%s: want a %s number of the configuration, which has %s (%s)", key, val, what, plural(have, what), indexRange(key, have))
				}
				return Move{}, fmt.Errorf("%s=%s: want a %s number from 0 to %d (a configuration has at most %d %ss, numbered from 0)", key, val, what, most-1, most, what)
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
	if m.Kind == mvApply && !seen["side"] {
		// Traces written when only the decode worker's core took
		// commands (activation) say apply h=H.
		m.Arg, seen["side"] = int8(model.DestinationSide), true
	}
	want := m.Kind.args()
	for _, a := range want {
		if !seen[argKeys[a]] {
			return Move{}, fmt.Errorf("%s needs %s=", m.Kind, a.key())
		}
	}
	if len(seen) != len(want) {
		keys := make([]string, len(want))
		for i, a := range want {
			keys[i] = argKeys[a]
		}
		return Move{}, fmt.Errorf("%s takes only %s", m.Kind, strings.Join(keys, ", "))
	}
	if w != nil {
		// Replaying a move the world lacks could only say it is not
		// enabled, which hides that the move and its configuration
		// disagree.
		if n := numbered(w, "h"); int(m.H) >= n {
			return Move{}, fmt.Errorf("handoff %d is out of range: the configuration has %s (%s)", m.H, plural(n, "handoff"), indexRange("h", n))
		}
		if n := numbered(w, "worker"); seen["worker"] && int(m.Arg) >= n {
			return Move{}, fmt.Errorf("worker %d is out of range: the configuration has %s (%s)", m.Arg, plural(n, "worker"), indexRange("worker", n))
		}
	}
	return m, nil
}

// numbered is how many handoffs (key h) or workers (key worker) world w
// has.
func numbered(w *model.Config, key string) int {
	if key == "worker" {
		return len(w.Workers)
	}
	return len(w.Handoffs)
}

// plural is n nouns, said in English.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// indexRange is the numbers key takes among n: "h=0", "worker=0 to
// worker=2".
func indexRange(key string, n int) string {
	if n == 1 {
		return key + "=0"
	}
	return fmt.Sprintf("%s=0 to %s=%d", key, key, n-1)
}

func indexOf(xs []string, s string) int {
	for i, x := range xs {
		if x == s {
			return i
		}
	}
	return -1
}
