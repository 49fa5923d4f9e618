package live

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
)

// strandedRun is the simulator's stranded-source scenario on the wall
// clock: one prefill and one decode worker, decode room for four 4K-token
// prompts, 24 of them arriving faster than decode frees pages.
func strandedRun(t *testing.T, policy string) *Report {
	t.Helper()
	cfg := parityConfig(t, policy)
	cfg.Prefill.Workers, cfg.Decode.Workers = 1, 1
	cfg.Decode.CapacityBlocks = 1100
	cfg.Decode.Slots = 4
	cfg.Decode.HeadroomTokens = 4 * 512
	cfg.LatencyUS = 10_000
	// Deadlines far beyond the run: what is measured does not depend on
	// how loaded the machine is, and no run is too late for them.
	const day = 86_400_000_000
	cfg.Timers = cluster.Timers{LeaseUS: day, HeartbeatUS: day / 3, BootstrapUS: day, ReservationUS: day, TransferDeadlineUS: day}
	cfg.HealthCheckUS = day / 10
	reqs := make([]cluster.Request, 24)
	for i := range reqs {
		reqs[i] = cluster.Request{Index: i, ArrivalUS: int64(i) * 120_000, PromptTokens: 4096, OutputTokens: 120, CancelUS: -1}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := Run(ctx, Options{Config: cfg, Workload: &slice{rs: reqs}, Rewind: again(reqs), Scale: 0.02, Dir: dirFor(t), Spawn: &GoSpawner{}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.TooLate {
		t.Skipf("the machine is too loaded for the run's deadlines: %s", rep.LateWhy)
	}
	if !rep.Clean || rep.Succeeded != len(reqs) {
		rep.Write(os.Stderr)
		t.Fatalf("%d of %d succeeded, leaks %v", rep.Succeeded, len(reqs), rep.Leaks)
	}
	return rep
}

// TestLive_StrandedSourceAndWorkerMetrics reads the handoff design's
// figures from live runs: the stranded source KV (source blocks pinned
// after compute while decode waits), which source-first strands by
// design while destination-first reserves before prefill runs, and each
// worker's metrics (kv_used_blocks, active_decode_blocks,
// decode_booked_blocks), in the report, its JSON and its text.
func TestLive_StrandedSourceAndWorkerMetrics(t *testing.T) {
	src := strandedRun(t, "source-first")
	dst := strandedRun(t, "destination-first")
	t.Logf("stranded source KV: source-first %.3f block-s, peak %d; destination-first %.3f block-s, peak %d",
		src.StrandedSourceBlockSeconds, src.StrandedSourcePeak, dst.StrandedSourceBlockSeconds, dst.StrandedSourcePeak)
	// A 4K-token prompt is 256 blocks: source-first pins at least one
	// whole prompt while decode is full.
	if src.StrandedSourcePeak < 256 || src.StrandedSourceBlockSeconds <= 0 {
		t.Errorf("source-first stranded %.3f block-seconds, peak %d blocks: want a whole prompt's 256 blocks at least", src.StrandedSourceBlockSeconds, src.StrandedSourcePeak)
	}
	if dst.StrandedSourceBlockSeconds*10 > src.StrandedSourceBlockSeconds {
		t.Errorf("destination-first stranded %.3f block-seconds, source-first %.3f: want a tenth or less", dst.StrandedSourceBlockSeconds, src.StrandedSourceBlockSeconds)
	}
	for _, rep := range []*Report{src, dst} {
		if len(rep.Workers) != 2 {
			t.Fatalf("%d workers' ledgers, want 2", len(rep.Workers))
		}
		p, d := rep.Workers[0], rep.Workers[1]
		// The stranding is on the prefill worker, all of it.
		if p.StrandedSourceBlockSeconds != rep.StrandedSourceBlockSeconds || p.StrandedSourcePeak != rep.StrandedSourcePeak || d.StrandedSourceBlockSeconds != 0 || d.StrandedSourcePeak != 0 {
			t.Errorf("%s: stranding per worker %.3f/%d and %.3f/%d, over all %.3f/%d", rep.Policy, p.StrandedSourceBlockSeconds, p.StrandedSourcePeak,
				d.StrandedSourceBlockSeconds, d.StrandedSourcePeak, rep.StrandedSourceBlockSeconds, rep.StrandedSourcePeak)
		}
		for _, c := range []struct {
			l           Ledger
			metric      string
			least, most float64
		}{
			{p, "kv_used_blocks", 256, 1e9},
			{p, "active_decode_blocks", 0, 0},
			{p, "decode_booked_blocks", 0, 0},
			{d, "kv_used_blocks", 256, 1100},
			{d, "active_decode_blocks", 256, 1100},
			// The router books at selection, ahead of the reservation:
			// up to every request's blocks while decode is full.
			{d, "decode_booked_blocks", 256, 24 * 300},
		} {
			pm, ok := c.l.Series[c.metric]
			if !ok || pm.Peak < c.least || pm.Peak > c.most || pm.Mean > pm.Peak || (pm.Peak > 0) != (pm.Mean > 0) {
				t.Errorf("%s: %s worker %d: %s %+v (present %v), want a peak from %.0f to %.0f and a mean up to it", rep.Policy, c.l.Role, c.l.Worker, c.metric, pm, ok, c.least, c.most)
			}
		}
	}
	j, err := json.Marshal(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"stranded_source_block_seconds":`, `"stranded_source_peak_blocks":`, `"kv_used_blocks":{"peak":`, `"active_decode_blocks":{"peak":`, `"decode_booked_blocks":{"peak":`} {
		if !bytes.Contains(j, []byte(key)) {
			t.Errorf("the JSON report has no %s", key)
		}
	}
	var text strings.Builder
	src.Write(&text)
	t.Logf("%s", text.String())
	for _, want := range []string{"stranded source KV (pinned after compute while decode waits): ", "kv_used_blocks peak ", "decode_booked_blocks peak "} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the report's text has no %q:\n%s", want, text.String())
		}
	}
}
