package sim

import (
	"bytes"
	"context"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/sim/faultplan"
	"github.com/handoffcheck/handoffcheck/checker/system"
)

// aimedFaults are the plan lines of every form a fault kind takes, aimed
// at request 0 (or worker 0) at time 0: each side of a kind that names
// one, and the phase form of a kind aimed at one.
func aimedFaults(k system.Fault) []faultplan.Fault {
	f := faultplan.Fault{Kind: k.String(), Request: -1, Worker: -1}
	h, worker, _, _ := k.Move().Names()
	if h {
		f.Request = 0
	}
	if worker {
		f.Worker = 0
	}
	out := []faultplan.Fault{f}
	if cluster.NamesSide(k) {
		f.Side = "source"
		g := f
		g.Side = "destination"
		out = []faultplan.Fault{f, g}
	}
	if system.FaultKinds[k].Phase {
		for _, sd := range []string{"source", "destination"} {
			out = append(out, faultplan.Fault{Kind: k.String(), Request: 0, Worker: -1, Side: sd, After: "registered"})
		}
	}
	return out
}

// Every fault kind the table lets a plan schedule goes the generic way:
// its plan line round-trips through the plan's writer and parser, it is
// marked on its request (cluster.Marks.Mark), and the simulator accounts
// for it, struck or missed, never dropped; the kinds a default run
// offers strike. A kind added to the fault table with a strike rule no
// driver follows fails here, not silently in a run.
func TestEveryPlannedFaultKindStrikes(t *testing.T) {
	planned := 0
	for k := range system.NumFaults {
		if !cluster.Planned(k) {
			if faultplan.NotSchedulable(k.String()) == "" {
				t.Errorf("%s: no plan schedules it, and the plan's refusal gives no reason", k)
			}
			continue
		}
		planned++
		struck := 0
		for _, f := range aimedFaults(k) {
			var buf bytes.Buffer
			if err := faultplan.Write(&buf, &faultplan.Plan{Faults: []faultplan.Fault{f}}); err != nil {
				t.Fatalf("%s: the plan's writer refuses %+v: %v", k, f, err)
			}
			p, err := faultplan.Parse(&buf, "plan.jsonl")
			if err != nil || len(p.Faults) != 1 {
				t.Fatalf("%s: the plan's parser refuses what its writer wrote (%q): %v", k, buf.String(), err)
			}
			g := p.Faults[0]
			cf := cluster.Fault{File: "plan.jsonl", Line: g.Line, AtUS: g.AtUS, Kind: g.Kind, Request: g.Request, Worker: g.Worker, To: g.To, Side: g.Side, Msg: g.Msg, After: g.After}
			if got, err := cf.FaultKind(); err != nil || got != k {
				t.Fatalf("%s: read back as %v (%v)", k, got, err)
			}
			if !cf.WorkerRestart() {
				var m cluster.Marks
				if err := m.Mark(&cf); err != nil || m.Left() != 1 {
					t.Fatalf("%s: %+v holds %d marks (%v); want 1", k, cf, m.Left(), err)
				}
			}
			res, err := Run(context.Background(), cluster.DefaultConfig(), &SliceSource{Reqs: evenly(4, 0, 20_000, 1024, 8, "", 0)},
				Options{Faults: []cluster.Fault{cf}})
			if err != nil {
				t.Fatalf("%s: %+v: %v", k, cf, err)
			}
			if res.Summary.FaultsStruck+res.Summary.FaultsMissed != 1 {
				t.Errorf("%s: %+v: %d struck and %d missed; want the one fault accounted for", k, cf, res.Summary.FaultsStruck, res.Summary.FaultsMissed)
			}
			struck += res.Summary.FaultsStruck
		}
		// An eviction is offered only while a side that is not
		// finished keeps released blocks, which a default run never
		// has: the cache evicts what a finished side keeps at once.
		if struck == 0 && k != system.Evict {
			t.Errorf("%s: no aimed fault of the kind struck", k)
		}
	}
	if planned != len(faultplan.Kinds()) {
		t.Errorf("the table lets a plan schedule %d kinds, the plan's parser %d (%v)", planned, len(faultplan.Kinds()), faultplan.Kinds())
	}
}
