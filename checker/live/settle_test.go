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
func TestLive_StuckSideSettlesTheDrain(t *testing.T) {
	for _, tc := range []struct{ variant, side, after, leaks string }{
		{"cancel-noop-leaks-held-source", "source", "prefill_dispatched", "the source's pinned blocks"},
		{"withdraw-noop-leaks-reservation", "destination", "request_accepted", "the destination's pages"},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			file := "../../testdata/variants/" + tc.variant + ".json"
			proto := variant.Protocol(t, file)
			cfg := policyConfig(t, "source-first")
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			rs := spaced(1, 0)
			var faults []cluster.Fault
			for i, kind := range []string{"delay", "abort"} {
				faults = append(faults, cluster.Fault{File: "plan.jsonl", Line: i + 2, Kind: kind, Request: 0, Worker: -1, Side: tc.side, After: tc.after})
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
				t.Fatalf("%d faults struck, clean %v, %d failed; want both struck, %s leaked, the request failed", rep.FaultsStruck, rep.Clean, rep.Failed, tc.leaks)
			}
			if took >= drain/2 {
				t.Fatalf("the run took %v: the drain waited for a side that holds on for ever", took)
			}
		})
	}
}
