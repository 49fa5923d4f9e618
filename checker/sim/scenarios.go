package sim

import (
	"fmt"
	"io"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/model"
)

// Scenario is a named scenario of docs/lifecycle.md section 5 on the
// clock: a cluster, a workload and a fault plan, for either policy.
type Scenario struct {
	Name    string
	Meaning string
	// FaultFree: no fault and no cancel, so every handoff must succeed
	// (FaultFreeCompletion is judged).
	FaultFree bool
	build     func(c *cluster.Config) ([]cluster.Request, []cluster.Fault)
	tune      func(c *cluster.Config)
}

// Setup is a scenario's configuration, workload and faults under a
// policy: source-first runs on vLLM, destination-first on SGLang, as the
// engines do.
func (sc *Scenario) Setup(policy string) (*cluster.Config, []cluster.Request, []cluster.Fault, error) {
	c := cluster.DefaultConfig()
	switch policy {
	case "source-first":
		c.Engine = model.VLLM
	case "destination-first":
		c.Engine = model.SGLang
	case cluster.Disabled:
		// The legacy path on the engine of source-first, today's vLLM path.
		c.Engine = model.VLLM
	default:
		return nil, nil, nil, fmt.Errorf("%w: scenario %s runs under source-first, destination-first or %s, not %q", cluster.ErrConfig, sc.Name, cluster.Disabled, policy)
	}
	if err := c.SetPolicy(policy); err != nil {
		return nil, nil, nil, err
	}
	if sc.tune != nil {
		sc.tune(c)
	}
	reqs, faults := sc.build(c)
	return c, reqs, faults, nil
}

// Scenarios lists the scenarios the simulator runs by name, in
// docs/lifecycle.md section 5 order. (live-replay-parity compares two
// adapters; it is not one run.)
var Scenarios = []Scenario{
	{Name: "stranded-source", FaultFree: true,
		Meaning: "decode capacity is full while 4K-token prefills keep finishing: source-first pins them on prefill until decode frees pages; destination-first keeps prefill waiting instead",
		tune: func(c *cluster.Config) {
			c.Prefill.Workers, c.Decode.Workers = 1, 1
			c.Decode.CapacityBlocks = 1100 // four 4K-token prompts of 256 blocks
			c.Decode.Slots = 4
			c.Decode.HeadroomTokens = 4 * 512
		},
		build: func(c *cluster.Config) ([]cluster.Request, []cluster.Fault) {
			return evenly(24, 0, 120_000, 4096, 120, "", 0), nil
		}},
	{Name: "destination-gate", FaultFree: true,
		Meaning: "destination-first with decode full: prefill does not dispatch until decode reserves its slot, prefix snapshot, delta pages and headroom; zero, partial and full prefix hits",
		tune: func(c *cluster.Config) {
			c.Prefill.Workers, c.Decode.Workers = 1, 2
			c.Decode.Slots = 3
		},
		build: func(c *cluster.Config) ([]cluster.Request, []cluster.Fault) {
			var rs []cluster.Request
			for i := 0; i < 18; i++ {
				r := cluster.Request{Index: i, ArrivalUS: int64(i) * 60_000, PromptTokens: 2048, OutputTokens: 60, CancelUS: -1}
				switch i % 3 {
				case 1:
					r.PrefixGroup, r.PrefixTokens = "partial", 1024
				case 2:
					r.PrefixGroup, r.PrefixTokens = "full", 2048
				}
				rs = append(rs, r)
			}
			return rs, nil
		}},
	{Name: "router-engine-parity", FaultFree: true,
		Meaning: "selection-time decode bookings, reservations, activations and releases stay aligned under load on four decode workers",
		tune: func(c *cluster.Config) {
			c.Prefill.Workers, c.Decode.Workers = 2, 4
			c.DecodeRouter = cluster.PowerOfTwo
		},
		build: func(c *cluster.Config) ([]cluster.Request, []cluster.Fault) {
			return evenly(60, 0, 25_000, 1536, 40, "g", 512), nil
		}},
	{Name: "no-false-overlap", FaultFree: true,
		Meaning: "a reservation publishes nothing before receive completion, with transfers slowed so reservations wait long",
		tune:    func(c *cluster.Config) { c.BandwidthGbps = 0.5 },
		build: func(c *cluster.Config) ([]cluster.Request, []cluster.Fault) {
			return evenly(12, 0, 80_000, 2048, 30, "", 0), nil
		}},
	{Name: "failure-matrix",
		Meaning: "cancel, lose a fact, or restart an owner at every phase: before decode routing, after booking, after reservation, while pinned, after receive completion, and during transfer",
		build: func(c *cluster.Config) ([]cluster.Request, []cluster.Fault) {
			rs := evenly(40, 0, 50_000, 2048, 40, "", 0)
			var fs []cluster.Fault
			at := func(i int, us int64) int64 { return rs[i].ArrivalUS + us }
			// Cancels at successive phases of one request each.
			for j, us := range []int64{0, 300, 800, 20_000, 60_000, 110_000, 130_000, 200_000} {
				fs = append(fs, cluster.Fault{AtUS: at(j, us), Kind: "cancel", Request: j, Worker: -1})
			}
			// Lost facts of every kind, each side.
			for j, msg := range []string{"DestinationReserved", "ReaderCompleted", "LeaseRenewed", "Cancelled", "ReceiveCompleted"} {
				fs = append(fs, cluster.Fault{AtUS: at(10+j, 0), Kind: "loss", Request: 10 + j, Worker: -1, Msg: msg})
			}
			fs = append(fs,
				cluster.Fault{AtUS: at(16, 0), Kind: "hang", Request: 16, Worker: -1},
				cluster.Fault{AtUS: at(17, 0), Kind: "transfer_failure", Request: 17, Worker: -1},
				cluster.Fault{AtUS: at(18, 5_000), Kind: "abort", Request: 18, Worker: -1, Side: "source"},
				cluster.Fault{AtUS: at(19, 5_000), Kind: "abort", Request: 19, Worker: -1, Side: "destination"},
				cluster.Fault{AtUS: at(20, 0), Kind: "delay", Request: 20, Worker: -1, Side: "destination"},
			)
			// Restarts of a decode and of a prefill worker mid-run.
			fs = append(fs, cluster.Fault{AtUS: at(24, 90_000), Kind: "restart", Request: -1, Worker: c.Prefill.Workers},
				cluster.Fault{AtUS: at(30, 30_000), Kind: "restart", Request: -1, Worker: 0})
			sortFaults(fs)
			return rs, fs
		}},
	{Name: "duplicate-stale-late",
		Meaning: "duplicated and late facts, and facts to an older incarnation: cleanup is idempotent and nothing is resurrected",
		build: func(c *cluster.Config) ([]cluster.Request, []cluster.Fault) {
			rs := evenly(30, 0, 40_000, 1024, 30, "", 0)
			var fs []cluster.Fault
			for j := 0; j < 12; j++ {
				to := []string{"source", "destination"}[j%2]
				fs = append(fs, cluster.Fault{AtUS: rs[j].ArrivalUS, Kind: "duplicate", Request: j, Worker: -1, To: to})
			}
			for j := 12; j < 16; j++ {
				fs = append(fs, cluster.Fault{AtUS: rs[j].ArrivalUS, Kind: "delay", Request: j, Worker: -1, Side: "destination"})
			}
			fs = append(fs, cluster.Fault{AtUS: rs[20].ArrivalUS + 100_000, Kind: "restart", Request: -1, Worker: c.Prefill.Workers + 1})
			sortFaults(fs)
			return rs, fs
		}},
	{Name: "fault-sweep",
		Meaning: "every schedulable fault but restarts at offsets from 0 to 900 ms after arrival, one request each, so that each strikes in every phase of a handoff",
		tune:    sweepCluster,
		build: func(c *cluster.Config) ([]cluster.Request, []cluster.Fault) {
			return sweep([][]planFault{
				{{kind: "cancel"}}, {{kind: "abort", side: "source"}}, {{kind: "abort", side: "destination"}},
				{{kind: "loss", to: "source"}}, {{kind: "loss", to: "destination"}},
				{{kind: "duplicate", to: "source"}}, {{kind: "duplicate", to: "destination"}},
				{{kind: "hang"}}, {{kind: "transfer_failure"}}, {{kind: "delay", side: "source"}}, {{kind: "delay", side: "destination"}},
			})
		}},
	{Name: "deadline-sweep",
		Meaning: "deadlines shorter than the lease, so that each fires first: a transfer that hangs, alone, with the destination aborting, and with the fact that would tell the source lost too; a failed transfer after the destination aborted; and, destination-first, prompts whose prefill outlasts the reservation; at the sweep's offsets",
		tune: func(c *cluster.Config) {
			sweepCluster(c)
			// A 2,048-token handoff computes for 102.4 ms and moves in
			// about 11 ms: a hung transfer passes its deadline at about
			// 400 ms, before a destination-first reservation (armed at
			// routing) expires at 500 ms, and long before the lease.
			c.Timers.TransferDeadlineUS = 300_000
			c.Timers.ReservationUS = 500_000
		},
		build: func(c *cluster.Config) ([]cluster.Request, []cluster.Fault) {
			rs, fs := sweep([][]planFault{
				{{kind: "hang"}},
				{{kind: "hang"}, {kind: "abort", side: "destination"}},
				{{kind: "hang"}, {kind: "abort", side: "destination"}, {kind: "loss", to: "source"}},
				{{kind: "transfer_failure"}, {kind: "abort", side: "destination"}},
			})
			if c.Policy == "destination-first" {
				// 16,384 tokens compute for 819 ms: the reservation made
				// for them expires while the prefill runs.
				for k := 0; k < 3; k++ {
					r := sweepRequest(len(rs))
					r.PromptTokens = 16_384
					rs = append(rs, r)
				}
			}
			return rs, fs
		}},
	{Name: "reorder-sweep",
		Meaning: "facts that overtake one another (a 0.1 ms latency with 4 ms of jitter), while each request takes one fault in its first milliseconds: the destination aborts, the client cancels, a fact to the source is lost or duplicated; destination-first, a Cancelled may reach the source before its request",
		tune: func(c *cluster.Config) {
			sweepCluster(c)
			c.LatencyUS, c.JitterUS = 100, 4_000
		},
		build: func(c *cluster.Config) ([]cluster.Request, []cluster.Fault) {
			type kind struct{ kind, to, side string }
			kinds := []kind{{kind: "abort", side: "destination"}, {kind: "cancel"}, {kind: "loss", to: "source"}, {kind: "duplicate", to: "source"}}
			var rs []cluster.Request
			var fs []cluster.Fault
			i := 0
			for _, k := range kinds {
				for off := int64(0); off <= 4_000; off += 100 {
					r := sweepRequest(i)
					rs = append(rs, r)
					fs = append(fs, cluster.Fault{AtUS: r.ArrivalUS + off, Kind: k.kind, Request: i, Worker: -1, To: k.to, Side: k.side})
					i++
				}
			}
			sortFaults(fs)
			return rs, fs
		}},
	{Name: "late-sweep",
		Meaning: "late and duplicated facts: each request has a fact duplicated while a scheduler core falls behind, so that the copy, or a fact that crossed a command, finds the record in the middle of ending; at the sweep's offsets",
		tune:    sweepCluster,
		build: func(c *cluster.Config) ([]cluster.Request, []cluster.Fault) {
			return sweep([][]planFault{
				{{kind: "duplicate", to: "source"}, {kind: "delay", side: "source"}},
				{{kind: "duplicate", to: "destination"}, {kind: "delay", side: "destination"}},
				{{kind: "duplicate", to: "source"}, {kind: "delay", side: "destination"}},
				{{kind: "duplicate", to: "destination"}, {kind: "delay", side: "source"}},
				{{kind: "cancel"}, {kind: "delay", side: "source"}},
				{{kind: "cancel"}, {kind: "delay", side: "destination"}},
			})
		}},
	{Name: "restart-sweep",
		Meaning: "a restart of the prefill or the decode worker a request uses, at offsets from 0 to 900 ms after its arrival, one request each",
		tune:    sweepCluster,
		build: func(c *cluster.Config) ([]cluster.Request, []cluster.Fault) {
			var rs []cluster.Request
			var fs []cluster.Fault
			i := 0
			// Round-robin routers put request i on prefill worker i%2 and
			// decode worker i%2.
			for _, w := range []int{0, c.Prefill.Workers} {
				for _, off := range sweepOffsets {
					r := sweepRequest(i)
					rs = append(rs, r)
					fs = append(fs, cluster.Fault{AtUS: r.ArrivalUS + off, Kind: "restart", Request: -1, Worker: w + i%2})
					i++
				}
			}
			return rs, fs
		}},
	{Name: "long-wait", FaultFree: true,
		Meaning: "no fault, decode full for longer than a lease: heartbeats keep every source lease alive, and every handoff succeeds",
		tune: func(c *cluster.Config) {
			c.Prefill.Workers, c.Decode.Workers = 1, 1
			c.Decode.CapacityBlocks = 300
			c.Decode.Slots = 1
			c.Timers.LeaseUS = 2_000_000
			c.Timers.HeartbeatUS = 500_000
			c.HealthCheckUS = 1_000_000
		},
		build: func(c *cluster.Config) ([]cluster.Request, []cluster.Fault) {
			return evenly(4, 0, 10_000, 4096, 200, "", 0), nil
		}},
	{Name: "slow-transfer", FaultFree: true,
		Meaning: "no fault, a pull that takes longer than the source's lease: heartbeats keep the lease alive while it runs",
		tune: func(c *cluster.Config) {
			c.Prefill.Workers, c.Decode.Workers = 1, 1
			c.BandwidthGbps = 0.1 // 268 MB take 2.7 s
			if c.Policy == "source-first" {
				// Under destination-first nothing renews the pushing
				// source's lease: a push longer than the lease fails,
				// so there the lease keeps its default.
				c.Timers.LeaseUS = 1_000_000
				c.Timers.HeartbeatUS = 250_000
			}
		},
		build: func(c *cluster.Config) ([]cluster.Request, []cluster.Fault) {
			return evenly(3, 0, 5_000_000, 2048, 20, "", 0), nil
		}},
	{Name: "waiting-faults",
		Meaning: "decode full, so that destinations wait long for capacity (and, destination-first, sources for a reservation), while each request takes one fault: aborts, lost and duplicated facts, cancels, at offsets into the wait; and the prefill worker restarts while they wait",
		tune:    waitingCluster, build: waitingFaults},
	{Name: "waiting-deadline",
		Meaning: "waiting-faults with a 20 s reservation deadline and health checks every 200 ms: destination-first, a request queued for capacity longer than the deadline gives up on it, and its source must hear so; a destination queued when its source restarts hears of it before capacity comes",
		tune: func(c *cluster.Config) {
			waitingCluster(c)
			c.Timers.ReservationUS = 20_000_000
			c.HealthCheckUS = 200_000
		},
		build: waitingFaults},
	{Name: "queue-then-push", FaultFree: true,
		Meaning: "no fault, destination-first: the second of two long prompts queues for capacity for most of its reservation deadline; the deadline starts again when the reservation lands, so its prefill and push still have the whole period, and both succeed",
		tune: func(c *cluster.Config) {
			c.Prefill.Workers, c.Decode.Workers = 1, 1
			c.Decode.Slots = 1
			// The first request holds the slot for about 1.75 s (546 ms
			// of prefill, a 200 ms push, 1 s of decode); the second then
			// needs about 0.7 s more to activate: 2.45 s after it was
			// routed.
			c.Timers.ReservationUS = 2_100_000
		},
		build: func(c *cluster.Config) ([]cluster.Request, []cluster.Fault) {
			return evenly(2, 0, 1_000, 32_768, 50, "", 0), nil
		}},
	{Name: "router-modes", FaultFree: true,
		Meaning: "the decode worker chosen at random: the lifecycle holds whichever worker the router picks",
		tune: func(c *cluster.Config) {
			c.Decode.Workers = 3
			c.DecodeRouter = cluster.Random
			c.PrefillRouter = cluster.RoundRobin
		},
		build: func(c *cluster.Config) ([]cluster.Request, []cluster.Fault) {
			return evenly(45, 0, 30_000, 1024, 50, "g", 256), nil
		}},
}

// sweepOffsets are the times after a request's arrival at which the sweep
// scenarios strike: during routing, the prefill, the transfer (a
// 2,048-token prefill at 20,000 tokens per second ends at 102.4 ms and
// its transfer takes about 11 ms) and the decode.
var sweepOffsets = []int64{0, 300, 700, 1_500, 5_000, 20_000, 60_000, 103_000, 104_500, 107_000, 110_000, 112_500,
	113_000, 113_300, 113_600, 113_900, 114_200, 114_500, 114_800, 115_100, 115_400, 115_700, 116_000, 118_000, 150_000, 400_000, 900_000}

// sweepCluster is the sweep scenarios' cluster: two workers of each role
// taken in turn, and a prefill slow enough that each phase of a handoff
// lasts long enough for an offset to fall in it.
func sweepCluster(c *cluster.Config) {
	c.Prefill.Workers, c.Decode.Workers = 2, 2
	c.PrefillRouter, c.DecodeRouter = cluster.RoundRobin, cluster.RoundRobin
	c.Prefill.TokensPerSec = 20_000
}

// planFault is one fault of a sweep's plan.
type planFault struct{ kind, to, side, msg string }

// sweep gives each plan one request per offset of sweepOffsets, with the
// plan's faults all planned at that offset after the request's arrival.
func sweep(plans [][]planFault) ([]cluster.Request, []cluster.Fault) {
	var rs []cluster.Request
	var fs []cluster.Fault
	for _, plan := range plans {
		for _, off := range sweepOffsets {
			r := sweepRequest(len(rs))
			rs = append(rs, r)
			for _, f := range plan {
				fs = append(fs, cluster.Fault{AtUS: r.ArrivalUS + off, Kind: f.kind, Request: r.Index, Worker: -1, To: f.to, Side: f.side, Msg: f.msg})
			}
		}
	}
	sortFaults(fs)
	return rs, fs
}

// sweepRequest is the sweep scenarios' request i: alone on the cluster,
// 1.5 s after the one before.
func sweepRequest(i int) cluster.Request {
	return cluster.Request{Index: i, ArrivalUS: int64(i) * 1_500_000, PromptTokens: 2048, OutputTokens: 40, CancelUS: -1}
}

// LookupScenario finds a scenario by name.
func LookupScenario(name string) (*Scenario, error) {
	for i := range Scenarios {
		if Scenarios[i].Name == name {
			return &Scenarios[i], nil
		}
	}
	names := make([]string, len(Scenarios))
	for i := range Scenarios {
		names[i] = Scenarios[i].Name
	}
	return nil, fmt.Errorf("%w: no scenario %q (scenarios: %s)", cluster.ErrConfig, name, strings.Join(names, ", "))
}

// evenly is n requests gapUS apart from startUS, all alike.
func evenly(n int, startUS, gapUS int64, prompt, output model.Tokens, group string, prefix model.Tokens) []cluster.Request {
	rs := make([]cluster.Request, n)
	for i := range rs {
		rs[i] = cluster.Request{Index: i, ArrivalUS: startUS + int64(i)*gapUS, PromptTokens: prompt, OutputTokens: output, CancelUS: -1}
		if group != "" {
			rs[i].PrefixGroup, rs[i].PrefixTokens = group, prefix
		}
	}
	return rs
}

func sortFaults(fs []cluster.Fault) {
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && fs[j].AtUS < fs[j-1].AtUS; j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
}

// SliceSource streams a workload held in memory.
type SliceSource struct {
	Reqs []cluster.Request
	i    int
}

// Next returns the next request, or io.EOF.
func (s *SliceSource) Next() (cluster.Request, error) {
	if s.i == len(s.Reqs) {
		return cluster.Request{}, io.EOF
	}
	s.i++
	return s.Reqs[s.i-1], nil
}

// waitingCluster is the waiting scenarios' cluster: one worker of each
// role, decode full.
func waitingCluster(c *cluster.Config) {
	c.Prefill.Workers, c.Decode.Workers = 1, 1
	c.Decode.CapacityBlocks = 600 // two 4K-token prompts
	c.Decode.Slots = 2
	c.Decode.HeadroomTokens = 2 * 512
}

// waitingFaults is the waiting scenarios' workload and faults.
func waitingFaults(c *cluster.Config) ([]cluster.Request, []cluster.Fault) {
	type kind struct{ kind, to, side string }
	kinds := []kind{
		{kind: "abort", side: "source"}, {kind: "abort", side: "destination"}, {kind: "cancel"},
		{kind: "loss", to: "source"}, {kind: "loss", to: "destination"}, {kind: "duplicate", to: "source"},
	}
	offsets := []int64{500, 50_000, 400_000, 1_500_000, 3_000_000}
	var rs []cluster.Request
	var fs []cluster.Fault
	i := 0
	// Offsets outside, kinds inside: every kind strikes requests early
	// and late in the queue, so some wait long.
	for _, off := range offsets {
		for _, k := range kinds {
			r := cluster.Request{Index: i, ArrivalUS: int64(i) * 150_000, PromptTokens: 4096, OutputTokens: 100, CancelUS: -1}
			rs = append(rs, r)
			fs = append(fs, cluster.Fault{AtUS: r.ArrivalUS + off, Kind: k.kind, Request: i, Worker: -1, To: k.to, Side: k.side})
			i++
		}
	}
	// The prefill worker restarts while destinations queue for capacity:
	// they learn it from their health checks, with no deadline of their
	// own to wait for.
	fs = append(fs, cluster.Fault{AtUS: 2_200_000, Kind: "restart", Request: -1, Worker: 0})
	sortFaults(fs)
	return rs, fs
}
