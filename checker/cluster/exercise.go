package cluster

import (
	"fmt"
	"io"
	"math/bits"
	"strings"

	"github.com/handoffcheck/handoffcheck/model"
)

// Exercise records which built-in invariants a timed run (simulate,
// conform, live through conform) exercised: the triggers its steps fired
// (model.Triggers, the same bits check's search ORs together) and where
// each first fired. Unlike check's complete search, one run that never
// fires an invariant's trigger proves nothing of the runs it did not take.
type Exercise struct {
	fired model.Triggers
	// first is, per trigger bit, where it first fired.
	first [64]firstSeen
	// Unordered: the driver notes its steps out of time order (conform
	// judges an attempt once it is explained), so a trigger that fires
	// again may have fired earlier than first says.
	Unordered bool
}

type firstSeen struct {
	at      int64 // microseconds, -1 when not known
	subject int32 // a request or an attempt, as the driver numbers them
}

// Note adds the triggers a step of subject fired at time at (microseconds,
// -1 when the driver does not know it). It allocates nothing, and does
// work beyond an AND only when a trigger fires for the first time (or,
// Unordered, when it has a time).
//
// It reports whether subject is now where some trigger first fired: a
// driver that names its subjects by strings keeps that one's name.
func (e *Exercise) Note(t model.Triggers, at int64, subject int) bool {
	if t&^e.fired == 0 && (!e.Unordered || at < 0) {
		return false
	}
	first := false
	for b := t; b != 0; b &= b - 1 {
		i := bits.TrailingZeros64(uint64(b))
		f := &e.first[i]
		if e.fired&(1<<i) == 0 || (at >= 0 && (f.at < 0 || at < f.at)) {
			*f, first = firstSeen{at: at, subject: int32(subject)}, true
		}
	}
	e.fired |= t
	return first
}

// Reset forgets every trigger noted.
func (e *Exercise) Reset() {
	for b := e.fired; b != 0; b &= b - 1 {
		e.first[bits.TrailingZeros64(uint64(b))] = firstSeen{}
	}
	e.fired = 0
}

// Merge notes what o noted, each trigger where o saw it first; it
// reports whether that is now where some trigger first fired (Note).
func (e *Exercise) Merge(o *Exercise) bool {
	first := false
	for b := o.fired; b != 0; b &= b - 1 {
		i := bits.TrailingZeros64(uint64(b))
		if e.Note(1<<i, o.first[i].at, int(o.first[i].subject)) {
			first = true
		}
	}
	return first
}

// Fired is every trigger noted so far.
func (e *Exercise) Fired() model.Triggers { return e.fired }

// InvariantsReport is a run's vacuity of the built-in invariants it
// judges: each one exercised (its trigger fired, first where) or not.
type InvariantsReport struct {
	// Stopped: a violation stopped the run, so the report covers it up
	// to there.
	Stopped bool `json:"stopped,omitempty"`
	// StoppedBy names what stopped it, for the text ("" says its
	// violation; conform says the rejection).
	StoppedBy  string              `json:"-"`
	Exercised  int                 `json:"exercised"`
	Invariants []InvariantExercise `json:"invariants"`
}

// InvariantExercise is one built-in invariant in a run: unconditional
// (it judges every state or step, with what), or exercised (First: where
// its trigger first fired; nil for the violated one, which its violation
// exercised) or not (Why: what did not happen).
type InvariantExercise struct {
	Invariant     string     `json:"invariant"`
	Unconditional string     `json:"unconditional,omitempty"`
	Exercised     bool       `json:"exercised"`
	First         *Exercised `json:"first,omitempty"`
	Why           string     `json:"why,omitempty"`
}

// Exercised is where an invariant's trigger first fired in a run: when
// (-1: not known) and the request or attempt.
type Exercised struct {
	AtUS    int64  `json:"at_us"`
	Subject string `json:"subject"`
}

// Report is the vacuity of the invariants named (the built-in ones the
// driver judges, in registry order) under cfg. violated is the invariant
// a violation stopped the run at ("" when none): it was exercised,
// whatever fired. subject names a subject for the report.
func (e *Exercise) Report(names []string, cfg *model.Config, violated string, subject func(int) string) *InvariantsReport {
	out := &InvariantsReport{Stopped: violated != ""}
	for _, name := range names {
		inv, ok := model.LookupInvariant(name)
		if !ok {
			continue
		}
		x := InvariantExercise{Invariant: name}
		switch {
		case inv.Trigger.Unconditional != "":
			x.Unconditional, x.Exercised = inv.Trigger.Unconditional, true
		case name == violated:
			x.Exercised = true
		default:
			x.Exercised, x.Why = inv.Exercised(e.fired, cfg)
			if x.Exercised {
				x.First = e.firstOf(inv.Trigger.Fires, subject)
			}
		}
		if x.Exercised {
			out.Exercised++
		}
		out.Invariants = append(out.Invariants, x)
	}
	return out
}

// firstOf is the earliest of the triggers in t that fired.
func (e *Exercise) firstOf(t model.Triggers, subject func(int) string) *Exercised {
	best := -1
	for b := t & e.fired; b != 0; b &= b - 1 {
		i := bits.TrailingZeros64(uint64(b))
		f := e.first[i]
		if best < 0 || (f.at >= 0 && (e.first[best].at < 0 || f.at < e.first[best].at)) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	f := e.first[best]
	return &Exercised{AtUS: f.at, Subject: subject(int(f.subject))}
}

// WriteText renders the report short, so that a default output stays
// readable: the count, and only the invariants never exercised, by name
// (--json has every one, with where it first fired).
func (r *InvariantsReport) WriteText(w io.Writer, indent string) {
	upTo := ""
	if r.Stopped {
		upTo = " up to its violation"
		if r.StoppedBy != "" {
			upTo = " up to " + r.StoppedBy
		}
	}
	var never []string
	for _, x := range r.Invariants {
		if !x.Exercised {
			never = append(never, x.Invariant)
		}
	}
	if len(never) == 0 {
		fmt.Fprintf(w, "%sbuilt-in invariants: all %d exercised in this run%s\n", indent, len(r.Invariants), upTo)
		return
	}
	fmt.Fprintf(w, "%sbuilt-in invariants: %d of %d exercised in this run%s; never exercised in this run (%d): %s\n",
		indent, r.Exercised, len(r.Invariants), upTo, len(never), strings.Join(never, ", "))
	fmt.Fprintf(w, "%s  (one run's never is no proof for every run, unlike check's complete search; --json says where each was first exercised and why the others were not)\n", indent)
}

// TimedInvariants are the built-in invariants a timed driver judges:
// every safety invariant on every step and state, Quiescence where a
// request or attempt can do nothing more, and FaultFreeCompletion when
// the driver judges it (faultFree). EventuallyDrained is a question about
// every run, which no single run answers: check judges it.
func TimedInvariants(faultFree bool) []string {
	out := append(append([]string(nil), model.SafetyInvariants...), model.NameQuiescence)
	if faultFree {
		out = append(out, model.NameFaultFreeCompletion)
	}
	return out
}
