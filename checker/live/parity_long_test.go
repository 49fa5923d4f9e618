package live

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/sim"
	"github.com/handoffcheck/handoffcheck/model"
)

// restartPhases are the phases a parity workload's restart is aimed at
// under a policy: the worker of a side is killed when it logs the fact
// for the aimed request. Destination-first leaves out the source's
// request_accepted, which ties with the frontend's decode routing (both
// one latency after the prefill routing; see TestLiveReplayParity's
// abort-source), and has the source, not the destination, run the
// transfer.
func restartPhases(policy string) []struct{ side, after string } {
	ph := []struct{ side, after string }{
		{"source", "prefill_dispatched"},
		{"source", "registered"},
		{"source", "pinned"},
		{"source", "outcome_reported"},
		{"destination", "request_accepted"},
		{"destination", "reserved"},
		{"destination", "registered"},
		{"destination", "receive_completed"},
		{"destination", "activated"},
		{"destination", "outcome_reported"},
	}
	if policy == "source-first" {
		return append(ph, struct{ side, after string }{"source", "request_accepted"}, struct{ side, after string }{"destination", "transfer_started"})
	}
	return append(ph, struct{ side, after string }{"source", "transfer_started"})
}

// longRequests is a workload of n requests, a new one every gapUS, of
// a few sizes.
func longRequests(n int, gapUS int64) []cluster.Request {
	out := spaced(n, gapUS)
	for i := range out {
		out[i].PromptTokens = model.Tokens(256 + 64*(i%7))
		out[i].OutputTokens = model.Tokens(2 + i%5)
	}
	return out
}

func transitionsOf(t *testing.T, cfg *cluster.Config, reqs []cluster.Request, faults []cluster.Fault) (Transitions, *Report, Transitions) {
	t.Helper()
	var buf bytes.Buffer
	lw, err := obslog.NewWriter(&buf, cfg.LogHeader(obslog.All))
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), cfg, &slice{rs: reqs}, sim.Options{Faults: faults, Log: lw})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil {
		t.Fatalf("the simulator found %v", res.Violation)
	}
	lw.Flush()
	want, err := ReadTransitions(map[string]io.Reader{"sim": &buf}, []string{"sim"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	rep, err := Run(ctx, Options{Config: cfg, Workload: &slice{rs: reqs}, Rewind: again(reqs), Faults: faults, Scale: 0.01, Dir: dirFor(t), Spawn: execSpawner(), Errors: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	return want, rep, runTransitions(t, rep)
}

// TestLiveReplayParityRestarts: 23 workloads of 40 requests, each with
// one restart aimed by phase at request 20, under both policies, through
// real worker processes: every handoff goes through the same transitions
// live as in the simulator, the restarted worker's next generation
// serving the requests after it. A request starts 1.5 configured seconds
// after the one before, when the one before has ended: what a restart
// strikes besides its aimed request is whatever was in flight on that
// worker at that instant, and where two requests overlap, which of two
// nearly simultaneous events came first is the machine's to decide, in
// a live run (docs/live.md, LiveReplayParity). It takes minutes, so it
// runs with HANDOFFCHECK_LIVE_PARITY=1 (make live-parity).
func TestLiveReplayParityRestarts(t *testing.T) {
	if os.Getenv("HANDOFFCHECK_LIVE_PARITY") != "1" {
		t.Skip("a long sweep: HANDOFFCHECK_LIVE_PARITY=1 (make live-parity) runs it")
	}
	for _, policy := range []string{"source-first", "destination-first"} {
		for _, ph := range restartPhases(policy) {
			t.Run(fmt.Sprintf("%s/%s-%s", policy, ph.side, ph.after), func(t *testing.T) {
				cfg := parityConfig(t, policy)
				reqs := longRequests(40, 1_500_000)
				faults := []cluster.Fault{{Kind: "restart", Request: 20, Worker: -1, Side: ph.side, After: ph.after}}
				want, rep, got := transitionsOf(t, cfg, reqs, faults)
				if rep.TooLate {
					t.Skipf("the machine is too loaded to compare: %s", rep.LateWhy)
				}
				t.Logf("time scale %g (too late at %v); lateness: events %s, frames %s", rep.Scale, rep.ScalesTried, rep.Lateness.Events.String(), rep.Lateness.Frames.String())
				if rep.Restarts != 1 || rep.FaultsStruck != 1 {
					t.Fatalf("%d restarts live, %d struck, want 1", rep.Restarts, rep.FaultsStruck)
				}
				n := 0
				for a := range want {
					if !cmp.Equal(want[a], got[a]) {
						n++
					}
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("%d of %d handoffs differ (-simulate +live):\n%s", n, len(want), d)
				}
				if !rep.Clean {
					t.Errorf("leak check: %v", rep.Leaks)
				}
			})
		}
	}
}
