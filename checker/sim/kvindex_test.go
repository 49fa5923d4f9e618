package sim

import (
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
)

// The KV-aware decode router reads the KV index the workers publish.
// One prefill worker (0) and two decode workers (1 and 2).
// Request 0 (no prefix group) decodes on worker 1; request 1 of group g,
// larger, on worker 2, which publishes its received blocks at activation.
// Request 2 of group g then goes to worker 2, where the index advertises
// g, though worker 1 is less loaded. Request 3 of group g comes after
// both of g's requests retired and their blocks were removed from the
// index: nothing steers it, and it goes to the least loaded worker, 1 (a
// tie with 2 goes to the lower index), with no prefix hit.
func TestKVAware_RoutesByThePublishedIndex(t *testing.T) {
	for _, pol := range []string{"source-first", "destination-first"} {
		t.Run(pol, func(t *testing.T) {
			cfg := policyConfig(pol)
			cfg.Prefill.Workers, cfg.JitterUS = 1, 0
			if cfg.DecodeRouter != cluster.KVAware {
				t.Fatalf("the default decode router is %s", cfg.DecodeRouter)
			}
			reqs := []cluster.Request{
				{Index: 0, ArrivalUS: 0, PromptTokens: 256, OutputTokens: 100, CancelUS: -1},
				{Index: 1, ArrivalUS: 20_000, PromptTokens: 2048, OutputTokens: 100, PrefixGroup: "g", PrefixTokens: 512, CancelUS: -1},
				{Index: 2, ArrivalUS: 200_000, PromptTokens: 1024, OutputTokens: 10, PrefixGroup: "g", PrefixTokens: 512, CancelUS: -1},
				{Index: 3, ArrivalUS: 10_000_000, PromptTokens: 1024, OutputTokens: 10, PrefixGroup: "g", PrefixTokens: 512, CancelUS: -1},
			}
			routed := map[int]int{}
			advertised := map[int][2]bool{} // does the index advertise g on decode workers 1 and 2 when the request is routed
			var sim *Sim
			runWatched(t, cfg, reqs, func(s *Sim) func(*request) {
				sim = s
				return func(r *request) {
					if _, ok := routed[r.Index]; !ok && r.d >= 0 {
						routed[r.Index] = r.d
						advertised[r.Index] = [2]bool{s.index.Holds(1, "g"), s.index.Holds(2, "g")}
					}
				}
			})
			want := map[int]int{0: 1, 1: 2, 2: 2, 3: 1}
			for i, w := range want {
				if routed[i] != w {
					t.Errorf("request %d went to worker %d, want %d (g advertised on 1, 2: %v)", i, routed[i], w, advertised[i])
				}
			}
			if a := advertised[2]; a != [2]bool{false, true} {
				t.Errorf("when request 2 was routed the index advertised g on workers 1, 2: %v, want only 2", a)
			}
			if a := advertised[3]; a != [2]bool{false, false} {
				t.Errorf("when request 3 was routed the index still advertised g on workers 1, 2: %v", a)
			}
			for w := range cfg.NumWorkers() {
				if b := sim.index.Blocks(w, "g"); b != 0 {
					t.Errorf("worker %d ends advertising %d blocks of g", w, b)
				}
			}
		})
	}
}
