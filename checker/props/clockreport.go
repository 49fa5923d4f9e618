package props

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// The verdicts of a run on a clock (Clock.Report), as simulate, conform
// and live print them.

// Verdicts of a run on a clock (RunVerdict.Verdict).
const (
	VerdictViolated    = "violated"
	VerdictNotViolated = "not-violated"
	VerdictReached     = "reached"
	VerdictNotReached  = "not-reached"
	VerdictNotDecided  = "not-decided"
)

// RunReport is every property's verdict on one run on a clock.
type RunReport struct {
	File string `json:"file"`
	View string `json:"view"`
	// Stopped: a violation stopped the run, so the verdicts cover it up
	// to there.
	Stopped    bool         `json:"stopped,omitempty"`
	Properties []RunVerdict `json:"properties"`
}

// RunVerdict is one property's verdict on one run.
type RunVerdict struct {
	Name       string `json:"name"`
	Kind       string `json:"kind"`
	PerHandoff bool   `json:"per_handoff,omitempty"`
	Question   string `json:"question,omitempty"`
	Within     string `json:"within,omitempty"`
	// Verdict: violated, not-violated, reached, not-reached, not-decided.
	Verdict string `json:"verdict"`
	Detail  string `json:"detail,omitempty"`
	// Antecedent is an always implication's antecedent or a leads_to's
	// P; AntecedentHeld whether it held in the run, First where it (or a
	// sometimes property) first did; Vacuous: it never did.
	Antecedent     string `json:"antecedent,omitempty"`
	AntecedentHeld bool   `json:"antecedent_held,omitempty"`
	Vacuous        bool   `json:"vacuous,omitempty"`
	First          *Seen  `json:"first,omitempty"`
	// Of a leads_to within: obligations opened, met in time, still open
	// when the run ended with their deadline not passed (undecided), and
	// the longest wait from P to Q of those met.
	Obligations int     `json:"obligations,omitempty"`
	Met         int     `json:"met,omitempty"`
	Undecided   int     `json:"undecided,omitempty"`
	LongestMS   float64 `json:"longest_ms,omitempty"`
}

// Seen is where something first held in a run, as a report names it:
// when (-1: not known), the subject (a request, an attempt), and the
// handoff of its view (-1: a property not per handoff).
type Seen struct {
	AtUS    int64  `json:"at_us"`
	Subject string `json:"subject"`
	Handoff int    `json:"handoff"`
}

// Report gives each property's verdict once the run ended at end (the
// clock's last time). violated names the always property a driver found
// broken ("" when none); subject names a subject for the details (a
// request, an attempt). The obligations still open are undecided: their
// deadline had not passed when the run ended.
func (c *Clock) Report(violated string, subject func(int) string) *RunReport {
	out := &RunReport{File: c.set.File, View: ViewVersion, Stopped: violated != ""}
	missed := map[int]*Miss{}
	for i := range c.all {
		m := &c.all[i]
		if missed[m.Prop.index] == nil {
			missed[m.Prop.index] = m
		}
	}
	undecided := make([]int, len(c.props))
	for _, o := range c.open {
		undecided[o.Prop.index]++
	}
	for i, p := range c.set.Props {
		cp := &c.props[i]
		v := RunVerdict{Name: p.Name, Kind: p.Kind.String(), PerHandoff: p.PerHandoff, Question: p.Question}
		var first *Seen
		if f := cp.first; f.Subject >= 0 {
			first = &Seen{AtUS: f.At, Subject: subject(int(f.Subject)), Handoff: int(f.Handoff)}
		}
		where := func(s *Seen) string {
			w := fmt.Sprintf("at %s, %s", fmtUS(s.AtUS), s.Subject)
			if s.AtUS < 0 {
				w = s.Subject
			}
			if s.Handoff >= 0 && p.PerHandoff {
				w += fmt.Sprintf(", handoff %d of its view", s.Handoff)
			}
			return w
		}
		switch p.Kind {
		case Always:
			v.Verdict, v.Detail = VerdictNotViolated, "in this run"
			if violated == p.Name {
				v.Verdict, v.Detail = VerdictViolated, "the run's violation above"
			}
			if p.ante != nil {
				v.Antecedent, v.AntecedentHeld, v.First, v.Vacuous = p.anteText, first != nil, first, first == nil
			}
		case Sometimes:
			if first != nil {
				v.Verdict, v.Detail, v.First = VerdictReached, where(first)+"; a run's first, not a shortest witness: check --props finds one", first
			} else {
				v.Verdict, v.Detail = VerdictNotReached, "in this run; one run's not reached is no proof that no run reaches it: check --props decides that"
			}
		case LeadsTo:
			v.Within = fmtWithin(p.Within)
			v.Antecedent, v.AntecedentHeld, v.First, v.Vacuous = p.Expr, first != nil, first, first == nil
			v.Obligations, v.Met, v.Undecided = cp.opened, cp.met, undecided[i]
			v.LongestMS = float64(cp.longest) / 1000
			switch m := missed[i]; {
			case m != nil:
				v.Verdict, v.Detail = VerdictViolated, fmt.Sprintf("%s: %s", subject(m.Subject), m.Detail())
			case v.Undecided > 0:
				v.Verdict, v.Detail = VerdictNotDecided, fmt.Sprintf("%d met in time, %d still open when the run ended at %s before their deadline", v.Met, v.Undecided, fmtUS(c.now))
			case c.unordered > 0:
				v.Verdict, v.Detail = VerdictNotDecided, fmt.Sprintf("%d met in time; %d explanations order their facts against the time stamps, and no order of their steps that follows the stamps is a behavior of the tables: those were not judged on the clock", v.Met, c.unordered)
			default:
				v.Verdict, v.Detail = VerdictNotViolated, fmt.Sprintf("in this run: %d met in time, the longest after %.3f ms", v.Met, v.LongestMS)
			}
		}
		out.Properties = append(out.Properties, v)
	}
	return out
}

// Violated reports whether some property was violated. A sometimes
// property not reached is no failure: one run's "not reached" proves
// nothing of the runs the system could take.
func (r *RunReport) Violated() bool {
	for _, v := range r.Properties {
		if v.Verdict == VerdictViolated {
			return true
		}
	}
	return false
}

// WriteText renders the report, each line indented by indent.
func (r *RunReport) WriteText(w io.Writer, indent string) {
	upTo := ""
	if r.Stopped {
		upTo = " up to its violation"
	}
	fmt.Fprintf(w, "%sproperties %s (%s), on this run%s:\n", indent, r.File, r.View, upTo)
	for _, v := range r.Properties {
		per := ""
		if v.PerHandoff {
			per = " per handoff"
		}
		within := ""
		if v.Within != "" {
			within = " within " + v.Within
		}
		fmt.Fprintf(w, "%s  %s %s%s%s: %s", indent, v.Kind, v.Name, per, within, strings.ToUpper(strings.ReplaceAll(v.Verdict, "-", " ")))
		if v.Detail != "" {
			fmt.Fprintf(w, " (%s)", v.Detail)
		}
		fmt.Fprintln(w)
		switch {
		case v.Antecedent == "":
		case v.Vacuous:
			fmt.Fprintf(w, "%s    vacuous: antecedent never held in this run (%s)\n", indent, v.Antecedent)
		case v.First != nil && v.First.AtUS >= 0:
			fmt.Fprintf(w, "%s    antecedent held, first at %s, %s (%s)\n", indent, fmtUS(v.First.AtUS), v.First.Subject, v.Antecedent)
		case v.First != nil:
			fmt.Fprintf(w, "%s    antecedent held (%s)\n", indent, v.Antecedent)
		}
	}
}

// Bound is a leads_to property's bound as a file writes it ("" when none).
func (p *Property) Bound() string {
	if p.Within <= 0 {
		return ""
	}
	return fmtWithin(p.Within)
}

// fmtWithin writes a bound as a file would: 60s, not 1m0s.
func fmtWithin(d time.Duration) string {
	switch {
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	case d%time.Millisecond == 0:
		return fmt.Sprintf("%dms", d/time.Millisecond)
	}
	return d.String()
}

func fmtUS(us int64) string { return fmt.Sprintf("%.3f ms", float64(us)/1000) }
