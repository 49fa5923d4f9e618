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
	if c.Symmetry {
		if ok, why := set.Symmetric(); ok {
			pr.notes = append(pr.notes, "symmetry reduction kept: every property is 'per handoff' and reads no position")
		} else {
			c.Symmetry = false
			pr.notes = append(pr.notes, "symmetry reduction off: "+why+", which renaming interchangeable handoffs or workers can change")
		}
	}
	return &c, pr
}

// propVerdict is one property's verdict on one run.
type propVerdict struct {
	Name       string `json:"name"`
	Kind       string `json:"kind"`
	PerHandoff bool   `json:"per_handoff,omitempty"`
	Question   string `json:"question,omitempty"`
	// Verdict: holds, violated, not-violated (an incomplete search),
	// reached, not-reached, not-decided.
	Verdict    string `json:"verdict"`
	Detail     string `json:"detail,omitempty"`
	Antecedent string `json:"antecedent,omitempty"`
	// Vacuous: the antecedent never held in a complete search.
	Vacuous        bool   `json:"vacuous,omitempty"`
	AntecedentHeld bool   `json:"antecedent_held,omitempty"`
	WitnessSteps   int    `json:"witness_steps,omitempty"`
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

// find searches a run for a sometimes property's shortest witness.
func (ws *witnessSearch) find(run system.Run, p *props.Property, v *propVerdict) error {
	cfg := *ws.cfg
	cfg.Judge = props.Target{P: p}
	lim := ws.lim
	lim.Liveness, lim.Reduce, lim.Sleep = false, false, false
	rep, err := checker.Check(ws.ctx, ws.proto, &cfg, []system.Run{run}, lim, nil)
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
func (pr *propsRun) judgeWalks(rep *checker.WalkReport) *propsReport {
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
			fmt.Fprintf(&b, "    %s %s%s: %s", v.Kind, v.Name, per, verdict)
			if v.Detail != "" {
				fmt.Fprintf(&b, " (%s)", v.Detail)
			}
			b.WriteString("\n")
			switch {
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
