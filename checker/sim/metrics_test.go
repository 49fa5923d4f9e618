package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/model"
)

// The worker metrics of the handoff design, sampled over a run of the
// default workload under each policy: kv_used_blocks is active + pinned
// source + reserved destination and is what is neither free nor cached;
// active_decode_blocks counts a decode worker's reservations with its
// active blocks; the decode router's booking is there, and runs ahead of
// the physical reservations while requests wait.
func TestMetrics_ProposalSeries(t *testing.T) {
	for _, pol := range []string{"source-first", "destination-first"} {
		t.Run(pol, func(t *testing.T) {
			cfg := policyConfig(pol)
			rec := NewRecorder(nil)
			res, err := Run(context.Background(), cfg, &SliceSource{Reqs: generated(t, 1, 200, 40, 0.03)}, Options{Timeline: rec})
			if err != nil || res.Violation != nil {
				t.Fatalf("%v %v", err, res.Violation)
			}
			ahead := false
			for _, ws := range rec.Timeline().Workers {
				for _, s := range ws.Samples {
					if s.KVUsed != s.Active+s.Pinned+s.Reserved || s.KVUsed != ws.Capacity-s.Free-s.Cached {
						t.Fatalf("worker %d at %.3f ms: kv_used_blocks %d, active %d + pinned %d + reserved %d, capacity %d - free %d - cached %d",
							ws.Worker, s.TMS, s.KVUsed, s.Active, s.Pinned, s.Reserved, ws.Capacity, s.Free, s.Cached)
					}
					want := int64(0)
					if ws.Role == "decode" {
						want = s.Active + s.Reserved
					}
					if s.ActiveDecode != want {
						t.Fatalf("worker %d (%s) at %.3f ms: active_decode_blocks %d, want %d", ws.Worker, ws.Role, s.TMS, s.ActiveDecode, want)
					}
					if ws.Role == "prefill" && s.Booked != 0 {
						t.Fatalf("prefill worker %d booked %d decode blocks", ws.Worker, s.Booked)
					}
					ahead = ahead || s.Booked > s.Reserved+s.Active
				}
			}
			if !ahead {
				t.Error("the decode router's booking never ran ahead of what the decode workers hold; the default workload queues requests for decode")
			}
			for _, w := range res.Summary.Workers {
				for _, name := range []string{"kv_used_blocks", "active_decode_blocks", "decode_booked_blocks"} {
					if _, ok := w.Series[name]; !ok {
						t.Errorf("worker %d's summary lacks %s", w.Worker, name)
					}
				}
			}
		})
	}
}

// The accounting check at every change of a worker's counters can fail:
// a worker whose categories do not add up is a BlockCategoriesDisjoint
// violation naming the worker's kv_used_blocks.
func TestMetrics_CheckCatchesBadAccounting(t *testing.T) {
	cfg := policyConfig("source-first")
	s := &Sim{cfg: cfg, stats: newStats(cfg, cfg.NumWorkers())}
	k := model.Worker{Free: cfg.Capacity(0) - 10, Active: 10}
	s.stats.change(s, 0, &k, &k)
	if s.violation != nil {
		t.Fatalf("a worker whose categories add up: %v", s.violation)
	}
	bad := k
	bad.Pinned = 5 // counted as pinned without leaving free
	s.stats.change(s, 0, &k, &bad)
	if s.violation == nil || s.violation.Invariant != model.NameBlockCategoriesDisjoint || !strings.Contains(s.violation.Detail, "kv_used_blocks 15") {
		t.Fatalf("a pin that did not leave free: %+v", s.violation)
	}
}
