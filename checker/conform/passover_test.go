package conform

import (
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/model"
)

// passOverHeader is the header of a live run of push-deadline-without-fence
// (sglang, one prefill and two decode workers).
const passOverHeader = `{"schema":"handoffcheck.log/v1","policy":"destination-first","engine":"sglang","processes":[{"name":"router","role":"router"},{"name":"prefill-0","role":"prefill"},{"name":"decode-0","role":"decode"},{"name":"decode-1","role":"decode"}],"config":{"schema":"handoffcheck.sim/v1","policy":"destination-first","engine":"sglang","seed":1,"prefill":{"workers":1,"capacity_blocks":8192,"tokens_per_sec":60000},"decode":{"workers":2,"capacity_blocks":4096,"slots":64,"headroom_tokens":65536,"ms_per_output_token":20},"transfer":{"bytes_per_token":131072,"block_size_tokens":16,"bandwidth_gbps":25},"headroom_tokens_per_request":512,"network":{"latency_ms":0.5,"jitter_ms":0},"timers":{"lease_ms":30000,"heartbeat_ms":5000,"bootstrap_ms":300000,"reservation_ms":300000,"transfer_deadline_ms":1000},"health_check_ms":10000,"command_ms":0.05,"slow_core_ms":200,"grace_ms":50,"routers":{"Prefill":"least-loaded","Decode":"kv-aware"},"commands":[],"renewal":true,"sample_ms":10,"max_retries":0}}`

// A fact that does nothing physical is passed over (the process's next
// fact judged where it stands) only where a step of the tables could log
// it. Live logs of push-deadline-without-fence: the source's push
// deadline releases the pins of a hung transfer (every explanation's step
// breaks SourcePinnedUntilRead), and only then does its Cancelled reach
// the destination, which logs cancelled and frees its reservation. The
// destination's cancelled is not passed over: no explanation has sent the
// cancel it takes, so its release is not judged where the explanations
// stand (with the transfer running, DestinationHeldWhileWritten), and the
// rejection names the source's step.
func TestDead_PassOverOnlyATakeableFact(t *testing.T) {
	logs := map[string]string{
		"router.jsonl": `{"proc":"router","gen":0,"attempt":"r0","kind":"routed","stage":"prefill","to":"prefill-0","tokens":48,"prompt_tokens":48,"t_us":385302}
{"proc":"router","gen":0,"attempt":"r0","kind":"routed","stage":"decode","to":"decode-0","blocks":3,"prefix_hit_tokens":0,"t_us":386002}`,
		"prefill-0.jsonl": `{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"request_accepted","t_us":387027}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"prefill_dispatched","t_us":387049}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"registered","t_us":387232}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"pinned","blocks":3,"t_us":387232}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"transfer_started","t_us":387232}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"stored","blocks":3,"t_us":387232}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"deadline_expired","timer":"push-deadline","t_us":427989}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"source_released","blocks":3,"t_us":427989}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"outcome_reported","outcome":"failed","t_us":427989}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"removed","blocks":3,"t_us":428002}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"transfer_failed","t_us":428007}`,
		"decode-0.jsonl": `{"proc":"decode-0","gen":0,"attempt":"r0","kind":"request_accepted","t_us":386261}
{"proc":"decode-0","gen":0,"attempt":"r0","kind":"reserved","pages":3,"slot":1,"headroom":512,"t_us":386297}
{"proc":"decode-0","gen":0,"attempt":"r0","kind":"registered","t_us":386297}
{"proc":"decode-0","gen":0,"attempt":"r0","kind":"cancelled","t_us":428253}
{"proc":"decode-0","gen":0,"attempt":"r0","kind":"reservation_released","pages":3,"t_us":428253}
{"proc":"decode-0","gen":0,"attempt":"r0","kind":"outcome_reported","outcome":"failed","t_us":428253}`,
		"decode-1.jsonl": "",
	}
	var in []Input
	for _, name := range []string{"router.jsonl", "prefill-0.jsonl", "decode-0.jsonl", "decode-1.jsonl"} {
		text := passOverHeader + "\n"
		if logs[name] != "" {
			text += logs[name] + "\n"
		}
		in = append(in, Input{Name: name, R: strings.NewReader(text)})
	}
	rep, err := Judge(in, Options{Protocol: variantProtocol(t, "../../testdata/variants/push-deadline-without-fence.json")})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Rejection
	if r == nil {
		t.Fatalf("verdict %s, want a rejection", rep.Verdict)
	}
	if r.File != "prefill-0.jsonl" || r.Invariant != "" || r.Broken != model.NameSourcePinnedUntilRead || !strings.Contains(r.Fact, obslog.DeadlineExpired.String()) {
		t.Fatalf("rejected at %s:%d (%s), invariant %q, broken %q: %s; want the source's deadline_expired, whose step breaks %s", r.File, r.Line, r.Fact, r.Invariant, r.Broken, r.Detail, model.NameSourcePinnedUntilRead)
	}
}
