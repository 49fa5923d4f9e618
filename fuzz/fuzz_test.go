package fuzz

import (
	"testing"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/system"
)

// wide is larger than exhaustive search can cover: three handoffs, three
// decode workers with different prefix hits, and generous fault budgets.
const wide = `{
  "schema": "handoffcheck.config/v1",
  "runs": [
    {"name": "vllm", "policy": "source-first", "engine": "vllm"},
    {"name": "sglang", "policy": "destination-first", "engine": "sglang"},
    {"name": "trtllm", "policy": "source-first", "engine": "trtllm"}
  ],
  "workers": [
    {"role": "prefill", "capacity_blocks": 9},
    {"role": "prefill", "capacity_blocks": 6},
    {"role": "decode", "capacity_blocks": 8, "slots": 2, "headroom_tokens": 1024, "prefix_hit_tokens": [16, 32, 0], "background_blocks": 3, "background_slots": 1},
    {"role": "decode", "capacity_blocks": 6, "slots": 1, "headroom_tokens": 512, "prefix_hit_tokens": [0, 16, 32]}
  ],
  "handoffs": [
    {"prompt_tokens": 48, "headroom_tokens": 512},
    {"prompt_tokens": 33, "headroom_tokens": 256},
    {"prompt_tokens": 64, "headroom_tokens": 512}
  ],
  "transfer": {"bytes_per_token": 131072, "block_size_tokens": 16},
  "faults": {"duplicate": 4, "loss": 3, "reorder": 4, "cancel": 2, "abort": 3, "transfer_failure": 2,
             "restart": 3, "early_timer": 4, "no_show": 2, "background_load": 2}
}`

// FuzzStep walks the composed system: the first byte picks the run, every
// other byte picks an enabled move. It fails on any invariant violation,
// on Quiescence at a dead end, and on any panic of the step function.
func FuzzStep(f *testing.F) {
	cfg, err := system.ParseConfig("wide.json", []byte(wide))
	if err != nil {
		f.Fatal(err)
	}
	var runs []*checker.Checker
	for _, r := range cfg.Runs {
		c, err := checker.New(system.Generated(), cfg, r)
		if err != nil {
			f.Fatal(err)
		}
		runs = append(runs, c)
	}
	f.Add([]byte{0})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{2, 3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6})
	f.Add([]byte{0, 255, 254, 253, 252, 251, 250, 249, 248, 247, 246, 245, 244, 243})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		c := runs[int(data[0])%len(runs)]
		s := c.Initial()
		for i, b := range data[1:] {
			moves := c.MovesInto(&s, nil)
			if len(moves) == 0 {
				return
			}
			m := moves[int(b)%len(moves)]
			r, err := c.Apply(&s, m)
			if err != nil {
				t.Fatalf("step %d: an enabled move was refused: %v", i+1, err)
			}
			if r.Violation != nil {
				t.Fatalf("step %d %s: %v", i+1, m, r.Violation)
			}
		}
	})
}
