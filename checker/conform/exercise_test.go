package conform

import (
	"bytes"
	"context"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/sim"
	"github.com/handoffcheck/handoffcheck/model"
)

// exerciseRun simulates the stranded-source scenario (fault-free),
// source-first, with extra faults, and returns its result and its log.
func exerciseRun(t *testing.T, extra func([]cluster.Request) []cluster.Fault) (*sim.Result, []byte) {
	t.Helper()
	var sc *sim.Scenario
	for i := range sim.Scenarios {
		if sim.Scenarios[i].Name == "stranded-source" {
			sc = &sim.Scenarios[i]
		}
	}
	if sc == nil {
		t.Fatal("no scenario stranded-source")
	}
	cfg, reqs, faults, err := sc.Setup("source-first")
	if err != nil {
		t.Fatal(err)
	}
	fs := extra(reqs)
	var buf bytes.Buffer
	w, err := obslog.NewWriter(&buf, cfg.LogHeader(obslog.All))
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), cfg, &sim.SliceSource{Reqs: reqs}, sim.Options{Faults: append(faults, fs...), FaultFree: sc.FaultFree && len(fs) == 0, Log: w})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil {
		t.Fatalf("the simulation broke %s: %s", res.Violation.Invariant, res.Violation.Detail)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return res, buf.Bytes()
}

func exerciseOf(t *testing.T, r *cluster.InvariantsReport, name string) cluster.InvariantExercise {
	t.Helper()
	if r == nil {
		t.Fatal("no report of the invariants exercised")
	}
	for _, x := range r.Invariants {
		if x.Invariant == name {
			return x
		}
	}
	t.Fatalf("%s is not in the report", name)
	return cluster.InvariantExercise{}
}

// A fault-free run never exercises FailedTransferNeverActivates (its
// trigger is a side acting on a failed transfer) and says so, with why;
// the same run with a transfer failure exercises it, at the request the
// fault struck, after the fault's time. Conform on each run's log agrees
// with the simulator on every invariant but AttemptIsolation, whose
// stale deliveries conform's search never takes (and says so).
func TestExercise_SimulateAndConformAgree(t *testing.T) {
	plain, plainLog := exerciseRun(t, func([]cluster.Request) []cluster.Fault { return nil })
	x := exerciseOf(t, plain.Invariants, model.NameFailedTransferNeverActivates)
	if x.Exercised || x.First != nil || x.Why != "no side acted on a failed transfer" {
		t.Fatalf("fault-free run: %+v, want never exercised, no side acted on a failed transfer", x)
	}
	if x := exerciseOf(t, plain.Invariants, model.NameFaultFreeCompletion); !x.Exercised || x.First == nil {
		t.Fatalf("fault-free run: FaultFreeCompletion %+v, want exercised where a request retired", x)
	}
	var failAt int64
	faulty, faultyLog := exerciseRun(t, func(reqs []cluster.Request) []cluster.Fault {
		failAt = reqs[1].ArrivalUS
		return []cluster.Fault{{AtUS: failAt, Kind: "transfer_failure", Request: 1, Worker: -1}}
	})
	if faulty.Summary.TransfersFailed == 0 {
		t.Fatalf("the transfer failure struck nothing: %+v", faulty.Summary)
	}
	x = exerciseOf(t, faulty.Invariants, model.NameFailedTransferNeverActivates)
	if !x.Exercised || x.First == nil || x.First.Subject != "request 1" || x.First.AtUS < failAt {
		t.Fatalf("run with a transfer failure: %+v, want exercised at request 1 from %d us on", x, failAt)
	}
	t.Logf("fault-free: %s never exercised (%s); with the fault: first at %d us, %s", model.NameFailedTransferNeverActivates, "no side acted on a failed transfer", x.First.AtUS, x.First.Subject)
	for _, x := range faulty.Invariants.Invariants {
		if x.Invariant == model.NameFaultFreeCompletion {
			t.Fatal("FaultFreeCompletion is reported for a run with a fault, which does not judge it")
		}
	}

	for _, c := range []struct {
		name string
		res  *sim.Result
		log  []byte
	}{{"fault-free", plain, plainLog}, {"transfer-failure", faulty, faultyLog}} {
		rep := judgeBytes(t, c.name+".jsonl", c.log, Options{})
		if rep.Verdict != Explained {
			t.Fatalf("%s: %s: %+v", c.name, rep.Verdict, rep.Rejection)
		}
		for _, s := range c.res.Invariants.Invariants {
			if s.Invariant == model.NameFaultFreeCompletion {
				continue // conform does not judge it
			}
			k := exerciseOf(t, rep.Invariants, s.Invariant)
			if s.Invariant == model.NameAttemptIsolation {
				if k.Exercised || k.Why != staleNotTaken {
					t.Errorf("%s: conform: AttemptIsolation %+v, want never exercised, the search leaving stale facts in flight", c.name, k)
				}
				continue
			}
			if k.Exercised != s.Exercised {
				t.Errorf("%s: %s: simulate exercised %v (%+v), conform %v (%+v)", c.name, s.Invariant, s.Exercised, s.First, k.Exercised, k.First)
			}
			if s.First != nil && s.Invariant != model.NameQuiescence && (k.First == nil || k.First.AtUS != s.First.AtUS) {
				// Quiescence is judged when nothing more is scheduled for
				// a request in the simulator, at its last fact in conform.
				t.Errorf("%s: %s: first exercised at %+v in simulate, %+v in conform", c.name, s.Invariant, s.First, k.First)
			}
		}
	}
}
