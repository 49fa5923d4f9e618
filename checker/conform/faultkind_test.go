package conform

import (
	"bytes"
	"context"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/sim"
	"github.com/handoffcheck/handoffcheck/checker/system"
)

// Every fault kind a plan may schedule, struck by the simulator in each
// form a plan line takes (each side of a kind that names one; its phase
// form), leaves a log the judge explains: a kind added to the fault
// table whose logs the judge's search cannot reach (its greedy budget, the
// unlogged faults a level allows) fails here naming the kind.
func TestEveryPlannedFaultKindConforms(t *testing.T) {
	for k := range system.NumFaults {
		if !cluster.Planned(k) {
			continue
		}
		kind := &system.FaultKinds[k]
		f := cluster.Fault{File: "plan.jsonl", Line: 1, Kind: k.String(), Request: 1, Worker: -1}
		forms := []cluster.Fault{f}
		if cluster.AtTime(k) {
			forms[0].Request, forms[0].Worker = -1, 0
		}
		if cluster.NamesSide(k) {
			forms[0].Side = "source"
			g := f
			g.Side = "destination"
			forms = append(forms, g)
		}
		if kind.Phase {
			for _, sd := range []string{"source", "destination"} {
				g := f
				g.Side, g.After = sd, "registered"
				forms = append(forms, g)
			}
		}
		for _, f := range forms {
			cfg := cluster.DefaultConfig()
			var reqs []cluster.Request
			for i := range 3 {
				reqs = append(reqs, cluster.Request{Index: i, ArrivalUS: int64(i) * 20_000, PromptTokens: 1024, OutputTokens: 8, CancelUS: -1})
			}
			var buf bytes.Buffer
			w, err := obslog.NewWriter(&buf, cfg.LogHeader(obslog.All))
			if err != nil {
				t.Fatal(err)
			}
			res, err := sim.Run(context.Background(), cfg, &sim.SliceSource{Reqs: reqs}, sim.Options{Faults: []cluster.Fault{f}, Log: w})
			if err != nil || res.Violation != nil {
				t.Fatalf("%s: %+v: %v %v", k, f, err, res.Violation)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			rep := judgeBytes(t, k.String(), buf.Bytes(), Options{})
			if rep.Verdict != Explained {
				t.Errorf("%s: %+v (%d struck): %s: %+v", k, f, res.Summary.FaultsStruck, rep.Verdict, rep.Rejection)
			}
		}
	}
}

// The fault table's Logs names a kind of the observation log, and the
// first fact the judge waits for before it takes such a move is logged by
// the process that kind says (the move's side for a side's kind).
func TestFaultKinds_LogsNamesALogKind(t *testing.T) {
	for k := range system.NumFaults {
		name := system.FaultKinds[k].Logs
		if name == "" {
			continue
		}
		lk, ok := obslog.KindNamed(name)
		if !ok {
			t.Errorf("%s: Logs %q is no kind of the observation log", k, name)
			continue
		}
		for sd := range 2 {
			l := firstFact(k, system.Move{Kind: k.Move(), Arg: int8(sd)})
			if l.Kind != lk || l.By == obslog.BySide || (obslog.Kinds[lk].Who != obslog.BySide && l.By != obslog.Kinds[lk].Who) {
				t.Errorf("%s: first fact %+v; want %s logged by its process", k, l, name)
			}
		}
	}
}

// A move the judge skips when no row acts on its fact is one that hands
// a fact to its side: a delivery, and the duplicate, which a log shows as
// one; a loss, which hands nothing, and every other move are not.
func TestDelivers_TheMovesThatHandAFactOver(t *testing.T) {
	want := map[string]bool{"deliver": true, "duplicate": true}
	for k := system.MoveKind(1); k < system.NumMoveKinds; k++ {
		if got := delivers(k); got != want[k.String()] {
			t.Errorf("%s: delivers %v, want %v", k, got, want[k.String()])
		}
	}
	if delivers(0) {
		t.Error("the zero move kind delivers")
	}
}
