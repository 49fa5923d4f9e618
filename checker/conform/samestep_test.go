package conform

import (
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/model"
)

// sameStepHeader is the header of a run on the clock of two vllm
// variants (source-first, one prefill and two decode workers).
const sameStepHeader = `{"schema":"handoffcheck.log/v1","policy":"source-first","engine":"vllm","processes":[{"name":"router","role":"router"},{"name":"prefill-0","role":"prefill"},{"name":"decode-0","role":"decode"},{"name":"decode-1","role":"decode"}],"config":{"schema":"handoffcheck.sim/v1","policy":"source-first","engine":"vllm","seed":1,"prefill":{"workers":1,"capacity_blocks":8192,"tokens_per_sec":60000},"decode":{"workers":2,"capacity_blocks":4096,"slots":64,"headroom_tokens":65536,"ms_per_output_token":20},"transfer":{"bytes_per_token":131072,"block_size_tokens":16,"bandwidth_gbps":25},"headroom_tokens_per_request":512,"network":{"latency_ms":0.5,"jitter_ms":0},"timers":{"lease_ms":30000,"heartbeat_ms":5000,"bootstrap_ms":300000,"reservation_ms":300000,"transfer_deadline_ms":60000},"health_check_ms":10000,"command_ms":0.05,"slow_core_ms":200,"grace_ms":50,"routers":{"Prefill":"least-loaded","Decode":"kv-aware"},"commands":[],"renewal":true,"sample_ms":10,"max_retries":0}}`

// A fact that a step of the tables logs right where the logs have it,
// a step that breaks a step or state invariant, is rejected naming that
// invariant, not the Quiescence the explanations without the step reach
// at the fact: check judges a step's step and state invariants first and
// Quiescence only once nothing more can happen, and names the step's
// invariant for the same violating step. The logs are the runs on the
// clock of the two variants' counterexamples on two-handoffs-faults.json,
// cut into one log per process as a live run writes them, up to the
// violation.
//   - withdraw-noop-leaks-reservation: the destination, aborted while
//     reserving and then reserved, takes its core's no-op and reports
//     failed still holding its pages; the step also completes the
//     request (InFlightAccounting), where the outcome alone leaves a
//     finished side holding its reserved pages (Quiescence).
//   - report-before-release-applied: the source takes ReaderCompleted
//     with its core slowed and reports ok before its release is applied;
//     the step frees the router's ownership with the source still pinned
//     (RouterCleanup), where the step with the release applied at once
//     owes a source_released the source never logs (Quiescence).
func TestDead_StepInvariantBeforeQuiescence(t *testing.T) {
	for _, tc := range []struct {
		variant, file, inv string
		logs               map[string]string
	}{
		{"withdraw-noop-leaks-reservation", "decode-0.jsonl", model.NameInFlightAccounting, map[string]string{
			"router.jsonl": `{"proc":"router","gen":0,"attempt":"r0","kind":"routed","stage":"prefill","to":"prefill-0","tokens":48,"prompt_tokens":48,"t_us":0}
{"proc":"router","gen":0,"attempt":"r0","kind":"routed","stage":"decode","to":"decode-0","blocks":3,"prefix_hit_tokens":0,"t_us":1800}`,
			"prefill-0.jsonl": `{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"request_accepted","t_us":500}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"prefill_dispatched","t_us":500}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"registered","t_us":1300}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"pinned","blocks":3,"t_us":1300}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"stored","blocks":3,"t_us":1300}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"cancelled","t_us":2300}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"source_released","blocks":3,"t_us":2300}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"outcome_reported","outcome":"failed","t_us":2300}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"removed","blocks":3,"t_us":2300}`,
			"decode-0.jsonl": `{"proc":"decode-0","gen":0,"attempt":"r0","kind":"request_accepted","t_us":1800}
{"proc":"decode-0","gen":0,"attempt":"r0","kind":"aborted","t_us":1800}
{"proc":"decode-0","gen":0,"attempt":"r0","kind":"reserved","pages":3,"slot":0,"headroom":0,"t_us":1850}
{"proc":"decode-0","gen":0,"attempt":"r0","kind":"outcome_reported","outcome":"failed","t_us":201800}`,
		}},
		{"report-before-release-applied", "prefill-0.jsonl", model.NameRouterCleanup, map[string]string{
			"router.jsonl": `{"proc":"router","gen":0,"attempt":"r0","kind":"routed","stage":"prefill","to":"prefill-0","tokens":48,"prompt_tokens":48,"t_us":0}
{"proc":"router","gen":0,"attempt":"r0","kind":"routed","stage":"decode","to":"decode-0","blocks":3,"prefix_hit_tokens":0,"t_us":1800}`,
			"prefill-0.jsonl": `{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"request_accepted","t_us":500}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"prefill_dispatched","t_us":500}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"registered","t_us":1300}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"pinned","blocks":3,"t_us":1300}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"stored","blocks":3,"t_us":1300}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"reader_completed","t_us":3102}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"outcome_reported","outcome":"ok","t_us":3102}`,
			"decode-0.jsonl": `{"proc":"decode-0","gen":0,"attempt":"r0","kind":"request_accepted","t_us":1800}
{"proc":"decode-0","gen":0,"attempt":"r0","kind":"reserved","pages":3,"slot":0,"headroom":0,"t_us":1850}
{"proc":"decode-0","gen":0,"attempt":"r0","kind":"registered","t_us":1850}
{"proc":"decode-0","gen":0,"attempt":"r0","kind":"transfer_started","t_us":1850}
{"proc":"decode-0","gen":0,"attempt":"r0","kind":"transfer_done","t_us":2602}
{"proc":"decode-0","gen":0,"attempt":"r0","kind":"receive_completed","t_us":2602}
{"proc":"decode-0","gen":0,"attempt":"r0","kind":"activated","t_us":2602}
{"proc":"decode-0","gen":0,"attempt":"r0","kind":"stored","blocks":3,"t_us":2602}`,
		}},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			var in []Input
			for _, name := range []string{"router.jsonl", "prefill-0.jsonl", "decode-0.jsonl"} {
				in = append(in, Input{Name: name, R: strings.NewReader(sameStepHeader + "\n" + tc.logs[name] + "\n")})
			}
			rep, err := Judge(in, Options{Protocol: variantProtocol(t, "../../testdata/variants/"+tc.variant+".json")})
			if err != nil {
				t.Fatal(err)
			}
			r := rep.Rejection
			if r == nil {
				t.Fatalf("verdict %s, want a rejection", rep.Verdict)
			}
			if r.File != tc.file || r.Invariant != tc.inv || !strings.Contains(r.Fact, "outcome_reported") {
				t.Fatalf("rejected at %s:%d (%s), invariant %q, broken %q: %s; want %s's outcome_reported, naming %s as check does", r.File, r.Line, r.Fact, r.Invariant, r.Broken, r.Detail, tc.file, tc.inv)
			}
			if !strings.Contains(r.Detail, "only to break Quiescence") {
				t.Fatalf("the detail does not say what the explanations without the step break: %s", r.Detail)
			}
		})
	}
}
