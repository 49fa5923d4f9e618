package live

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/internal/variant"
	"github.com/handoffcheck/handoffcheck/checker/sim"
)

// TestLive_DelayAimedAtAPhaseSlowsTheCore: a delay aimed at the transfer's
// start means in a live run what it means in the simulator. Under
// release-before-activation's tables (the destination sends the reader's
// completion as its transfer ends, before its core applies the
// activation) the destination's core falls behind, so the activation
// waits slow_core_ms and the source's release comes first: the
// simulator breaks ReleaseNeedsReaderAck. The simulator's world holds
// both sides and offers the delay from the transfer's start; the
// destination's window holds the source's registration unknown until its
// probe is answered, and under these tables offers the delay only then,
// so the worker looks for the mark once more when the answer comes,
// before the transfer ends.
//
// Robust on a loaded machine: a live run's durations are the simulator's,
// scaled, plus the machine's lateness, so the gap from transfer_done to
// activated is at least slow_core_ms scaled, whatever the load; the
// source's release waits for one relayed fact, and slow_core_ms (2 s
// here, 20 ms of wall clock at time scale 0.01) is far more than the
// lateness a run keeps (Run runs again at a larger scale past it).
func TestLive_DelayAimedAtAPhaseSlowsTheCore(t *testing.T) {
	const file = "../../testdata/variants/release-before-activation.json"
	proto := variant.Protocol(t, file)
	cfg := policyConfig(t, "source-first")
	cfg.JitterUS = 0
	cfg.SlowCoreUS = 2_000_000
	// Every command applied at once, unless a delay holds the core back
	// (the reproduction's configuration).
	cfg.Commands = 0
	faults := []cluster.Fault{{File: "plan.jsonl", Line: 2, Kind: "delay", Request: 0, Worker: -1, Side: "destination", After: "transfer_started"}}
	rs := spaced(1, 0)

	res, err := sim.Run(context.Background(), cfg, &slice{rs: rs}, sim.Options{Faults: faults, Protocol: proto})
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.FaultsStruck != 1 || res.Violation == nil || res.Violation.Invariant != "ReleaseNeedsReaderAck" {
		t.Fatalf("the simulator struck %d faults and found %v; want the delay struck and ReleaseNeedsReaderAck broken", res.Summary.FaultsStruck, res.Violation)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := Run(ctx, Options{Config: cfg, Workload: &slice{rs: rs}, Rewind: again(rs), Faults: faults, Scale: 0.01, Dir: dirFor(t),
		Spawn: &GoSpawner{Protocol: proto, Errors: io.Discard}, SpecFile: file, Protocol: proto, Errors: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if rep.FaultsStruck != 1 || rep.Succeeded != 1 || !rep.Clean {
		rep.Write(os.Stderr)
		t.Fatalf("%d faults struck live, %d succeeded, clean %v; want the delay struck and the request served", rep.FaultsStruck, rep.Succeeded, rep.Clean)
	}
	at := map[string]int64{}
	for _, name := range rep.Logs {
		factTimes(t, name, at)
	}
	done, activated, released := at["transfer_done"], at["activated"], at["source_released"]
	// A microsecond for the time stamps' truncation.
	if floor := int64(float64(cfg.SlowCoreUS)*rep.Scale) - 1; activated-done < floor {
		t.Fatalf("live activated %d µs after transfer_done at time scale %g, want at least %d (slow_core_ms, scaled)", activated-done, rep.Scale, floor)
	}
	// The processes share the run's epoch: their time stamps compare.
	if released >= activated {
		t.Fatalf("live released the source at %d µs, activated at %d µs; want the release first, as on the simulator's clock", released, activated)
	}
}

// factTimes sets at[kind] to the time stamp of the log's fact of that
// kind (the run has one request, so one fact of each kind a side logs).
func factTimes(t *testing.T, name string, at map[string]int64) {
	t.Helper()
	for _, x := range factsOf(t, name) {
		switch k := x.Kind.String(); k {
		case "transfer_done", "activated", "source_released":
			at[k] = x.TUS
		}
	}
}
