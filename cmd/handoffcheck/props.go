package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/props"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/spec"
)

// loadProps reads and compiles a properties file ("" is none) for a
// driver, refusing at its line a property the driver does not judge.
func loadProps(ctx context.Context, file, driver string, can props.Can) (*props.Set, error) {
	if file == "" {
		return nil, nil
	}
	data, err := readInput(ctx, file)
	if err != nil {
		return nil, err
	}
	set, err := props.Load(file, data)
	if err != nil {
		return nil, err
	}
	if err := set.Refuse(driver, can); err != nil {
		return nil, err
	}
	return set, nil
}

// propsRun is what check does with a properties file: the configuration
// whose states it judges, the limits of the search, and the reductions
// it turned off, said in the report.
type propsRun struct {
	set   *props.Set
	notes []string
}

// withProps makes the configuration judge every state by the properties,
// and turns off the reductions that could hide a state a property sees:
// partial-order reduction keeps the built-in invariants' verdicts (each
// reads what it must see), not an arbitrary expression's; symmetry
// reduction keeps a property's verdict only when renaming interchangeable
// handoffs and workers cannot change it (props.Set.Symmetric).
func withProps(set *props.Set, cfg *system.Config, lim *checker.Limits) (*system.Config, *propsRun) {
	pr := &propsRun{set: set}
	c := *cfg
	c.Judge = set
	if lim != nil && (lim.Reduce || lim.Sleep) {
		lim.Reduce, lim.Sleep = false, false
		pr.notes = append(pr.notes, "partial-order reduction off: it keeps the built-in invariants' verdicts, not an arbitrary property's")
	}
	if lim != nil {
		lim.Fair = obligations(set)
	}
	switch {
	case c.Symmetry && len(obligations(set)) > 0:
		c.Symmetry = false
		pr.notes = append(pr.notes, "symmetry reduction off: leads_to is judged under fairness of each handoff's and worker's moves, which renaming them would merge")
	case c.Symmetry:
		if ok, why := set.Symmetric(); ok {
			pr.notes = append(pr.notes, "symmetry reduction kept: every property is 'per handoff' and reads no position")
		} else {
			c.Symmetry = false
			pr.notes = append(pr.notes, "symmetry reduction off: "+why+", which renaming interchangeable handoffs or workers can change")
		}
	}
	return &c, pr
}

// obligations are the set's leads_to properties without a bound, for the
// search to judge under weak fairness.
func obligations(set *props.Set) []checker.Obligation {
	var out []checker.Obligation
	for _, p := range set.Props {
		if p.Kind == props.LeadsTo && p.Within == 0 {
			out = append(out, checker.Obligation{Name: p.Name, PerHandoff: p.PerHandoff, Sides: p.Sides})
		}
	}
	return out
}

// propVerdict is one property's verdict on one run.
type propVerdict struct {
	Name       string `json:"name"`
	Kind       string `json:"kind"`
	PerHandoff bool   `json:"per_handoff,omitempty"`
	Question   string `json:"question,omitempty"`
	// Verdict: holds, violated, not-violated (an incomplete search),
	// reached, not-reached, not-decided. Of a leads_to property, Q is its
	// second expression and the witness its fair run, a lasso.
	Verdict    string `json:"verdict"`
	Detail     string `json:"detail,omitempty"`
	Then       string `json:"then,omitempty"`
	Antecedent string `json:"antecedent,omitempty"`
	// Vacuous: the antecedent never held in a complete search.
	Vacuous        bool   `json:"vacuous,omitempty"`
	AntecedentHeld bool   `json:"antecedent_held,omitempty"`
	WitnessSteps   int    `json:"witness_steps,omitempty"`
	WitnessLoop    int    `json:"witness_loop,omitempty"`
	WitnessFile    string `json:"witness_file,omitempty"`
	witness        string
}

type propsRunReport struct {
	Run        string        `json:"run"`
	Properties []propVerdict `json:"properties"`
}

type propsReport struct {
	File       string           `json:"file"`
	View       string           `json:"view"`
	Reductions []string         `json:"reductions,omitempty"`
	Runs       []propsRunReport `json:"runs"`
}

// witnessSearch is how check finds a sometimes property's shortest
// witness: a breadth-first search of the run that stops at the first
// state where the property holds, as at a violation.
type witnessSearch struct {
	ctx        context.Context
	proto      *system.Protocol
	cfg        *system.Config
	lim        checker.Limits
	configJSON []byte
	variant    *spec.Spec
	dir        string
	full       bool
}

// judgeExhaustive gives each property's verdict on each run of an
// exhaustive check.
func (pr *propsRun) judgeExhaustive(rep *checker.Report, ws *witnessSearch) (*propsReport, error) {
	out := &propsReport{File: pr.set.File, View: props.ViewVersion, Reductions: pr.notes}
	for i, x := range rep.Runs {
		sys := rep.Checker(i).System
		rr := propsRunReport{Run: x.Run.Name}
		complete := x.Complete && x.Violation == nil && x.Bitstate == nil
		for j, p := range pr.set.Props {
			v := propVerdict{Name: p.Name, Kind: p.Kind.String(), PerHandoff: p.PerHandoff, Question: p.Question}
			switch p.Kind {
			case props.Always:
				switch {
				case x.Violation != nil && x.Violation.Violation.Invariant == p.Name:
					v.Verdict, v.Detail = "violated", "the shortest trace is the run's above"
				case complete:
					v.Verdict = "holds"
				default:
					v.Verdict, v.Detail = "not-violated", "in the states explored: the search was not complete"
				}
				if a := p.Antecedent(); a != "" {
					v.Antecedent = a
					v.AntecedentHeld = pr.set.Held(sys, j)
					v.Vacuous = complete && !v.AntecedentHeld
				}
			case props.LeadsTo:
				if err := ws.leadsTo(x, rep.Checker(i), p, &v); err != nil {
					return nil, err
				}
			case props.Sometimes:
				if complete && !pr.set.Held(sys, j) {
					v.Verdict, v.Detail = "not-reached", "complete search: no reachable state satisfies it"
					break
				}
				if err := ws.find(x.Run, p, &v); err != nil {
					return nil, err
				}
			}
			rr.Properties = append(rr.Properties, v)
		}
		out.Runs = append(out.Runs, rr)
	}
	return out, nil
}

// leadsTo gives a leads_to property's verdict from the search's fair
// verdict of it: a fair run that never meets the obligation (a lasso, or
// a run that ends), written to the witness directory for replay; holds;
// or not decided, when the graph was not complete or P or Q could not be
// judged in some state.
func (ws *witnessSearch) leadsTo(x *checker.Result, ch *checker.Checker, p *props.Property, v *propVerdict) error {
	v.Then, v.Antecedent = p.Then, p.Expr
	var fv *checker.FairVerdict
	for i := range x.Fair {
		if x.Fair[i].Name == p.Name {
			fv = &x.Fair[i]
		}
	}
	switch {
	case fv == nil && x.Violation != nil && len(x.Violation.Loop) == 0:
		v.Verdict, v.Detail = "not-decided", "the search stopped first at a violation of "+x.Violation.Violation.Invariant+"; fairness is judged on a complete graph"
		return nil
	case fv == nil:
		v.Verdict, v.Detail = "not-decided", "the graph is incomplete: fairness is judged on a complete search ("+x.StopDetail+")"
		return nil
	case fv.Err != nil:
		v.Verdict, v.Detail = "not-decided", fv.Err.Error()
		return nil
	}
	v.AntecedentHeld = fv.Held
	v.Vacuous = !fv.Held
	if fv.Violation == nil {
		v.Verdict = "holds"
		if fv.Held && !fv.Pending {
			v.Detail = "Q held wherever P did"
		}
		return nil
	}
	ce := *fv.Violation
	v.Verdict, v.WitnessSteps, v.WitnessLoop = "violated", len(ce.Steps), len(ce.Loop)
	at := len(ce.Steps) - stepsAfterP(&ce)
	switch {
	case len(ce.Loop) > 0:
		v.Detail = fmt.Sprintf("P holds at step %d, from where a weakly fair run need never meet Q: this one repeats %s for ever (below)",
			at, stepSpan(len(ce.Steps)+1, len(ce.Steps)+len(ce.Loop)))
	default:
		v.Detail = fmt.Sprintf("P holds at step %d, from where a fair run need never meet Q: this one ends after step %d, where nothing but faults can happen (below)",
			at, len(ce.Steps))
	}
	if fv.Handoff >= 0 {
		v.Detail = fmt.Sprintf("handoff %d: %s", fv.Handoff, v.Detail)
	}
	v.witness = ch.FormatWitness(&ce, ws.full)
	if ws.dir != "" {
		name := filepath.Join(ws.dir, x.Run.Name+"-"+p.Name+".jsonl")
		var b bytes.Buffer
		if err := checker.WriteTrace(&b, ws.configJSON, ws.variant, x.Run.Name, ch.Attempts(), &ce); err != nil {
			return err
		}
		if err := os.WriteFile(name, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--witness-dir: %w", err)
		}
		v.WitnessFile = name
	}
	return nil
}

// leadsToViolated says a leads_to property was violated: a fair run
// never meets it.
func (r *propsReport) leadsToViolated() bool {
	if r == nil {
		return false
	}
	for _, rr := range r.Runs {
		for _, v := range rr.Properties {
			if v.Kind == "leads_to" && v.Verdict == "violated" {
				return true
			}
		}
	}
	return false
}

// stepSpan names steps a to b: "step 8", "steps 8-10".
func stepSpan(a, b int) string {
	if a == b {
		return fmt.Sprintf("step %d", a)
	}
	return fmt.Sprintf("steps %d-%d", a, b)
}

// stepsAfterP counts the steps of a fair counterexample after the one
// marked as where P held with Q pending.
func stepsAfterP(ce *checker.Counterexample) int {
	for i := len(ce.Steps) - 1; i >= 0; i-- {
		if ce.Steps[i].Failed {
			return len(ce.Steps) - 1 - i
		}
	}
	return len(ce.Steps)
}

// find searches a run for a sometimes property's shortest witness.
func (ws *witnessSearch) find(run system.Run, p *props.Property, v *propVerdict) error {
	cfg := *ws.cfg
	cfg.Judge = props.Target{P: p}
	lim := ws.lim
	// The witness search is the check's own, not a run to follow.
	lim.Liveness, lim.Reduce, lim.Sleep, lim.Speedup, lim.Progress = false, false, false, false, nil
	rep, err := checker.Check(ws.ctx, ws.proto, &cfg, []system.Run{run}, lim)
	if err != nil {
		return err
	}
	x := rep.Runs[0]
	switch {
	case x.Violation != nil && x.Violation.Violation.Invariant == p.Name:
		ce := *x.Violation
		v.Verdict, v.WitnessSteps = "reached", len(ce.Steps)
		v.witness = rep.Checker(0).FormatWitness(&ce, ws.full)
		if ws.dir != "" {
			// The witness replays as a trace that records no violation.
			ce.Violation = nil
			name := filepath.Join(ws.dir, run.Name+"-"+p.Name+".jsonl")
			var b bytes.Buffer
			if err := checker.WriteTrace(&b, ws.configJSON, ws.variant, run.Name, rep.Checker(0).Attempts(), &ce); err != nil {
				return err
			}
			if err := os.WriteFile(name, b.Bytes(), 0o644); err != nil {
				return fmt.Errorf("--witness-dir: %w", err)
			}
			v.WitnessFile = name
		}
	case x.Violation != nil:
		v.Verdict, v.Detail = "not-decided", "the search for it stopped first at a violation of "+x.Violation.Violation.Invariant
	case x.Complete && x.Bitstate == nil:
		v.Verdict, v.Detail = "not-reached", "complete search: no reachable state satisfies it"
	default:
		v.Verdict, v.Detail = "not-decided", "the search was bounded: "+x.StopDetail
	}
	return nil
}

// judgeWalks gives each property's verdict on each run of a walk check:
// walks visit some states, so a sometimes property is reached or not
// decided, an always property is violated or not violated in them.
func (pr *propsRun) judgeWalks(rep *checker.Report) *propsReport {
	out := &propsReport{File: pr.set.File, View: props.ViewVersion, Reductions: pr.notes}
	for i, x := range rep.Runs {
		sys := rep.Checker(i).System
		rr := propsRunReport{Run: x.Run.Name}
		for j, p := range pr.set.Props {
			v := propVerdict{Name: p.Name, Kind: p.Kind.String(), PerHandoff: p.PerHandoff, Question: p.Question}
			switch {
			case p.Kind == props.Always && x.Violation != nil && x.Violation.Violation.Invariant == p.Name:
				v.Verdict, v.Detail = "violated", "the walk's trace is the run's above"
			case p.Kind == props.Always:
				v.Verdict, v.Detail = "not-violated", "in the states the walks visited"
			case pr.set.Held(sys, j):
				v.Verdict, v.Detail = "reached", "in a walk (walks give no shortest witness: run the exhaustive search for one)"
			default:
				v.Verdict, v.Detail = "not-decided", "no walk reached it; walks visit only some states"
			}
			if a := p.Antecedent(); a != "" && p.Kind == props.Always {
				v.Antecedent, v.AntecedentHeld = a, pr.set.Held(sys, j)
			}
			rr.Properties = append(rr.Properties, v)
		}
		out.Runs = append(out.Runs, rr)
	}
	return out
}

// text renders the properties' verdicts after check's report.
func (r *propsReport) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "properties %s (%s):\n", r.File, r.View)
	for _, n := range r.Reductions {
		fmt.Fprintf(&b, "  %s\n", n)
	}
	for _, rr := range r.Runs {
		fmt.Fprintf(&b, "  run %s:\n", rr.Run)
		for _, v := range rr.Properties {
			per := ""
			if v.PerHandoff {
				per = " per handoff"
			}
			verdict := strings.ToUpper(strings.ReplaceAll(v.Verdict, "-", " "))
			if v.Verdict == "holds" {
				verdict = "holds"
			}
			if v.Verdict == "reached" && v.WitnessSteps > 0 {
				verdict = fmt.Sprintf("REACHED in %d steps (shortest witness below)", v.WitnessSteps)
			}
			if v.Kind == "leads_to" && v.Verdict == "holds" && v.Detail == "" {
				verdict = "holds (every weakly fair run meets it)"
			}
			fmt.Fprintf(&b, "    %s %s%s: %s", v.Kind, v.Name, per, verdict)
			if v.Detail != "" {
				fmt.Fprintf(&b, " (%s)", v.Detail)
			}
			b.WriteString("\n")
			switch {
			case v.Kind == "leads_to" && v.Vacuous:
				fmt.Fprintf(&b, "      vacuous: P never held (%s)\n", v.Antecedent)
			case v.Kind == "leads_to" && v.AntecedentHeld:
				fmt.Fprintf(&b, "      P held (%s), Q is %s\n", v.Antecedent, v.Then)
			case v.Kind == "leads_to":
			case v.Vacuous:
				fmt.Fprintf(&b, "      vacuous: antecedent never held (%s)\n", v.Antecedent)
			case v.Antecedent != "" && v.AntecedentHeld:
				fmt.Fprintf(&b, "      antecedent held (%s)\n", v.Antecedent)
			case v.Antecedent != "":
				fmt.Fprintf(&b, "      antecedent not seen to hold in the states explored (%s)\n", v.Antecedent)
			}
			if v.WitnessFile != "" {
				fmt.Fprintf(&b, "      witness written to %s (handoffcheck replay %s)\n", v.WitnessFile, v.WitnessFile)
			}
			if v.witness != "" {
				b.WriteString(indent(v.witness, "      "))
			}
		}
	}
	return b.String()
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// appendJSONField adds a field to the end of a JSON object, keeping the
// order of the fields before it.
func appendJSONField(obj []byte, name string, v any) ([]byte, error) {
	val, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	obj = bytes.TrimRight(obj, " \n")
	if len(obj) < 2 || obj[len(obj)-1] != '}' {
		return nil, fmt.Errorf("the report is not a JSON object")
	}
	sep := ","
	if bytes.Equal(bytes.TrimSpace(obj[:len(obj)-1]), []byte("{")) {
		sep = ""
	}
	out := append(append([]byte(nil), obj[:len(obj)-1]...), sep+fmt.Sprintf("%q:", name)...)
	out = append(out, val...)
	return append(out, '}'), nil
}

// notReached says a sometimes property was not reached by a complete
// search: a property that fails, like a violated one.
func (r *propsReport) notReached() bool {
	if r == nil {
		return false
	}
	for _, rr := range r.Runs {
		for _, v := range rr.Properties {
			if v.Kind == "sometimes" && v.Verdict == "not-reached" {
				return true
			}
		}
	}
	return false
}
