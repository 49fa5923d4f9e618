package conform

import (
	"fmt"
	"slices"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// maxDrainStates bounds the states trapped visits from one explanation:
// an attempt's world is one handoff, whose states from a given one are
// far fewer; past the bound nothing is claimed.
const maxDrainStates = 1 << 14

// rejectTrapped rejects an attempt the logs leave unfinished, naming
// EventuallyDrained, when every explanation that caught up with its
// facts ends in a loop the tables never leave. Quiescence judges a state
// where no protocol, timer or delivery step is enabled; EventuallyDrained
// asks that from every reachable state some fully drained state be
// reachable by the moves the system makes on its own (check's liveness
// graph: no fault, and no timer fired while something else could
// happen). An explanation's last state is judged by that definition as
// the clock leaves it (lostOnTheClock): where every state it leads to
// enables such a move and none is drained, the attempt is not stuck but
// busy for ever, as a simulated run still in flight an hour after its
// last arrival is, and whatever the logs would have gone on to say, no
// behavior of the tables from where they end drains it. Where some
// explanation can still drain, or gets stuck, Quiescence is named as
// before: the logs end with the attempt unfinished. It reports whether
// it rejected.
func (j *judge) rejectTrapped(a *attempt, caught *node) bool {
	var loop, lost []string
	for _, n := range a.waiting {
		if !j.caughtUp(a, n) || n.owedN != 0 {
			continue
		}
		st, gone := j.lostOnTheClock(a, n)
		moves, ok := j.trapped(&st)
		if !ok {
			return false
		}
		if n == caught {
			loop, lost = moves, gone
		}
	}
	if loop == nil {
		return false
	}
	detail := "the logs end with the attempt in a loop the tables never leave: from where its facts leave it"
	if len(lost) > 0 {
		detail += fmt.Sprintf(" (%s in flight while a deadline armed after its sending, by the logs' time stamps, ran out: lost, as a fact that takes longer than a delivery on the clock is)", strings.Join(lost, ", "))
	}
	detail += fmt.Sprintf(", the steps the system takes on its own (%s) never drain it, and none reaches a state where nothing can happen (Quiescence's): %s",
		strings.Join(loop, ", "), caught.st.W.DescribeHeld())
	f := a.last
	j.reject(&Rejection{File: f.File, Line: f.Line, Attempt: a.id, Fact: Describe(j.h, f), Invariant: model.NameEventuallyDrained,
		Detail: detail, Explained: j.history(caught), Allowed: j.allowed(a, []*node{caught}),
		Trace: j.rejectionTrace(a, caught, f)})
	return true
}

// lostOnTheClock is explanation n's last state with the facts still in
// flight there that the clock says were lost taken out, and those facts.
// Untimed, a fact may stay in flight for ever and be delivered last; on
// the clock it arrives a delivery's latency after it was sent, or never.
// A fact in flight while a deadline of the attempt, armed after the fact
// was sent (by the logs' time stamps, not the explanation's order, which
// may place a process's steps late) and longer than that latency, ran out
// and fired, outlived its delivery: the run lost it, and from where the
// logs end it will not arrive. Logs without time stamps lose nothing.
func (j *judge) lostOnTheClock(a *attempt, n *node) (system.State, []string) {
	st := *n.st
	var path []*node
	for x := n; x != nil; x = x.parent {
		path = append(path, x)
	}
	slices.Reverse(path)
	// at[k] is the time of step k: its fact's stamp, else the next
	// fact's along the explanation (by then it had happened), else the
	// attempt's last fact's (-1: none stamped).
	at := make([]int64, len(path))
	last := int64(-1)
	if a.last != nil {
		last = a.last.TUS
	}
	for k := len(path) - 1; k >= 0; k-- {
		if f := path[k].fact; f != nil && f.TUS >= 0 {
			last = f.TUS
		}
		at[k] = last
	}
	delivery := j.cfg.LatencyUS + j.cfg.JitterUS
	var lost []string
	for sd := range st.W.H[0].Ch {
		ch := &st.W.H[0].Ch[sd]
		for i := int(ch.N) - 1; i >= 0; i-- {
			msg := ch.M[i]
			// sent: the step that last put the fact in flight.
			sent := 0
			for k := len(path) - 1; k > 0; k-- {
				if !path[k-1].st.W.H[0].Ch[sd].Has(msg) {
					sent = k
					break
				}
			}
			if at[sent] < 0 || !outlived(path, at, at[sent], delivery, j.cfg.TimerUS) {
				continue
			}
			ch.Take(i)
			lost = append(lost, fmt.Sprintf("%s to the %s", msg, sideWord(model.Side(sd))))
		}
	}
	return st, lost
}

// outlived reports whether a deadline armed at a step stamped at or after
// sent, of a timer that lasts longer than delivery, fired at a later step
// of the explanation (at: the steps' times).
func outlived(path []*node, at []int64, sent, delivery int64, us func(model.Timer) int64) bool {
	var armed uint32 // the timers whose latest arming is stamped at or after sent
	for k := 1; k < len(path); k++ {
		x, before := path[k], path[k-1]
		b, a := before.st.W.H[0].Timers, x.st.W.H[0].Timers
		fired := model.Timer(model.NumTimers)
		if x.move.Kind == system.MvTimer {
			fired = model.Timer(x.move.Arg)
			if armed&(1<<fired) != 0 && us(fired) > delivery {
				return true
			}
		}
		for t := model.Timer(0); t < model.NumTimers; t++ {
			// Armed here: newly, or fired and armed again in one step.
			if a&(1<<t) != 0 && (b&(1<<t) == 0 || t == fired) {
				if at[k] >= sent {
					armed |= 1 << t
				} else {
					armed &^= 1 << t
				}
			}
		}
	}
	return false
}

func sideWord(sd model.Side) string {
	if sd == model.SourceSide {
		return "source"
	}
	return "destination"
}

// trapped reports whether no drained state is reachable from st by the
// moves the system makes on its own, and every state reached enables
// one of them, and the moves it took (each once, in the order first
// taken). A bound reached claims nothing.
func (j *judge) trapped(st *system.State) ([]string, bool) {
	var ms system.MoveSet
	seen := map[system.Key]bool{j.chk.Key(st): true}
	queue := []system.State{*st}
	var taken []string
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if j.chk.Drained(&s) {
			return nil, false
		}
		protocol := j.chk.Enabled(&s, &ms)
		own := 0
		for i := 0; i < ms.N; i++ {
			if _, ok := ms.Process(i, protocol); !ok {
				continue
			}
			own++
			m := ms.M[i]
			next := s
			tx := model.Tx{W: &next.W}
			j.chk.ApplyTx(&next, &tx, m, nil, ms.Stuck)
			if name := m.String(); !slices.Contains(taken, name) {
				taken = append(taken, name)
			}
			k := j.chk.Key(&next)
			if seen[k] {
				continue
			}
			if len(seen) >= maxDrainStates {
				return nil, false
			}
			seen[k] = true
			queue = append(queue, next)
		}
		if own == 0 {
			return nil, false // stuck: Quiescence judges it
		}
	}
	return taken, true
}
