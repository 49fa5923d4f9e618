package conform

import (
	"fmt"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
)

// The clock error (Options.ClockError): every fact's stamp is within it
// of when its step took effect, on one clock that all the logs'
// processes share (one host, or clocks synchronized within a known
// bound). Then a fact g of one process happened before a fact f of
// another whenever t_g + 2·err < t_f (true_g <= t_g + err < t_f - err <=
// true_f), and the facts one process logs for one step, which take
// effect together, are stamped within 2·err of each other. The judge
// keeps only the interleavings that agree: it takes a process's next
// fact of an attempt only when no other process of the attempt has a
// fact still to explain stamped more than 2·err before it, nor one
// explained already stamped more than 2·err after it (both, so that the
// verdict does not depend on the order the facts were read in); and it
// pays a fact a step owes its own process, after the fact of that
// process the step explained, only when the two are stamped within
// 2·err. Without a clock error the stamps only choose the reading order.

// clockOn reports whether the judge orders facts by their stamps.
func (j *judge) clockOn() bool { return j.skew >= 0 }

// clockStamp refuses a fact the clock error cannot order: one without a
// stamp, or one stamped before its process's previous fact (one clock
// never goes back within a process, and a stamp that does leaves the
// order of that process's facts to its log, not its clock).
func (j *judge) clockStamp(f *obslog.Fact) error {
	if !j.clockOn() {
		return nil
	}
	if f.TUS < 0 {
		return fmt.Errorf("%s: %w: --clock-error needs every fact stamped, and this one has no t_us: the clock error orders the processes' facts by their stamps", f.Where(), ErrInput)
	}
	ps := &j.procs[f.Proc]
	if ps.stamped && f.TUS < ps.lastUS {
		return fmt.Errorf("%s: %w: t_us %d is before %d, %s's previous fact (%s:%d): with --clock-error a process's stamps never go back (one clock), so its facts' order and its clock disagree",
			f.Where(), ErrInput, f.TUS, ps.lastUS, j.h.Processes[f.Proc].Name, ps.lastFile, ps.lastLine)
	}
	ps.stamped, ps.lastUS, ps.lastFile, ps.lastLine = true, f.TUS, f.File, f.Line
	return nil
}

// inClockOrder reports whether node n of attempt a may explain f, the
// next fact of slot s, now: no other slot's next fact is stamped more
// than 2·err before f (it happened first, and would be explained after
// f), and no other slot's fact explained already more than 2·err after
// it (it happened after f). A process's stamps never go back
// (clockStamp), so its next fact and its last explained one stand for
// all of them.
func (j *judge) inClockOrder(a *attempt, n *node, s int, f *obslog.Fact) bool {
	// Small enough to be inlined: without a clock error, a fact costs
	// the judge one comparison more.
	return j.skew < 0 || j.clockOrdered(a, n, s, f)
}

// clockOrdered is inClockOrder with a clock error. Not inlined, so that
// inClockOrder is.
//
//go:noinline
func (j *judge) clockOrdered(a *attempt, n *node, s int, f *obslog.Fact) bool {
	for k := range a.slots {
		if k == s {
			continue
		}
		facts, p := a.slots[k].facts, int(n.pos[k])
		if p < len(facts) && facts[p].TUS+2*j.skew < f.TUS {
			return false
		}
		if p > 0 && f.TUS+2*j.skew < facts[p-1].TUS {
			return false
		}
	}
	return true
}

// sameStep is the mask of the labels a step leaves owed (carry's order:
// what n owed, then must but the one explained, i) that its own process
// logs, the process of the fact it explains: a bit set says the fact
// that pays that label is that process's next after one of the step's
// own. 0 without a clock error.
func (j *judge) sameStep(n *node, must []obslog.Label, i int) uint8 {
	if j.skew < 0 {
		return 0
	}
	return sameStepMask(n, must, i)
}

// sameStepMask is sameStep's mask with a clock error.
func sameStepMask(n *node, must []obslog.Label, i int) uint8 {
	mask := n.owedSame
	k := int(n.owedN)
	for x := range must {
		if x == i {
			continue
		}
		// A router's labels are left out: two routers' logs may take
		// them, and the previous fact of the one that pays may be of
		// another step.
		if must[x].By == must[i].By && must[i].By != obslog.ByRouter && k < maxOwed {
			mask |= 1 << k
		}
		k++
	}
	return mask
}

// paysInTime reports whether f, of slot s, may pay the label n owes at
// i: a label its process owes for a step of its own is paid by a fact
// stamped within 2·err of that process's previous fact, the step's too.
func (j *judge) paysInTime(a *attempt, n *node, i, s int, f *obslog.Fact) bool {
	if n.owedSame&(1<<i) == 0 {
		return true
	}
	p := int(n.pos[s])
	return p == 0 || f.TUS-a.slots[s].facts[p-1].TUS <= 2*j.skew
}

// tooLateForStep says, for a rejection, why f does not pay what n owes
// its process for the step that explains step (outOfOrder's): with a
// clock error, f is stamped too long after that process's previous fact,
// the step's own, to be of that step. "" when that is not why.
func (j *judge) tooLateForStep(a *attempt, n *node, f *obslog.Fact, step string) string {
	if !j.clockOn() {
		return ""
	}
	s := -1
	for k := range a.slots {
		if a.slots[k].proc == f.Proc {
			s = k
		}
	}
	for i := range int(n.owedN) {
		l := &n.owed[i]
		if s < 0 || !j.logsIt(a, l, f) || !firstOfItsProcess(n.owed[:n.owedN], i) || !matches(f, l) || j.paysInTime(a, n, i, s, f) {
			continue
		}
		prev := a.slots[s].facts[n.pos[s]-1]
		return fmt.Sprintf("%s logs %s stamped %d µs after its %s at %s, more than twice the clock error: the step that explains %s makes it log %s with its %s, and one step's facts of one process are stamped within twice the clock error of each other, so this one is of a later step",
			j.h.Processes[f.Proc].Name, f.Kind, f.TUS-prev.TUS, prev.Kind, prev.Where(), step, l, prev.Kind)
	}
	return ""
}

// dropOwedBit is a mask of owed labels with label i gone, the labels
// after it moving down one (payOwed, forgive).
func dropOwedBit(mask uint8, i int) uint8 {
	low := mask & (1<<i - 1)
	return low | mask>>(i+1)<<i
}

// clockErrorText is the report's clock error: "" when none was given.
func clockErrorText(opt Options) string {
	if !opt.Clocked {
		return ""
	}
	return opt.ClockError.String()
}

// skewOf is the judge's clock error in microseconds, -1 for none.
func skewOf(opt Options) int64 {
	if !opt.Clocked {
		return -1
	}
	// Rounded up: a smaller error would order more than was claimed.
	return max(0, (opt.ClockError.Nanoseconds()+999)/1000)
}
