package conform

import (
	"fmt"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/model"
)

// drainHeader is the header of a live run of rearm-reservation's plan
// (destination-first, one prefill and two decode workers).
const drainHeader = `{"schema":"handoffcheck.log/v1","policy":"destination-first","engine":"sglang","processes":[{"name":"router","role":"router"},{"name":"prefill-0","role":"prefill"},{"name":"decode-0","role":"decode"},{"name":"decode-1","role":"decode"}],"config":{"schema":"handoffcheck.sim/v1","policy":"destination-first","engine":"sglang","seed":1,"prefill":{"workers":1,"capacity_blocks":8192,"tokens_per_sec":60000},"decode":{"workers":2,"capacity_blocks":4096,"slots":64,"headroom_tokens":65536,"ms_per_output_token":20},"transfer":{"bytes_per_token":131072,"block_size_tokens":16,"bandwidth_gbps":25},"headroom_tokens_per_request":512,"network":{"latency_ms":0.5,"jitter_ms":0},"timers":{"lease_ms":30000,"heartbeat_ms":5000,"bootstrap_ms":300000,"reservation_ms":300000,"transfer_deadline_ms":60000},"health_check_ms":10000,"command_ms":0.05,"slow_core_ms":200,"grace_ms":50,"routers":{"Prefill":"least-loaded","Decode":"kv-aware"},"commands":[],"renewal":true,"sample_ms":10,"max_retries":0}}`

// drainLogs are the logs of rearm-reservation's run: the source aborts
// while it waits for the destination (its Cancelled lost), and the
// destination, reserved, re-arms its reservation each time it expires.
// abortUS stamps the source's abort; the destination's expiries are
// stamped a reservation deadline (300 s) apart; stamps false leaves
// every fact without a time stamp.
func drainLogs(abortUS int64, expiries int, stamps bool) []Input {
	at := func(us int64) string {
		if !stamps {
			return ""
		}
		return fmt.Sprintf(`,"t_us":%d`, us)
	}
	logs := map[string][]string{
		"router.jsonl": {
			`{"proc":"router","gen":0,"attempt":"r0","kind":"routed","stage":"prefill","to":"prefill-0","tokens":48,"prompt_tokens":48` + at(0) + `}`,
			`{"proc":"router","gen":0,"attempt":"r0","kind":"routed","stage":"decode","to":"decode-0","blocks":3,"prefix_hit_tokens":0` + at(300) + `}`,
		},
		"prefill-0.jsonl": {
			`{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"request_accepted"` + at(500) + `}`,
			`{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"aborted"` + at(abortUS) + `}`,
			`{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"outcome_reported","outcome":"failed"` + at(abortUS) + `}`,
		},
		"decode-0.jsonl": {
			`{"proc":"decode-0","gen":0,"attempt":"r0","kind":"request_accepted"` + at(800) + `}`,
			`{"proc":"decode-0","gen":0,"attempt":"r0","kind":"reserved","pages":3,"slot":1,"headroom":512` + at(850) + `}`,
			`{"proc":"decode-0","gen":0,"attempt":"r0","kind":"registered"` + at(850) + `}`,
		},
	}
	for k := 1; k <= expiries; k++ {
		logs["decode-0.jsonl"] = append(logs["decode-0.jsonl"], `{"proc":"decode-0","gen":0,"attempt":"r0","kind":"reservation_expired"`+at(850+int64(k)*300_000_000)+`}`)
	}
	var in []Input
	for _, name := range []string{"router.jsonl", "prefill-0.jsonl", "decode-0.jsonl"} {
		in = append(in, Input{Name: name, R: strings.NewReader(drainHeader + "\n" + strings.Join(logs[name], "\n") + "\n")})
	}
	return in
}

// Logs that end with an attempt in a loop the tables never leave are
// rejected naming EventuallyDrained, as check names the loop and as the
// simulator names a request still in flight an hour after the last
// arrival; logs whose attempt could still drain, or that cannot tell,
// keep Quiescence's verdict that they end with it unfinished.
//   - Stamped as a live run stamps them, the destination's reservation
//     armed again after the source's abort ran out, a deadline (300 s)
//     far longer than a delivery (0.5 ms), with the abort's Cancelled
//     still undelivered: on the clock it was lost, and from where the
//     logs end the destination only re-arms.
//   - One expiry: the deadline that ran out was armed before the abort,
//     so the Cancelled may still be on its way, and its delivery drains
//     the attempt.
//   - The abort stamped after the last expiry: nothing armed after it
//     ran out.
//   - No time stamps: the logs cannot say the Cancelled was lost.
func TestDead_LoopThatNeverDrains(t *testing.T) {
	variant := variantProtocol(t, "../../testdata/variants/rearm-reservation.json")
	for _, tc := range []struct {
		name     string
		abortUS  int64
		expiries int
		stamps   bool
		inv      string
	}{
		{"re-armed after the abort", 900, 3, true, model.NameEventuallyDrained},
		{"one expiry", 900, 1, true, model.NameQuiescence},
		{"abort after the expiries", 3*300_000_000 + 1000, 3, true, model.NameQuiescence},
		{"no time stamps", 900, 3, false, model.NameQuiescence},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Judge(drainLogs(tc.abortUS, tc.expiries, tc.stamps), Options{Protocol: variant})
			if err != nil {
				t.Fatal(err)
			}
			r := rep.Rejection
			if r == nil {
				t.Fatalf("verdict %s, want a rejection", rep.Verdict)
			}
			// At the attempt's last fact, as an unfinished attempt is.
			if r.Invariant != tc.inv {
				t.Fatalf("rejected at %s:%d (%s) naming %q: %s; want %s", r.File, r.Line, r.Fact, r.Invariant, r.Detail, tc.inv)
			}
			switch tc.inv {
			case model.NameEventuallyDrained:
				if r.File != "decode-0.jsonl" || !strings.Contains(r.Fact, "reservation_expired") {
					t.Fatalf("rejected at %s:%d (%s), want the last reservation_expired", r.File, r.Line, r.Fact)
				}
				if !strings.Contains(r.Detail, "the logs end with the attempt in a loop the tables never leave") || !strings.Contains(r.Detail, "(timer h=0 timer=reservation) never drain it") {
					t.Fatalf("the detail does not say what loops: %s", r.Detail)
				}
				if r.Trace == nil {
					t.Fatal("no trace of the rejection")
				}
			default:
				if !strings.HasPrefix(r.Detail, "the logs end with the attempt unfinished") {
					t.Fatalf("the detail: %s", r.Detail)
				}
			}
		})
	}
}
