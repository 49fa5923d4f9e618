package live

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/sim"
)

// longEnv is set by make test-long (which CI runs as its own step): the
// tests that take long on two busy cores run only then, so that make
// test stays within a few minutes.
const longEnv = "HANDOFFCHECK_LONG"

// longOnly skips t unless make test-long runs it.
func longOnly(t *testing.T, what string) {
	t.Helper()
	if os.Getenv(longEnv) == "" {
		t.Skipf("%s: make test-long runs it (%s=1; CI runs it too)", what, longEnv)
	}
}

// parityConfig is the default cluster with short deadlines far apart
// and no jitter: scaled, the deadlines and the gaps between them still
// dwarf a loaded machine's scheduling noise (tens of milliseconds).
func parityConfig(t testing.TB, policy string) *cluster.Config {
	cfg := policyConfig(t, policy)
	// A hop of the frontend takes 2 ms on the wall clock: more than a
	// loaded machine's round trip to a worker and back, so that what a
	// worker reports at once reaches the frontend before a hop it started
	// ends, in both adapters.
	cfg.LatencyUS, cfg.JitterUS = 200_000, 0
	cfg.Timers = cluster.Timers{LeaseUS: 4_000_000, HeartbeatUS: 1_000_000, BootstrapUS: 6_000_000, ReservationUS: 9_000_000, TransferDeadlineUS: 3_000_000}
	cfg.HealthCheckUS = 1_000_000
	return cfg
}

// parityScale runs a configured second in 50 ms.
const parityScale = 0.05

// parityWorkload is one workload of the parity test: two requests, the
// second after the first ended, the plan's faults aimed at request 1 by
// phase.
type parityWorkload struct {
	name   string
	faults func(policy string) []cluster.Fault
	// same: the fault leaves the transitions as they are without it (a
	// duplicate of an idempotent fact; a core that falls behind changes
	// when, not what).
	same bool
	// only, when set, is the one policy the workload runs under.
	only string
}

func aimed(kind string, f cluster.Fault) []cluster.Fault {
	f.Kind, f.Request, f.Worker = kind, 1, -1
	return []cluster.Fault{f}
}

// toSource is the fact a policy's destination sends its source first;
// toDest the one a source sends its destination.
func toSource(policy string) string {
	if policy == "source-first" {
		return "ReaderCompleted"
	}
	return "DestinationReserved"
}

var parityWorkloads = []parityWorkload{
	{name: "plain", faults: func(string) []cluster.Fault { return nil }},
	{name: "client-cancel", faults: func(string) []cluster.Fault { return aimed("cancel", cluster.Fault{}) }},
	{name: "duplicate-to-source", faults: func(p string) []cluster.Fault {
		return aimed("duplicate", cluster.Fault{To: "source", Msg: toSource(p)})
	}, same: true},
	{name: "loss-to-source", faults: func(p string) []cluster.Fault { return aimed("loss", cluster.Fault{To: "source", Msg: toSource(p)}) }},
	{name: "hung-transfer", faults: func(string) []cluster.Fault { return aimed("hang", cluster.Fault{}) }},
	{name: "transfer-failure", faults: func(string) []cluster.Fault { return aimed("transfer_failure", cluster.Fault{}) }},
	// Destination-first, a source that aborts as its request arrives ties
	// with the frontend's decode routing: both come one latency after the
	// prefill routing. The simulator breaks the tie by event order, a
	// live run by which process is quicker; both runs are the protocol's
	// (conform judges them), so the workload runs source-first only.
	{name: "abort-source", faults: func(string) []cluster.Fault { return aimed("abort", cluster.Fault{Side: "source"}) }, only: "source-first"},
	{name: "abort-destination", faults: func(string) []cluster.Fault { return aimed("abort", cluster.Fault{Side: "destination"}) }},
	{name: "duplicate-to-destination", faults: func(string) []cluster.Fault {
		return aimed("duplicate", cluster.Fault{To: "destination", Msg: "ReceiveCompleted"})
	}, only: "destination-first", same: true},
	{name: "loss-to-destination", faults: func(string) []cluster.Fault {
		return aimed("loss", cluster.Fault{To: "destination", Msg: "ReceiveCompleted"})
	}, only: "destination-first"},
	{name: "slow-destination-core", faults: func(string) []cluster.Fault { return aimed("delay", cluster.Fault{Side: "destination"}) }, same: true},
	{name: "restart-runner-mid-transfer", faults: func(p string) []cluster.Fault {
		side := "destination"
		if p == "destination-first" {
			side = "source"
		}
		return aimed("restart", cluster.Fault{Side: side, After: "transfer_started"})
	}},
	{name: "restart-destination-reserved", faults: func(string) []cluster.Fault {
		return aimed("restart", cluster.Fault{Side: "destination", After: "reserved"})
	}},
	{name: "restart-source-registered", faults: func(string) []cluster.Fault {
		return aimed("restart", cluster.Fault{Side: "source", After: "registered"})
	}},
}

func parityRequests() []cluster.Request {
	return spaced(2, 2_500_000)
}

// simTransitions runs the workload through the simulator.
func simTransitions(t *testing.T, cfg *cluster.Config, faults []cluster.Fault) (Transitions, int) {
	var buf bytes.Buffer
	lw, err := obslog.NewWriter(&buf, cfg.LogHeader(obslog.All))
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), cfg, &slice{rs: parityRequests()}, sim.Options{Faults: faults, Log: lw})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil {
		t.Fatalf("the simulator found %v", res.Violation)
	}
	lw.Flush()
	tr, err := ReadTransitions(map[string]io.Reader{"sim": &buf}, []string{"sim"})
	if err != nil {
		t.Fatal(err)
	}
	return tr, res.Summary.FaultsStruck
}

func liveTransitions(t *testing.T, cfg *cluster.Config, faults []cluster.Fault, spawn Spawner) (Transitions, *Report) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := dirFor(t)
	rep, err := Run(ctx, Options{Config: cfg, Workload: &slice{rs: parityRequests()}, Rewind: again(parityRequests()), Faults: faults, Scale: parityScale, Dir: dir, Spawn: spawn, Errors: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	return runTransitions(t, rep), rep
}

// runTransitions reads the transitions of a live run's logs.
func runTransitions(t *testing.T, rep *Report) Transitions {
	t.Helper()
	logs := map[string]io.Reader{}
	for _, f := range rep.Logs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		logs[f] = bytes.NewReader(b)
	}
	tr, err := ReadTransitions(logs, rep.Logs)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// shortParityEvery is the stride of the parity workloads go test -short
// compares.
const shortParityEvery = 4

// TestLiveReplayParity: the same workload and fault plan through the
// simulator and through live processes give the same transitions.
func TestLiveReplayParity(t *testing.T) {
	for _, policy := range []string{"source-first", "destination-first"} {
		plain, _ := simTransitions(t, parityConfig(t, policy), nil)
		for i, w := range parityWorkloads {
			if w.only != "" && w.only != policy {
				continue
			}
			if testing.Short() && i%shortParityEvery != 0 {
				// go test -short and make test are the quick look: every
				// fourth workload (the plain one among them). make
				// test-long and CI run all.
				continue
			}
			t.Run(policy+"/"+w.name, func(t *testing.T) {
				if i%shortParityEvery != 0 {
					longOnly(t, "live processes through every parity workload, each waiting out its deadlines")
				}
				cfg := parityConfig(t, policy)
				faults := w.faults(policy)
				want, struck := simTransitions(t, cfg, faults)
				if struck != len(faults) {
					t.Fatalf("%d of the plan's %d faults struck in the simulator", struck, len(faults))
				}
				// A fault that changes nothing would make the workload
				// the plain one again.
				if faults != nil && !w.same && cmp.Equal(want["r1"], plain["r1"]) {
					t.Fatalf("the fault left request 1 as it is without faults: %v", want["r1"])
				}
				got, rep := liveTransitions(t, cfg, faults, &GoSpawner{Errors: io.Discard})
				if rep.TooLate {
					// Four runs up to eight times the time scale, all
					// later than the deadlines absorb: the machine, not
					// the protocol, decided what each handoff went
					// through.
					t.Skipf("the machine is too loaded to compare: %s", rep.LateWhy)
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("live differs from the simulator (-simulate +live):\n%s", d)
				}
				if rep.FaultsStruck != struck {
					t.Errorf("%d faults struck live, %d in the simulator", rep.FaultsStruck, struck)
				}
				if !rep.Clean {
					t.Errorf("leak check: %v", rep.Leaks)
				}
			})
		}
	}
}
