package live

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/internal/variant"
)

// TestLive_StuckSideSettlesTheDrain: under tables whose source, its
// cancel a no-op once its slowed core applies it, ends Aborted still
// pinned, a delay and an abort aimed at one phase strike in the plan's
// order (the delay first: it slows the abort's command), and the run
// ends as soon as nothing is queued: the source, given up holding its
// pinned blocks with nothing left to happen, sends its ledger when the
// coordinator says the drain is settled, not at the drain's timeout. The
// leak is reported all the same.
func TestLive_StuckSideSettlesTheDrain(t *testing.T) {
	const file = "../../testdata/variants/cancel-noop-leaks-held-source.json"
	proto := variant.Protocol(t, file)
	cfg := policyConfig(t, "source-first")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rs := spaced(1, 0)
	var faults []cluster.Fault
	for i, kind := range []string{"delay", "abort"} {
		faults = append(faults, cluster.Fault{File: "plan.jsonl", Line: i + 2, Kind: kind, Request: 0, Worker: -1, Side: "source", After: "prefill_dispatched"})
	}
	const drain = 30 * time.Second
	start := time.Now()
	rep, err := Run(ctx, Options{Config: cfg, Workload: &slice{rs: rs}, Rewind: again(rs), Scale: 0.01, Dir: dirFor(t), Spawn: &GoSpawner{Protocol: proto},
		SpecFile: file, Protocol: proto, Faults: faults, DrainTimeout: drain})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if rep.FaultsStruck != 2 || rep.Clean || rep.Failed != 1 {
		rep.Write(os.Stderr)
		t.Fatalf("%d faults struck, clean %v, %d failed; want both struck, the source's pinned blocks leaked, the request failed", rep.FaultsStruck, rep.Clean, rep.Failed)
	}
	if took >= drain/2 {
		t.Fatalf("the run took %v: the drain waited for a side that holds on for ever", took)
	}
}
