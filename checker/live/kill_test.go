package live

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/conform"
)

// judge runs conform on a live run's logs and wants them explained.
func judge(t *testing.T, rep *Report) {
	t.Helper()
	var in []conform.Input
	for _, name := range rep.Logs {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		in = append(in, conform.Input{Name: name, R: f})
	}
	cr, err := conform.Judge(in, conform.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if cr.Verdict != conform.Explained {
		if x := cr.Rejection; x != nil {
			t.Fatalf("conform: %s at %s:%d: %s: %s %s\n%v\n%v", cr.Verdict, x.File, x.Line, x.Fact, x.Invariant, x.Detail, x.Allowed, x.Explained)
		}
		t.Fatalf("conform: %s: %+v", cr.Verdict, cr)
	}
	if cr.Attempts != rep.Requests {
		t.Errorf("conform judged %d attempts, the run had %d", cr.Attempts, rep.Requests)
	}
}

// TestLiveKillRestart: real worker processes; a decode worker is killed
// with SIGKILL in the middle of the run and starts again as a new
// generation; the run ends with nothing held and its logs conform.
func TestLiveKillRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, policy := range []string{"source-first", "destination-first"} {
		t.Run(policy, func(t *testing.T) {
			cfg := parityConfig(t, policy)
			cfg.LatencyUS = 500
			// Deadlines ten times the parity test's: on a loaded machine
			// (under -race, beside other work) a handoff's steps lag by
			// tens of milliseconds, and a deadline that fired on that lag
			// would end request 100 before the phase the restart waits
			// for. The handoffs fail here because of the restart.
			tm := &cfg.Timers
			tm.LeaseUS, tm.HeartbeatUS, tm.BootstrapUS, tm.ReservationUS, tm.TransferDeadlineUS =
				10*tm.LeaseUS, 10*tm.HeartbeatUS, 10*tm.BootstrapUS, 10*tm.ReservationUS, 10*tm.TransferDeadlineUS
			reqs := spaced(200, 50_000)
			// Half-way, in the middle of request 100's transfer, with
			// other handoffs in flight.
			side := "destination"
			if policy == "destination-first" {
				side = "source"
			}
			faults := []cluster.Fault{{Kind: "restart", Request: 100, Worker: -1, Side: side, After: "transfer_started"}}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			rep, err := Run(ctx, Options{Config: cfg, Workload: &slice{rs: reqs}, Rewind: again(reqs), Faults: faults, Scale: 0.01, Dir: dirFor(t),
				Spawn: execSpawner(), Errors: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Restarts != 1 || rep.Finished != len(reqs) {
				t.Fatalf("%d restarts and %d finished requests, want 1 and %d (%d struck)", rep.Restarts, rep.Finished, len(reqs), rep.FaultsStruck)
			}
			if rep.Failed == 0 || rep.FaultsStruck != 1 {
				t.Errorf("the restart struck %d times and failed %d handoffs", rep.FaultsStruck, rep.Failed)
			}
			// Worker processes: the report measures their CPU apart.
			if c := rep.CPU; c.InProcess || c.CoordinatorUS <= 0 || c.WorkersUS <= 0 {
				t.Errorf("CPU per handoff %+v, want the coordinator's and the workers' processes measured", c)
			}
			if !rep.Clean {
				rep.Write(os.Stderr)
				t.Fatalf("leaks: %v", rep.Leaks)
			}
			judge(t, rep)
		})
	}
}

// TestLiveProxyFaults: the proxy drops, duplicates and delays facts at
// random; every owner reclaims on its own deadline, nothing is left held,
// and the logs conform.
func TestLiveProxyFaults(t *testing.T) {
	for _, policy := range []string{"source-first", "destination-first"} {
		t.Run(policy, func(t *testing.T) {
			cfg := parityConfig(t, policy)
			cfg.LatencyUS = 500
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			rep, err := Run(ctx, Options{Config: cfg, Workload: &slice{rs: spaced(300, 20_000)}, Rewind: again(spaced(300, 20_000)), Scale: parityScale, Dir: dirFor(t),
				Proxy: ProxyFaults{Seed: 7, Rate: 0.05, MaxDelayUS: 300_000}, Spawn: &GoSpawner{Errors: io.Discard}, Errors: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			p := rep.Proxy
			if p.Dropped == 0 || p.Duplicated == 0 || p.Delayed == 0 {
				t.Fatalf("the proxy did not fault every way: %+v", p)
			}
			if !rep.Clean || rep.Finished != 300 {
				t.Fatalf("%d finished; leaks: %v", rep.Finished, rep.Leaks)
			}
			judge(t, rep)
		})
	}
}

// TestLiveIdleGeneration: a prefill worker killed after the last request
// was routed comes back as a generation that takes no attempt; the
// report says why, not only that it refused frames.
func TestLiveIdleGeneration(t *testing.T) {
	cfg := parityConfig(t, "source-first")
	cfg.Prefill.Workers = 1
	reqs := spaced(3, 2_000_000)
	faults := []cluster.Fault{{Kind: "restart", Request: 2, Worker: -1, Side: "source", After: "pinned"}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := Run(ctx, Options{Config: cfg, Workload: &slice{rs: reqs}, Rewind: again(reqs), Faults: faults, Scale: parityScale, Dir: dirFor(t),
		Spawn: &GoSpawner{Errors: io.Discard}, Errors: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.Write(&b)
	if rep.Restarts != 1 || !strings.Contains(b.String(), "source worker 0 gen 1: 0 attempts") {
		t.Fatalf("want prefill worker 0 restarted, its new generation idle:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "took no attempt: it started at") || !strings.Contains(b.String(), "after the last request was routed to a prefill worker") {
		t.Fatalf("the report does not say why generation 1 took no attempt:\n%s", b.String())
	}
	judge(t, rep)
}
