package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// runTimeline runs a workload under a policy and returns its result and
// its timeline.json as read back (every request's handoff in it).
func runTimeline(t *testing.T, cfg *cluster.Config, reqs []cluster.Request) (*Result, *Timeline) {
	t.Helper()
	var buf bytes.Buffer
	rec := NewRecorder(&buf)
	res, err := Run(context.Background(), cfg, &SliceSource{Reqs: reqs}, Options{Timeline: rec})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil {
		t.Fatalf("%s: %v\n%v", cfg.PolicyName(), res.Violation, res.Violation.History)
	}
	var tl Timeline
	if err := json.Unmarshal(buf.Bytes(), &tl); err != nil {
		t.Fatal(err)
	}
	return res, &tl
}

// The legacy path beside the lifecycle on one workload, read from the
// series the plots draw: the legacy prefill KV is freed at completion
// (no pinned band, nothing stranded) while source-first pins and strands
// it; the legacy decode worker holds no reservation, and its active
// blocks at every sample are exactly those of the requests its
// scheduler had admitted and not yet finished (it allocates at
// admission, not at routing: its booking runs ahead of its blocks).
func TestLegacy_FreedAtCompletionAllocatedAtAdmission(t *testing.T) {
	reqs := randomWorkload(3, 300, 2_000, 0.1)
	cfg := cluster.DefaultConfig()
	if err := cfg.SetPolicy(cluster.Disabled); err != nil {
		t.Fatal(err)
	}
	cfg.SampleUS = 1_000
	cfg.Decode.Slots = 3 // decode waits for slots: admission comes after routing
	res, tl := runTimeline(t, cfg, reqs)
	if res.Summary.Succeeded+res.Summary.Cancelled != len(reqs) {
		t.Fatalf("%d succeeded and %d cancelled of %d", res.Summary.Succeeded, res.Summary.Cancelled, len(reqs))
	}
	if res.Summary.StrandedSourceBlockSeconds != 0 || res.Summary.StrandedSourcePeak != 0 {
		t.Fatalf("the legacy path strands %v block-seconds (peak %d): it pins nothing", res.Summary.StrandedSourceBlockSeconds, res.Summary.StrandedSourcePeak)
	}
	// The requests' decode intervals, from the rows the decode records fired.
	type span struct {
		w          int
		from, to   float64
		blocks     int64
		admittedAt bool
	}
	var spans []span
	routedBeforeAdmitted := 0
	for _, h := range tl.Handoffs {
		var sp span
		routed := -1.0
		for _, tr := range h.Transitions {
			if tr.Role != "destination" {
				continue
			}
			switch {
			case tr.Event == cluster.LegacyDecodeRouted:
				routed = tr.TMS
			case tr.Event == cluster.LegacyAdmitted:
				sp.from, sp.admittedAt = tr.TMS, true
			case tr.To == "Done" || (tr.To == "Aborted" && sp.admittedAt):
				sp.to = tr.TMS
			}
		}
		if !sp.admittedAt {
			continue
		}
		if sp.from > routed {
			routedBeforeAdmitted++
		}
		var q cluster.Request
		for _, r := range reqs {
			if r.Index == h.Request {
				q = r
			}
		}
		wc := cfg.AttemptWorld(q.PromptTokens, 0)
		if err := wc.Prepare(); err != nil {
			t.Fatal(err)
		}
		sp.w, sp.blocks = h.Decode, int64(wc.DestQuote(0, 1, false).ReservedBlocks)
		spans = append(spans, sp)
	}
	if len(spans) < len(reqs)/2 {
		t.Fatalf("only %d requests decoded", len(spans))
	}
	if routedBeforeAdmitted == 0 {
		t.Fatal("no request waited between its routing and its admission: the workload shows nothing")
	}
	if len(tl.Handoffs) != len(reqs) {
		t.Fatalf("timeline.json has %d requests of %d", len(tl.Handoffs), len(reqs))
	}
	booked := false
	checked := 0
	for _, ws := range tl.Workers {
		for _, smp := range ws.Samples {
			if smp.Pinned != 0 || smp.Reserved != 0 || smp.StrandedSource != 0 {
				t.Fatalf("worker %d at %.3f ms: pinned %d, reserved %d, stranded source %d on the legacy path", ws.Worker, smp.TMS, smp.Pinned, smp.Reserved, smp.StrandedSource)
			}
			if ws.Role != model.DecodeWorker.String() {
				continue
			}
			want := int64(0)
			for _, sp := range spans {
				if sp.w == ws.Worker && sp.from < smp.TMS && smp.TMS <= sp.to {
					want += sp.blocks
				}
			}
			if smp.Active != want {
				t.Fatalf("decode worker %d at %.3f ms: %d active blocks, but the requests admitted and not finished hold %d", ws.Worker, smp.TMS, smp.Active, want)
			}
			booked = booked || smp.Booked > smp.Active
			checked++
		}
	}
	if checked < 100 {
		t.Fatalf("compared %d samples", checked)
	}
	if !booked {
		t.Fatal("the decode router's booking never ran ahead of the allocated blocks")
	}
	// The same workload source-first: the lifecycle pins and strands.
	sf := cluster.DefaultConfig()
	sf.SampleUS = 1_000
	sf.Decode.Slots = cfg.Decode.Slots
	res, _ = runTimeline(t, sf, reqs)
	if res.Summary.StrandedSourcePeak == 0 {
		t.Fatal("source-first strands nothing on the workload: the comparison shows nothing")
	}
}

// DisabledModeUnchanged: a non-disaggregated run's report is byte for
// byte the same with the lifecycle on (either policy) and off (the
// legacy path): summary, JSON and timeline.json.
func TestDisabledModeUnchanged_ReportByteIdentical(t *testing.T) {
	reqs := randomWorkload(5, 200, 4_000, 0.1)
	var want [3][]byte
	for i, pol := range []string{cluster.Disabled, "source-first", "destination-first"} {
		cfg := cluster.DefaultConfig()
		if err := cfg.SetPolicy(pol); err != nil {
			t.Fatal(err)
		}
		cfg.Aggregated = true
		var tl bytes.Buffer
		rec := NewRecorder(&tl)
		res, err := Run(context.Background(), cfg, &SliceSource{Reqs: reqs}, Options{Timeline: rec})
		if err != nil {
			t.Fatal(err)
		}
		if rec.Err() != nil {
			t.Fatal(rec.Err())
		}
		var text, js bytes.Buffer
		if err := WriteResults(&text, []*Result{res}, false); err != nil {
			t.Fatal(err)
		}
		if err := WriteResults(&js, []*Result{res}, true); err != nil {
			t.Fatal(err)
		}
		got := [3][]byte{text.Bytes(), js.Bytes(), tl.Bytes()}
		if i == 0 {
			want = got
			if !bytes.Contains(text.Bytes(), []byte("aggregated")) || !bytes.Contains(tl.Bytes(), []byte(`"request":`)) {
				t.Fatalf("the report does not name the aggregated policy, or the timeline has no request:\n%s", text.Bytes())
			}
			continue
		}
		for k, name := range []string{"summary", "JSON summary", "timeline.json"} {
			if !bytes.Equal(want[k], got[k]) {
				t.Fatalf("the aggregated %s differs with the lifecycle %s from the one with it off", name, pol)
			}
		}
	}
}

// The legacy run judges its tables: a row that forgets to free the
// prefill's blocks, or frees them twice, breaks the run naming what it
// broke.
func TestLegacy_BrokenTablesAreCaught(t *testing.T) {
	defer func(f func() *spec.Spec) { legacyTables = f }(legacyTables)
	for _, c := range []struct {
		name string
		edit func(acts []string) []string
		want string
	}{
		{"no free", func(a []string) []string {
			return slices.DeleteFunc(a, func(s string) bool { return s == cluster.LegacyFreePrefill })
		}, model.NameQuiescence},
		{"free twice", func(a []string) []string { return append(a, cluster.LegacyStopPrefill) }, model.NameExactlyOnceRelease},
		{"no complete", func(a []string) []string {
			return slices.DeleteFunc(a, func(s string) bool { return s == cluster.LegacyComplete })
		}, model.NameQuiescence},
	} {
		legacyTables = func() *spec.Spec {
			s := cluster.LegacySpec()
			for i, r := range s.Source.Rows {
				if r.Event == cluster.LegacyPrefillFinished {
					s.Source.Rows[i].Actions = c.edit(slices.Clone(r.Actions))
				}
			}
			return s
		}
		cfg := cluster.DefaultConfig()
		if err := cfg.SetPolicy(cluster.Disabled); err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), cfg, steady(20, 5_000), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Violation == nil || res.Violation.Invariant != c.want {
			t.Fatalf("%s: violation %v, want %s", c.name, res.Violation, c.want)
		}
	}
}

// The same workload, configuration and seed give the same legacy
// timeline.json, byte for byte, with jitter drawn from the seed.
func TestLegacy_Deterministic(t *testing.T) {
	reqs := randomWorkload(7, 150, 3_000, 0.2)
	var first []byte
	for i := 0; i < 2; i++ {
		cfg := cluster.DefaultConfig()
		if err := cfg.SetPolicy(cluster.Disabled); err != nil {
			t.Fatal(err)
		}
		cfg.JitterUS, cfg.Seed = 400, 9
		cfg.DecodeRouter = cluster.Random
		var buf bytes.Buffer
		rec := NewRecorder(&buf)
		res, err := Run(context.Background(), cfg, &SliceSource{Reqs: reqs}, Options{Timeline: rec})
		if err != nil || res.Violation != nil {
			t.Fatalf("%v %v", err, res.Violation)
		}
		if i == 0 {
			first = buf.Bytes()
		} else if !bytes.Equal(first, buf.Bytes()) {
			t.Fatal("two legacy runs of the same inputs differ")
		}
	}
}

// Every scenario without faults runs on the legacy path with every check
// holding and every request ending.
func TestLegacy_FaultFreeScenarios(t *testing.T) {
	n := 0
	for i := range Scenarios {
		sc := &Scenarios[i]
		if !sc.FaultFree {
			continue
		}
		cfg, reqs, faults, err := sc.Setup(cluster.Disabled)
		if err != nil {
			t.Fatal(err)
		}
		if len(faults) > 0 {
			continue
		}
		res, err := Run(context.Background(), cfg, &SliceSource{Reqs: reqs}, Options{})
		if err != nil {
			t.Fatalf("%s: %v", sc.Name, err)
		}
		if res.Violation != nil {
			t.Fatalf("%s: %v", sc.Name, res.Violation)
		}
		if s := res.Summary; s.Succeeded+s.Cancelled != len(reqs) || s.StrandedSourcePeak != 0 {
			t.Fatalf("%s: %d succeeded, %d cancelled of %d; stranded source peak %d", sc.Name, s.Succeeded, s.Cancelled, len(reqs), s.StrandedSourcePeak)
		}
		n++
	}
	if n < 5 {
		t.Fatalf("ran %d scenarios", n)
	}
}

// One request on the legacy path, every time derived by hand from the
// default configuration without jitter: a 960-token prompt (60 blocks
// of 16 tokens), 4 output tokens.
//
//	0.5 ms      the request reaches prefill (0.5 ms latency); replay has no
//	            rendezvous, so it is submitted and admitted at once: 60
//	            blocks active
//	16.5 ms     prefill completes (960 tokens at 60,000 tokens/s: 16 ms)
//	            and frees its 60 blocks at once: nothing pinned
//	22.033 ms   the modeled delay ends: 0.5 ms latency and 5.033 ms of
//	            transfer (960 × 131,072 bytes at 25 GB/s); decode is routed,
//	            the room completes, and decode is admitted: only now does
//	            the decode worker hold the request's 60 blocks and a slot
//	102.033 ms  decode ends (4 tokens at 20 ms): TTFT 42.033 ms
func TestLegacy_OneRequestByHand(t *testing.T) {
	cfg := cluster.DefaultConfig()
	if err := cfg.SetPolicy(cluster.Disabled); err != nil {
		t.Fatal(err)
	}
	cfg.JitterUS = 0
	cfg.SampleUS = 500
	res, tl := runTimeline(t, cfg, []cluster.Request{{Index: 0, PromptTokens: 960, OutputTokens: 4, CancelUS: -1}})
	if len(tl.Handoffs) != 1 {
		t.Fatalf("%d timelines for one request", len(tl.Handoffs))
	}
	var got []string
	for _, tr := range tl.Handoffs[0].Transitions {
		got = append(got, fmt.Sprintf("%.3f %s %s->%s", tr.TMS, tr.Role, tr.Event, tr.To))
	}
	want := []string{
		"0.500 source RequestArrived->AwaitingDecode",
		"0.500 source DecodeConnected->Queued",
		"0.500 source Admitted->Computing",
		"16.500 source PrefillFinished->Sleeping",
		"22.033 source DelayElapsed->Done",
		"22.033 destination DecodeRouted->AwaitingRoom",
		"22.033 destination RoomCompleted->Queued",
		"22.033 destination Admitted->Decoding",
		"102.033 destination DecodeFinished->Done",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("transitions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	s := &res.Summary
	if s.Succeeded != 1 || s.TTFT.Mean != 42.033 || s.E2E.Mean != 102.033 {
		t.Fatalf("succeeded %d, TTFT %v ms, E2E %v ms; want 1, 42.033, 102.033", s.Succeeded, s.TTFT.Mean, s.E2E.Mean)
	}
	// The workers' series: the prefill worker held 60 active blocks and
	// never a pinned one; the decode worker 60 active at its peak and
	// never a reserved one.
	held := map[string]int{}
	for _, ws := range s.Workers {
		active := ws.Series["active"].Peak
		if ws.Series["pinned"].Peak != 0 || ws.Series["reserved"].Peak != 0 || (active != 0 && active != 60) {
			t.Errorf("worker %d (%s): pinned peak %v, reserved peak %v, active peak %v; want 0, 0, and 60 or 0",
				ws.Worker, ws.Role, ws.Series["pinned"].Peak, ws.Series["reserved"].Peak, active)
		}
		if active == 60 {
			held[ws.Role]++
		}
	}
	if held["prefill"] != 1 || held["decode"] != 1 {
		t.Errorf("workers that held the request's 60 blocks, by role: %v; want one prefill and one decode", held)
	}
	if s.StrandedSourcePeak != 0 {
		t.Errorf("stranded peak %d", s.StrandedSourcePeak)
	}
}
