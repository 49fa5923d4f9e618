package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/machines/interp"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// Ending a run with handoffs unresolved (the design's replay teardown):
// under both policies, with faults planned past the teardown, every
// unresolved handoff is cut and releases what it holds once (no
// invariant breaks on the way), the requests decoding finish, and every
// worker ends holding nothing; the summary counts what was cut, what
// decoded on and what never arrived.
func TestTeardown_CutsEveryHandoffInFlightAndReleasesIt(t *testing.T) {
	reqs := generated(t, 3, 300, 60, 0.03)
	faults := []cluster.Fault{{AtUS: 4_000_000, Kind: system.Restart.String(), Worker: 0, Request: -1}}
	for _, pol := range []string{"source-first", "destination-first"} {
		cfg := cluster.DefaultConfig()
		if err := cfg.SetPolicy(pol); err != nil {
			t.Fatal(err)
		}
		var tl bytes.Buffer
		rec := NewRecorder(&tl)
		const until = 2_000_000
		res, err := Run(context.Background(), cfg, &SliceSource{Reqs: reqs}, Options{Timeline: rec, UntilUS: until, Faults: faults})
		if err != nil || rec.Err() != nil {
			t.Fatal(err, rec.Err())
		}
		if res.Violation != nil {
			t.Fatalf("%s: %+v", pol, res.Violation)
		}
		s := res.Summary
		td := s.Teardown
		if td == nil || td.AtMS != until/1000 || td.Cut == 0 || td.Cancelled == 0 || td.Cancelled > td.Cut || td.DecodingOn == 0 {
			t.Fatalf("%s: teardown %+v", pol, td)
		}
		if s.Requests+td.NotArrived != len(reqs) || s.FaultsStruck != 0 {
			t.Errorf("%s: %d requests ran and %d never arrived, of %d; %d faults struck after the teardown", pol, s.Requests, td.NotArrived, len(reqs), s.FaultsStruck)
		}
		if s.Succeeded+s.Failed+s.Cancelled != s.Requests {
			t.Errorf("%s: %d succeeded, %d failed, %d cancelled of %d requests", pol, s.Succeeded, s.Failed, s.Cancelled, s.Requests)
		}
		var got Timeline
		if err := json.Unmarshal(tl.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		for _, w := range got.Workers {
			last := w.Samples[len(w.Samples)-1]
			if last.Pinned != 0 || last.Reserved != 0 || last.Active != 0 || last.InFlight != 0 || last.KVUsed != 0 || last.Booked != 0 {
				t.Errorf("%s: worker %d ends holding %+v", pol, w.Worker, last)
			}
		}
		var out bytes.Buffer
		res.WriteSummary(&out)
		if !bytes.Contains(out.Bytes(), []byte("each released what it held once, nothing held at the end")) {
			t.Errorf("%s: the summary does not say what the teardown did:\n%s", pol, out.String())
		}
		js, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back struct {
			Teardown *Teardown `json:"teardown"`
		}
		if err := json.Unmarshal(js, &back); err != nil || back.Teardown == nil || *back.Teardown != *td {
			t.Errorf("%s: the JSON summary's teardown is %+v, want %+v (%v)", pol, back.Teardown, td, err)
		}
		t.Logf("%s: teardown %+v; %d requests ran", pol, *td, s.Requests)
	}
}

// A lifecycle whose cancel forgets a pinned source (the row waits for a
// release it never asked for) is caught at the teardown: the cut handoffs
// leave pinned blocks that nothing will ever free.
func TestTeardown_CatchesACancelThatLeaks(t *testing.T) {
	broken := spec.Default()
	tb := broken.Table(spec.Source)
	i := tb.Lookup(spec.SourceFirst, "Pinned", "ClientCancelled")
	if i < 0 {
		t.Fatal("no source row for ClientCancelled while pinned")
	}
	tb.Rows[i].Actions = []string{"DisarmTransferDeadline", "DisarmLease", "SendCancelled"} // no fence, no release
	it, err := interp.New(broken)
	if err != nil {
		t.Fatal(err)
	}
	p, err := system.FromStepper("cancel forgets the pin", broken, it)
	if err != nil {
		t.Fatal(err)
	}
	cfg := cluster.DefaultConfig()
	if err := cfg.SetPolicy("source-first"); err != nil {
		t.Fatal(err)
	}
	reqs := generated(t, 3, 300, 60, 0.03)
	for i := range reqs {
		reqs[i].CancelUS = -1 // no client cancels: only the teardown's
	}
	full, err := Run(context.Background(), cfg, &SliceSource{Reqs: reqs}, Options{Protocol: p})
	if err != nil {
		t.Fatal(err)
	}
	if full.Violation != nil {
		t.Fatalf("without cancels the broken row never fires, yet: %+v", full.Violation)
	}
	res, err := Run(context.Background(), cfg, &SliceSource{Reqs: reqs}, Options{Protocol: p, UntilUS: 2_000_000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation == nil {
		t.Fatal("the teardown cut pinned sources whose cancel leaks, and nothing was caught")
	}
	if res.Violation.AtUS < 2_000_000 {
		t.Errorf("caught at %d µs, before the teardown", res.Violation.AtUS)
	}
	switch res.Violation.Invariant {
	case model.NameQuiescence, model.NameExactlyOnceRelease, model.NameRouterCleanup, model.NameInFlightAccounting, cluster.NameBoundedReclaim:
	default:
		t.Errorf("caught as %s: %s", res.Violation.Invariant, res.Violation.Detail)
	}
	t.Logf("caught: %s: %s", res.Violation.Invariant, res.Violation.Detail)
}
