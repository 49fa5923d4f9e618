package live

import (
	"fmt"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// Report is what a live run measured and what every process held at its
// end.
type Report struct {
	Policy string `json:"policy"`
	Engine string `json:"engine"`
	// Requests arrived; Finished of them ended for the frontend (both
	// sides' outcomes known, or a side forgotten by a restart), each
	// counted once in Succeeded, Failed or Cancelled: a request the client
	// cancelled too late to stop it counts as succeeded.
	Requests  int `json:"requests"`
	Finished  int `json:"finished"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
	Restarts  int `json:"restarts"`
	// FaultsStruck counts the plan's faults that struck (the proxy's
	// random ones are counted in Proxy).
	FaultsStruck int `json:"faults_struck"`
	// ElapsedMS is wall-clock time from the first arrival to the last
	// attempt's end; Throughput is finished handoffs per second of it.
	ElapsedMS  float64 `json:"elapsed_ms"`
	Throughput float64 `json:"handoffs_per_s"`
	// LatencyMS is the wall-clock time from a request's arrival to both
	// sides' success, over the requests that succeeded.
	LatencyMS Pcts `json:"latency_ms"`
	// CPU is the CPU time the run took per finished handoff.
	CPU   CPUCount   `json:"cpu_per_handoff"`
	Proxy ProxyCount `json:"proxy"`
	// StrandedSourceBlockSeconds and StrandedSourcePeak are the stranded
	// source KV the handoff design is about: source blocks pinned after
	// prefill compute finished while decode waits
	// (cluster.StrandedSource), in block-seconds over the run (seconds of
	// configured time, as the simulator's: the wall clock's divided by
	// the time scale) and at the largest instant, summed over workers
	// (each worker's are in Workers, with its metrics).
	StrandedSourceBlockSeconds float64 `json:"stranded_source_block_seconds"`
	StrandedSourcePeak         int64   `json:"stranded_source_peak_blocks"`
	// PrefixRequests is the requests with a prefix group; PrefixHits of
	// them found their prefix cached on the decode worker the kv-aware
	// router chose from the KV index the workers published, PrefixHitTokens
	// tokens in all (the simulator's prefix_hit_tokens).
	PrefixRequests  int   `json:"prefix_group_requests"`
	PrefixHits      int   `json:"prefix_hits"`
	PrefixHitTokens int64 `json:"prefix_hit_tokens"`
	// PrefixShortBlocks is the blocks of those hits that the decode
	// worker's cache had evicted, after it reported them, and its free
	// pool could not hold: the workers' PrefixShortBlocks summed.
	PrefixShortBlocks int64 `json:"prefix_short_blocks"`
	// Workers is each worker's ledger at the end, Routers the routers'
	// ledgers of each worker.
	Workers []Ledger       `json:"workers"`
	Routers []RouterLedger `json:"routers"`
	// Leaks lists what is still held anywhere; Clean is true when nothing
	// is and the run was not interrupted.
	Leaks []string `json:"leaks"`
	Clean bool     `json:"clean"`
	// Findings are invariants a worker's own window broke.
	Findings    []string `json:"findings,omitempty"`
	Interrupted bool     `json:"interrupted"`
	// Stall, when set, is how the run ended with attempts that stopped
	// making progress (stall.go): the invariant the simulator names for
	// the first, or inconclusive when the silence could not be told from
	// a loaded machine.
	Stall *Stall `json:"stall,omitempty"`
	// StallQuestions counts the times the coordinator asked the workers
	// whether the unfinished attempts were stuck (a silence of its
	// bound, with nothing queued), each answered or made void by what
	// came next.
	StallQuestions int `json:"stall_questions,omitempty"`
	// Teardown is what ending the run with handoffs unresolved did
	// (Options.UntilUS); nil when the run was not torn down.
	Teardown *Teardown `json:"teardown,omitempty"`
	// Scale is the time scale the run ran at (Run adapts it to the
	// machine: see TooLate); Lateness is how late every process took
	// its events and frames, LateBudgetUS what the run's deadlines
	// absorb. TooLate: the 99th percentile of either went past the
	// budget, so the outcome would describe the machine's load, not the
	// workload; LateWhy says so in words.
	Scale        float64   `json:"time_scale"`
	ScalesTried  []float64 `json:"time_scales_tried,omitempty"`
	Lateness     Lateness  `json:"lateness"`
	LateBudgetUS int64     `json:"late_budget_us"`
	TooLate      bool      `json:"too_late"`
	LateWhy      string    `json:"late_why,omitempty"`
	Config       string    `json:"config"`
	Logs         []string  `json:"logs"`
}

// CPUCount is the CPU time (user and system) a run took per finished
// handoff, in microseconds: the coordinator's process from the first
// arrival to the last attempt's end, and the workers' processes (their
// last generations) from their hello to their ledgers. InProcess: the
// workers ran in the coordinator's process (a test's GoSpawner), whose
// figure then counts them too, and WorkersUS is not measured.
type CPUCount struct {
	CoordinatorUS float64 `json:"coordinator_us"`
	WorkersUS     float64 `json:"workers_us"`
	InProcess     bool    `json:"workers_in_process,omitempty"`
}

// ProxyCount is what the proxy did to the facts it relayed.
type ProxyCount struct {
	Dropped    int `json:"dropped"`
	Duplicated int `json:"duplicated"`
	Delayed    int `json:"delayed"`
}

// RouterLedger is what the routers book on one worker.
type RouterLedger struct {
	Worker        int   `json:"worker"`
	Owned         int64 `json:"owned"`
	PrefillTokens int64 `json:"prefill_tokens"`
	Booked        int64 `json:"booked"`
}

// Pcts are latency percentiles in milliseconds.
type Pcts struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func pcts(sorted []float64) Pcts {
	if len(sorted) == 0 {
		return Pcts{}
	}
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(sorted)))) - 1
		return sorted[max(0, min(i, len(sorted)-1))]
	}
	return Pcts{P50: at(0.5), P90: at(0.9), P99: at(0.99), Max: sorted[len(sorted)-1]}
}

// Write prints the report for people.
func (r *Report) Write(w io.Writer) {
	fmt.Fprintf(w, "live run: %s on %s, %d requests: %d succeeded, %d failed, %d cancelled; %d restarts\n",
		r.Policy, r.Engine, r.Requests, r.Succeeded, r.Failed, r.Cancelled, r.Restarts)
	fmt.Fprintf(w, "  %.0f handoffs/s over %.1f ms; latency p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms\n",
		r.Throughput, r.ElapsedMS, r.LatencyMS.P50, r.LatencyMS.P90, r.LatencyMS.P99, r.LatencyMS.Max)
	if r.CPU.InProcess {
		fmt.Fprintf(w, "  CPU per handoff: %.0f µs (the coordinator with its workers, in one process)\n", r.CPU.CoordinatorUS)
	} else {
		fmt.Fprintf(w, "  CPU per handoff: %.0f µs, coordinator %.0f µs and workers %.0f µs\n", r.CPU.CoordinatorUS+r.CPU.WorkersUS, r.CPU.CoordinatorUS, r.CPU.WorkersUS)
	}
	fmt.Fprintf(w, "  time scale %g; lateness: events %s, frames %s; the deadlines absorb %.2f ms\n",
		r.Scale, r.Lateness.Events.String(), r.Lateness.Frames.String(), float64(r.LateBudgetUS)/1000)
	for i, s := range r.ScalesTried {
		fmt.Fprintf(w, "    run %d at time scale %g was too late and did not count\n", i+1, s)
	}
	if r.TooLate {
		fmt.Fprintf(w, "  TOO LATE: %s\n", r.LateWhy)
	}
	fmt.Fprintf(w, "  faults: %d of the plan struck; proxy: %d dropped, %d duplicated, %d delayed\n", r.FaultsStruck, r.Proxy.Dropped, r.Proxy.Duplicated, r.Proxy.Delayed)
	fmt.Fprintf(w, "  stranded source KV (pinned after compute while decode waits): %.1f block-seconds, peak %d blocks\n", r.StrandedSourceBlockSeconds, r.StrandedSourcePeak)
	if r.PrefixRequests > 0 {
		fmt.Fprintf(w, "  prefix hits: %d of %d requests with a prefix group, %d tokens", r.PrefixHits, r.PrefixRequests, r.PrefixHitTokens)
		if r.PrefixShortBlocks > 0 {
			fmt.Fprintf(w, "; %d blocks of them held beyond capacity (the cache evicted them after the worker reported it)", r.PrefixShortBlocks)
		}
		fmt.Fprintln(w)
	}
	for _, l := range r.Workers {
		held := l.Held()
		if held == "" {
			held = "nothing held"
		}
		refused := fmt.Sprintf("%d frames refused", l.Refused)
		if len(l.RefusedWhy) > 0 {
			var why []string
			for _, k := range slices.Sorted(maps.Keys(l.RefusedWhy)) {
				why = append(why, fmt.Sprintf("%s %d", k, l.RefusedWhy[k]))
			}
			refused += " (" + strings.Join(why, ", ") + ")"
		}
		fmt.Fprintf(w, "  %s worker %d gen %d: %d attempts, %s; %s\n", l.Role, l.Worker, l.Gen, l.Attempts, refused, held)
		if l.NoWork != "" {
			fmt.Fprintf(w, "    %s\n", l.NoWork)
		}
		var ms []string
		for _, name := range cluster.WorkerMetrics {
			if pm, ok := l.Series[name]; ok {
				ms = append(ms, fmt.Sprintf("%s peak %.0f mean %.1f", name, pm.Peak, pm.Mean))
			}
		}
		if len(ms) > 0 {
			fmt.Fprintf(w, "    %s; stranded source KV %.1f block-seconds, peak %d blocks\n", strings.Join(ms, ", "), l.StrandedSourceBlockSeconds, l.StrandedSourcePeak)
		}
		for _, a := range l.OpenAttempts {
			fmt.Fprintf(w, "    open: %s\n", a)
		}
	}
	if t := r.Teardown; t != nil {
		fmt.Fprintf(w, "  teardown at %.3f ms: %d attempts unresolved for the router cut (%d cancelled there, %d of them activated and stopped decoding), %d never arrived;", t.AtMS, t.Cut, t.Cancelled, t.Activated, t.NotArrived)
		if r.Clean && len(r.Findings) == 0 {
			fmt.Fprint(w, " each released what it held once, nothing held at the end")
		}
		fmt.Fprintln(w)
	}
	if s := r.Stall; s != nil && s.Inconclusive {
		fmt.Fprintf(w, "  STALL INCONCLUSIVE: %d attempts unfinished; %s\n", s.Stuck, s.Why)
	} else if s != nil {
		fmt.Fprintf(w, "  STALL: VIOLATION %s: attempt %s: %s (%d attempts unfinished)\n", s.Invariant, s.Attempt, s.Why, s.Stuck)
		for _, sd := range s.Sides {
			fmt.Fprintf(w, "    %s\n", sd)
		}
	}
	if r.Interrupted {
		fmt.Fprintf(w, "  interrupted: held when it stopped: %s\n", strings.Join(r.Leaks, "; "))
	} else if len(r.Leaks) == 0 {
		fmt.Fprintln(w, "  leak check: nothing held on any worker or router")
	} else {
		fmt.Fprintf(w, "  leak check FAILED: %s\n", strings.Join(r.Leaks, "; "))
	}
	for _, f := range r.Findings {
		fmt.Fprintf(w, "  finding: %s\n", f)
	}
	fmt.Fprintf(w, "  logs: %s\n", strings.Join(r.Logs, " "))
}

// WriteCompare prints runs of one workload under different policies side
// by side: outcomes, throughput, latency, CPU per handoff, the stranded
// source KV, and the peak of kv_used_blocks summed over the prefill
// workers and of decode_booked_blocks over the decode workers (each
// worker's peak, so the sum bounds the cluster's). The legacy path
// strands nothing: its prefill KV is freed at completion.
func WriteCompare(w io.Writer, reps []*Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tsucceeded\tfailed\tcancelled\thandoffs/s\tp50 ms\tp99 ms\tCPU µs/handoff\tstranded block-s\tstranded peak\tprefill kv_used peak\tdecode booked peak\tclean\t")
	for _, r := range reps {
		var prefill, booked float64
		for _, l := range r.Workers {
			if l.Role == sideNames[0] {
				prefill += l.Series[cluster.WorkerMetrics[0]].Peak
			} else {
				booked += l.Series[cluster.WorkerMetrics[2]].Peak
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.0f\t%.2f\t%.2f\t%.0f\t%.1f\t%d\t%.0f\t%.0f\t%v\t\n", r.Policy, r.Succeeded, r.Failed, r.Cancelled, r.Throughput,
			r.LatencyMS.P50, r.LatencyMS.P99, r.CPU.CoordinatorUS+r.CPU.WorkersUS, r.StrandedSourceBlockSeconds, r.StrandedSourcePeak, prefill, booked, r.Clean)
	}
	tw.Flush()
}
