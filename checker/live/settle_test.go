package live

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/internal/variant"
)

// TestLive_StuckSideSettlesTheDrain: a side that holds on for ever ends
// the run as soon as nothing is queued: it sends its ledger when the
// coordinator says the drain is settled, not at the drain's timeout, and
// the leak is reported all the same.
//   - cancel-noop-leaks-held-source: the source's cancel is a no-op once
//     its slowed core applies it, so it ends Aborted still pinned, given
//     up holding its pinned blocks with nothing left to happen. The delay
//     and the abort aimed at one phase strike in the plan's order (the
//     delay first: it slows the abort's command).
//   - withdraw-noop-leaks-reservation: the destination, aborted before it
//     reserves, keeps the reservation its withdraw should return, and
//     ends with its heartbeat's deadline disarmed while that deadline's
//     event is still queued: taken, the event does nothing, so it is no
//     reason to wait.
//   - prefill-after-early-outcome: the source, aborted holding nothing
//     (an abort aimed at the destination's registration), takes the
//     destination's late DestinationReserved in its finished machine,
//     whose row starts the prefill: it holds its blocks after its
//     outcome, never having given up holding them, with nothing left to
//     happen. When the drain asks, its last events may still be queued:
//     it answers once they have run.
func TestLive_StuckSideSettlesTheDrain(t *testing.T) {
	delayAndAbort := func(side, after string) []cluster.Fault {
		var faults []cluster.Fault
		for i, kind := range []string{"delay", "abort"} {
			faults = append(faults, cluster.Fault{File: "plan.jsonl", Line: i + 2, Kind: kind, Request: 0, Worker: -1, Side: side, After: after})
		}
		return faults
	}
	for _, tc := range []struct {
		variant, policy string
		faults          []cluster.Fault
		leaks           string
	}{
		{"cancel-noop-leaks-held-source", "source-first", delayAndAbort("source", "prefill_dispatched"), "the source's pinned blocks"},
		{"withdraw-noop-leaks-reservation", "source-first", delayAndAbort("destination", "request_accepted"), "the destination's pages"},
		{"prefill-after-early-outcome", "destination-first", []cluster.Fault{{File: "plan.jsonl", Line: 2, Kind: "abort", Request: 0, Worker: -1, Side: "source", After: "registered", AfterSide: "destination"}}, "the source's active blocks"},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			file := "../../testdata/variants/" + tc.variant + ".json"
			proto := variant.Protocol(t, file)
			cfg := policyConfig(t, tc.policy)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			rs := spaced(1, 0)
			faults := tc.faults
			const drain = 30 * time.Second
			start := time.Now()
			rep, err := Run(ctx, Options{Config: cfg, Workload: &slice{rs: rs}, Rewind: again(rs), Scale: 0.01, Dir: dirFor(t), Spawn: &GoSpawner{Protocol: proto},
				SpecFile: file, Protocol: proto, Faults: faults, DrainTimeout: drain})
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			if rep.FaultsStruck != len(faults) || rep.Clean || rep.Failed != 1 {
				rep.Write(os.Stderr)
				t.Fatalf("%d faults struck, clean %v, %d failed; want all %d struck, %s leaked, the request failed", rep.FaultsStruck, rep.Clean, rep.Failed, len(faults), tc.leaks)
			}
			if took >= drain/2 {
				t.Fatalf("the run took %v: the drain waited for a side that holds on for ever", took)
			}
		})
	}
}
