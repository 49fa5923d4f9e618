package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
)

// TestDeterminism_SameInputsSameBytes: the same workload, configuration,
// faults and seed give a byte-identical timeline.json and summary; another
// seed gives another run (the seed is not ignored).
func TestDeterminism_SameInputsSameBytes(t *testing.T) {
	sc, err := LookupScenario("fault-sweep")
	if err != nil {
		t.Fatal(err)
	}
	run := func(seed uint64) ([]byte, []byte) {
		cfg, reqs, faults, err := sc.Setup("source-first")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Seed = seed
		cfg.JitterUS = 2_000
		cfg.DecodeRouter = cluster.PowerOfTwo
		var tl bytes.Buffer
		rec := NewRecorder(&tl)
		res, err := Run(context.Background(), cfg, &SliceSource{Reqs: reqs}, Options{Faults: faults, Timeline: rec})
		if err != nil || rec.Err() != nil {
			t.Fatal(err, rec.Err())
		}
		if res.Violation != nil {
			t.Fatal(res.Violation)
		}
		sum, err := json.Marshal(res.Summary)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(tl.Bytes()) {
			t.Fatalf("timeline.json is not valid JSON")
		}
		return tl.Bytes(), sum
	}
	tl1, s1 := run(7)
	tl2, s2 := run(7)
	if !bytes.Equal(tl1, tl2) || !bytes.Equal(s1, s2) {
		t.Fatalf("two runs with the same inputs differ: timeline %d vs %d bytes", len(tl1), len(tl2))
	}
	tl3, _ := run(8)
	if bytes.Equal(tl1, tl3) {
		t.Fatalf("seeds 7 and 8 gave the same timeline: the seed does not reach the jitter or the router")
	}
	var tl Timeline
	if err := json.Unmarshal(tl1, &tl); err != nil {
		t.Fatal(err)
	}
	if tl.Format != TimelineFormatV1 || len(tl.Handoffs) == 0 || len(tl.Workers) != 4 || tl.Summary == nil {
		t.Fatalf("timeline.json lacks parts: format %q, %d handoffs, %d workers", tl.Format, len(tl.Handoffs), len(tl.Workers))
	}
	t.Logf("timeline.json %d bytes, %d handoffs, identical twice", len(tl1), len(tl.Handoffs))
}
