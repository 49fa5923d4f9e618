package plot

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/sim"
	"github.com/handoffcheck/handoffcheck/model"
)

// requests is a workload held in memory.
type requests struct {
	reqs []cluster.Request
	i    int
}

func (s *requests) Next() (cluster.Request, error) {
	if s.i == len(s.reqs) {
		return cluster.Request{}, io.EOF
	}
	s.i++
	return s.reqs[s.i-1], nil
}

// steady is n requests every gapUS, prompts cycling through a few lengths
// and prefix groups.
func steady(n int, gapUS int64) *requests {
	src := &requests{}
	for i := range n {
		r := cluster.Request{Index: i, ArrivalUS: int64(i) * gapUS, PromptTokens: model.Tokens(256 + 512*(i%4)),
			OutputTokens: model.Tokens(16 + 8*(i%5)), PrefixGroup: []string{"a", "b", ""}[i%3], CancelUS: -1}
		if r.PrefixGroup != "" {
			r.PrefixTokens = model.Tokens(128 * (i % 3 % 2))
		}
		src.reqs = append(src.reqs, r)
	}
	return src
}

// simulate runs the steady workload on the default cluster under a
// policy and returns its timeline.
func simulate(t *testing.T, policy, engine string, n int) *sim.Timeline {
	t.Helper()
	js := cluster.DefaultConfigJSON()
	js = bytes.Replace(js, []byte(`"policy": "source-first"`), []byte(`"policy": "`+policy+`"`), 1)
	js = bytes.Replace(js, []byte(`"engine": "vllm"`), []byte(`"engine": "`+engine+`"`), 1)
	cfg, err := cluster.ParseConfig("plot-test.json", js)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Policy != policy {
		t.Fatalf("configured policy %q, want %q (the default configuration changed form)", cfg.Policy, policy)
	}
	rec := sim.NewRecorder(nil)
	res, err := sim.Run(context.Background(), cfg, steady(n, 20_000), sim.Options{Timeline: rec})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil {
		t.Fatalf("violation: %v", res.Violation)
	}
	if err := rec.Err(); err != nil {
		t.Fatal(err)
	}
	return rec.Timeline()
}

// The charts and reports of real simulator runs, one per policy: what
// the recorder gives is what the package draws.
func TestWrite_SimulatedRuns(t *testing.T) {
	a := simulate(t, "source-first", "vllm", 60)
	b := simulate(t, "destination-first", "sglang", 60)
	if len(a.Workers) == 0 || len(a.Handoffs) == 0 || a.Summary == nil {
		t.Fatalf("the recorder gave an empty timeline: %d workers, %d handoffs", len(a.Workers), len(a.Handoffs))
	}
	dir := t.TempDir()
	names, err := WriteDir(a, filepath.Join(dir, "one"))
	if err != nil {
		t.Fatal(err)
	}
	checkDir(t, filepath.Join(dir, "one"), names)
	html := readFile(t, filepath.Join(dir, "one", ReportFile))
	for _, want := range []string{
		"<th>requests</th><td class=\"n\">60</td>",
		"<th>TTFT p99 (ms)</th><td class=\"n\">" + num(a.Summary.TTFT.P99) + "</td>",
		"<th>E2E p50 (ms)</th><td class=\"n\">" + num(a.Summary.E2E.P50) + "</td>",
		"worker 0 (prefill)", "worker 3 (decode)",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report of the source-first run lacks %q", want)
		}
	}
	names, err = WriteCompare(a, b, filepath.Join(dir, "two"))
	if err != nil {
		t.Fatal(err)
	}
	checkDir(t, filepath.Join(dir, "two"), names)
	html = readFile(t, filepath.Join(dir, "two", ReportFile))
	for _, want := range []string{"source-first (vllm)", "destination-first (sglang)"} {
		if !strings.Contains(html, want) {
			t.Errorf("compare report lacks %q", want)
		}
	}
}
