package sim

import (
	"context"
	"os"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
)

// A hybrid model's grouped caches on the clock (testdata/sim/grouped.json:
// the groups of testdata/configs/grouped-pair.json, vLLM 0.32 with state
// checkpoints on prefill, 0.31 on decode). One request of 8,192 tokens,
// derived by hand from the groups: prefill computes 8,191 tokens (decode
// computes the last one), so the full-attention group moves 4 blocks of
// 2,048 tokens at 25,165,824 bytes each (100,663,296), each of the four
// mamba groups its final state, 1 block of 2,621,440 bytes (10,485,760),
// and the tail ring 1 block of 65,536: 111,214,592 bytes, which at 25 GB/s
// take 4.44858368 ms, 4,449 µs to the microsecond, after the configured
// network latency of 0.5 ms. The source computes 13
// blocks (4 attention, 2 per mamba group for the state and its
// checkpoint, 1 ring) and keeps 9 pinned: a checkpoint block of each
// mamba group goes to the prefix cache at completion.
func TestGrouped_TransferFromTheGroupedPayload(t *testing.T) {
	data, err := os.ReadFile("../../testdata/sim/grouped.json")
	if err != nil {
		t.Fatal(err)
	}
	base, err := cluster.ParseConfig("grouped.json", data)
	if err != nil {
		t.Fatal(err)
	}
	for _, pol := range []string{"source-first", "destination-first"} {
		t.Run(pol, func(t *testing.T) {
			cfg := *base
			if err := cfg.SetPolicy(pol); err != nil {
				t.Fatal(err)
			}
			if pol == "destination-first" {
				cfg.Engine = policyConfig(pol).Engine
			}
			cfg.JitterUS = 0
			reqs := []cluster.Request{{Index: 0, ID: "a", ArrivalUS: 0, PromptTokens: 8192, OutputTokens: 4, CancelUS: -1}}
			rec := NewRecorder(nil)
			res, err := Run(context.Background(), &cfg, &SliceSource{Reqs: reqs}, Options{Timeline: rec})
			if err != nil || res.Violation != nil {
				t.Fatalf("%v %v", err, res.Violation)
			}
			s := res.Summary
			if s.Transfers != 1 || s.TransferBytes != 111_214_592 {
				t.Errorf("%d transfers of %d bytes, want 1 of 111214592 (the grouped payload)", s.Transfers, s.TransferBytes)
			}
			if s.TransferMeanMS != 4.949 {
				t.Errorf("the transfer took %.3f ms, want 4.949 (111,214,592 bytes at 25 GB/s, 4.449 ms, after the network's 0.5 ms latency)", s.TransferMeanMS)
			}
			var pinned, active float64
			for _, w := range s.Workers {
				if w.Role == "prefill" {
					pinned = max(pinned, w.Series["pinned"].Peak)
					active = max(active, w.Series["active"].Peak)
				}
			}
			if pinned != 9 || active != 13 {
				t.Errorf("the source computed with %v blocks and pinned %v, want 13 and 9 (checkpoints freed at completion)", active, pinned)
			}
		})
	}
}
