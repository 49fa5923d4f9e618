package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
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
