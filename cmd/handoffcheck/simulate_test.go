package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/sim"
)

const (
	strandedConfig   = "../../testdata/sim/stranded.json"
	strandedWorkload = "../../testdata/sim/stranded.jsonl"
	abortPlan        = "../../testdata/sim/abort-waiting-decode.jsonl"
	silentWithdrawal = "../../testdata/sim/silent-withdrawal.json"
)

// TestSimulate_DefaultRunsAndRepeats: with no arguments simulate runs the
// embedded configuration and workload, passes, and prints the same bytes
// twice; --json is one object with the same figures.
func TestSimulate_DefaultRunsAndRepeats(t *testing.T) {
	code, a, errOut := runCLI(t, "simulate")
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	if !strings.Contains(a, "200 requests") || !strings.Contains(a, "BoundedReclaim:") {
		t.Fatalf("summary lacks its figures:\n%s", a)
	}
	_, b, _ := runCLI(t, "simulate")
	if a != b {
		t.Fatal("two runs of simulate print different summaries")
	}
	code, js, _ := runCLI(t, "simulate", "--json")
	var out struct {
		Summary struct {
			Requests  int `json:"requests"`
			Succeeded int `json:"succeeded"`
			Cancelled int `json:"cancelled"`
		} `json:"summary"`
	}
	if code != exitOK || json.Unmarshal([]byte(js), &out) != nil || out.Summary.Requests != 200 || out.Summary.Succeeded+out.Summary.Cancelled != 200 || out.Summary.Cancelled == 0 {
		t.Fatalf("--json: exit %d, %+v\n%s", code, out, js)
	}
}

// TestSimulate_TimedViolation: a variant the untimed checker passes (the
// destination withdraws without telling the source) breaks BoundedReclaim
// on the clock, with exit 1 and the request's history; the built-in tables
// pass the same run.
func TestSimulate_TimedViolation(t *testing.T) {
	// On the simulator's clock, never the wall's: it runs beside the
	// tests that wait (TestCLI_LiveStuckAttemptEnds's silence).
	t.Parallel()
	args := []string{"simulate", "--config", strandedConfig, "--workload", strandedWorkload, "--faults", abortPlan}
	if code, out, errOut := runCLI(t, args...); code != exitOK {
		t.Fatalf("built-in tables: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ := runCLI(t, append(args, "--spec", silentWithdrawal)...)
	if code != exitViolation || !strings.Contains(out, "VIOLATION BoundedReclaim") || !strings.Contains(out, "destination row 33: Reserving --LocalAbort--> Withdrawing") {
		t.Fatalf("variant: exit %d\n%s", code, out)
	}
	if code, _, _ := runCLI(t, "check", "--spec", silentWithdrawal, "--config", "../../testdata/configs/commands.json"); code != exitOK {
		t.Fatalf("the untimed checker rejects the variant too (exit %d): it no longer shows what only the clock sees", code)
	}
}

// TestSimulate_BadInput: malformed inputs and flags exit 2 naming the
// file and line.
func TestSimulate_BadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	badWorkload := write("w.jsonl", "{\"format\":\"handoffcheck.workload/v1\"}\n{\"arrival_ms\":1,\"prompt_tokens\":0,\"output_tokens\":1}\n")
	badPlan := write("f.jsonl", "{\"format\":\"handoffcheck.faults/v1\"}\n{\"at_ms\":1,\"kind\":\"reorder\",\"request\":1}\n")
	badConfig := write("c.json", "{\"schema\":\"handoffcheck.sim/v1\",\n\"policy\":\"sideways\"}\n")
	farWorker := write("w9.jsonl", "{\"format\":\"handoffcheck.faults/v1\"}\n{\"at_ms\":1,\"kind\":\"restart\",\"worker\":9}\n")
	badMsg := write("m.jsonl", "{\"format\":\"handoffcheck.faults/v1\"}\n{\"at_ms\":1,\"kind\":\"loss\",\"request\":1,\"msg\":\"Hello\"}\n")
	hugePrompt := write("h.jsonl", "{\"format\":\"handoffcheck.workload/v1\"}\n{\"arrival_ms\":1,\"prompt_tokens\":1000000,\"output_tokens\":1}\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--workload", badWorkload}, "w.jsonl:2:"},
		{[]string{"--faults", badPlan}, "f.jsonl:2:"},
		{[]string{"--config", badConfig}, "c.json:2:"},
		{[]string{"--workload", hugePrompt}, "request 0"},
		{[]string{"--faults", farWorker}, "w9.jsonl:2:"},
		{[]string{"--faults", badMsg}, "m.jsonl:2:"},
		{[]string{"--compare"}, "--compare needs --out"},
		{[]string{"--faults", badPlan, "--faults-seed", "3"}, "exclusive"},
		{[]string{"--faults-count", "3"}, "need --faults-seed"},
		{[]string{"--policy", "sideways"}, "policy"},
		{[]string{"--spec", "nonexistent.json"}, "nonexistent.json"},
	} {
		code, _, errOut := runCLI(t, append([]string{"simulate"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want exit 2 naming %q", tc.args, code, errOut, tc.want)
		}
	}
}

// TestTimeline_StrandedSourceCompare writes both policies' timelines,
// plots and reports, and the side-by-side plots.
func TestTimeline_StrandedSourceCompare(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runCLI(t, "timeline", "--scenario", "stranded-source", "--compare", "--out", dir)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, f := range []string{"compare-blocks.png", "compare-blocks.svg", "compare-phases.png", "report.html",
		"source-first/timeline.json", "source-first/blocks.png", "destination-first/timeline.json", "destination-first/phases.svg"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	if !strings.Contains(out, "source-first on vllm") || !strings.Contains(out, "destination-first on sglang") {
		t.Fatalf("want both runs' summaries:\n%s", out)
	}
	checkStrandedSource(t, dir, out)
	if code, _, errOut := runCLI(t, "timeline", "--scenario", "nonesuch", "--out", dir); code != exitUsage || !strings.Contains(errOut, "stranded-source") {
		t.Fatalf("unknown scenario: exit %d, %s", code, errOut)
	}
}

// checkStrandedSource holds the stranded-source scenario to the handoff
// design's point: a source-first engine strands its computed prefill KV
// while decode waits for capacity, a destination-first one does not (it
// reserves before prefill runs). The figure is read from each run's
// timeline.json, the text summary, the side-by-side plot and the report.
func checkStrandedSource(t *testing.T, dir, out string) {
	t.Helper()
	var sum [2]struct {
		Summary struct {
			Src  float64 `json:"stranded_source_block_seconds"`
			Peak int64   `json:"stranded_source_peak_blocks"`
		} `json:"summary"`
		Workers []struct {
			Samples []struct {
				StrandedSource int64 `json:"stranded_source"`
			} `json:"samples"`
		} `json:"workers"`
	}
	for i, pol := range []string{"source-first", "destination-first"} {
		b, err := os.ReadFile(filepath.Join(dir, pol, "timeline.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &sum[i]); err != nil {
			t.Fatalf("%s/timeline.json: %v", pol, err)
		}
	}
	src, dst := sum[0].Summary, sum[1].Summary
	t.Logf("stranded source KV: source-first %.1f block-s (peak %d), destination-first %.1f block-s (peak %d)", src.Src, src.Peak, dst.Src, dst.Peak)
	if src.Src <= 0 || src.Src < 10*dst.Src || src.Peak <= 0 {
		t.Errorf("stranded source KV: source-first %.1f block-s (peak %d), destination-first %.1f: want the first above 0 and at least 10 times the second", src.Src, src.Peak, dst.Src)
	}
	var sampled int64
	for _, s := range sum[0].Workers[0].Samples {
		sampled = max(sampled, s.StrandedSource)
	}
	if sampled == 0 || sampled > src.Peak {
		t.Errorf("source-first prefill worker's samples peak at %d stranded source blocks, summary at %d", sampled, src.Peak)
	}
	for _, want := range []string{
		fmt.Sprintf("stranded source KV (pinned after compute while decode waits): %.1f block-seconds, peak %d blocks", src.Src, src.Peak),
		fmt.Sprintf("stranded source KV (pinned after compute while decode waits): %.1f block-seconds, peak %d blocks", dst.Src, dst.Peak),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`stranded source block-seconds, total</th><td class="n">([0-9.]+)</td><td class="n">([0-9.]+)</td>`).FindSubmatch(html)
	if row == nil {
		t.Fatalf("report.html has no row of stranded source block-seconds for both runs")
	}
	if string(row[1]) != fmt.Sprint(src.Src) || string(row[2]) != fmt.Sprint(dst.Src) {
		t.Errorf("report.html shows %s and %s stranded source block-seconds, the timelines %v and %v", row[1], row[2], src.Src, dst.Src)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "compare-blocks.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(svg), fmt.Sprintf("stranded source %d", src.Peak)) {
		t.Errorf("compare-blocks.svg does not note the source-first peak of %d stranded source blocks", src.Peak)
	}
}

// TestSimulate_FaultsSeedDeterministic: a drawn fault plan is the same
// for the same seed, and the run repeats byte for byte.
func TestSimulate_FaultsSeedDeterministic(t *testing.T) {
	a1, a, e1 := runCLI(t, "simulate", "--faults-seed", "3", "--faults-count", "40", "--json")
	_, b, _ := runCLI(t, "simulate", "--faults-seed", "3", "--faults-count", "40", "--json")
	if a1 != exitOK || a != b {
		t.Fatalf("exit %d (%s), or two runs differ", a1, e1)
	}
	if !strings.Contains(a, `"faults_struck"`) || strings.Contains(a, `"faults_struck": 0,`) {
		t.Fatalf("no drawn fault struck:\n%s", a)
	}
}

// TestDocsImages_Fresh: the plots docs/simulate.md shows are what
// `timeline --scenario stranded-source --compare` draws today. Rewrite
// with: go test ./cmd/handoffcheck -run TestDocsImages_Fresh -rewrite
func TestDocsImages_Fresh(t *testing.T) {
	dir := t.TempDir()
	if code, out, errOut := runCLI(t, "timeline", "--scenario", "stranded-source", "--compare", "--out", dir); code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for from, to := range map[string]string{"compare-blocks.png": "stranded-source-blocks.png", "compare-phases.png": "stranded-source-phases.png"} {
		got, err := os.ReadFile(filepath.Join(dir, from))
		if err != nil {
			t.Fatal(err)
		}
		committed := filepath.Join("..", "..", "docs", "img", to)
		if *rewrite {
			if err := os.WriteFile(committed, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(committed)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("docs/img/%s is stale: the timeline draws another picture today (rewrite with -rewrite)", to)
		}
	}
}

// Aggregated serving runs no disaggregated handoff, so there is no
// observation log: an explicit --log is refused, and --out writes no log
// but each request's timeline. The legacy path writes its log, whose
// header names the policy disabled, and conform refuses it at its first
// line: the lifecycle's contract does not apply to it.
func TestSimulate_DisabledWritesNoLog(t *testing.T) {
	for _, pol := range []string{"disabled", "aggregated"} {
		dir := t.TempDir()
		logPath := filepath.Join(dir, "log.jsonl")
		code, _, errOut := runCLI(t, "simulate", "--policy", pol, "--log", logPath)
		if pol == "disabled" {
			if code != 0 {
				t.Fatalf("simulate --policy disabled --log: exit %d: %s", code, errOut)
			}
			head, err := os.ReadFile(logPath)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(head, []byte(`{"schema":"handoffcheck.log/v1","policy":"disabled",`)) || bytes.Count(head, []byte("\n")) < 2 {
				t.Fatalf("the legacy run's log does not begin with a header of policy disabled followed by facts: %.200s", head)
			}
			code, _, errOut = runCLI(t, "conform", logPath)
			if code != 2 || !strings.HasPrefix(errOut, "handoffcheck conform: "+logPath+":1: ") || !strings.Contains(errOut, "contract does not apply") {
				t.Fatalf("conform of the legacy log: exit %d, stderr %q; want 2 at %s:1 saying the contract does not apply", code, errOut, logPath)
			}
		} else {
			if code != 2 || !strings.Contains(errOut, "--log: the "+pol+" policy runs no disaggregated handoff") {
				t.Fatalf("simulate --policy %s --log: exit %d, stderr %q; want 2 naming --log", pol, code, errOut)
			}
			if _, err := os.Stat(logPath); !os.IsNotExist(err) {
				t.Fatalf("refused run wrote %s (stat: %v)", logPath, err)
			}
		}
		out := filepath.Join(dir, "out")
		if code, _, errOut := runCLI(t, "simulate", "--policy", pol, "--out", out); code != 0 {
			t.Fatalf("simulate --policy %s --out: exit %d: %s", pol, code, errOut)
		}
		if _, err := os.Stat(filepath.Join(out, "log.jsonl")); os.IsNotExist(err) != (pol == "aggregated") {
			t.Fatalf("%s run with --out: log.jsonl written %v (stat: %v)", pol, err == nil, err)
		}
		data, err := os.ReadFile(filepath.Join(out, "timeline.json"))
		if err != nil {
			t.Fatal(err)
		}
		var tl sim.Timeline
		if err := json.Unmarshal(data, &tl); err != nil {
			t.Fatal(err)
		}
		if tl.Policy != pol || len(tl.Handoffs) != tl.Summary.Requests || len(tl.Handoffs[0].Phases) == 0 {
			t.Fatalf("%s: timeline.json of policy %q has %d requests' timelines for %d requests (the first with phases %v)",
				pol, tl.Policy, len(tl.Handoffs), tl.Summary.Requests, tl.Handoffs[0].Phases)
		}
	}
}

// simulate --policy disabled --compare runs the legacy path beside both
// lifecycle policies on one workload, each into its own directory, and
// plots the legacy path beside each: the legacy summary strands nothing,
// source-first does.
func TestSimulate_DisabledCompare(t *testing.T) {
	out := t.TempDir()
	code, stdout, errOut := runCLI(t, "simulate", "--policy", "disabled", "--compare", "--out", out, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var runs struct {
		Runs []struct{ Summary sim.Summary }
	}
	if err := json.Unmarshal([]byte(stdout), &runs); err != nil {
		t.Fatalf("%v in %s", err, stdout)
	}
	var sums []sim.Summary
	for _, r := range runs.Runs {
		sums = append(sums, r.Summary)
	}
	if len(sums) != 3 || sums[0].Policy != "disabled" || sums[1].Policy != "source-first" || sums[2].Policy != "destination-first" {
		t.Fatalf("summaries %+v", sums)
	}
	if sums[0].StrandedSourcePeak != 0 || sums[1].StrandedSourcePeak == 0 {
		t.Fatalf("stranded source peak: legacy %d, source-first %d", sums[0].StrandedSourcePeak, sums[1].StrandedSourcePeak)
	}
	for _, f := range []string{"disabled/timeline.json", "disabled-vs-source-first/compare-blocks.png", "disabled-vs-destination-first/report.html"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"simulate", "--policy", "aggregated", "--compare", "--out", t.TempDir()}, "--policy aggregated would be ignored"},
		{[]string{"simulate", "--policy", "source-first", "--compare", "--out", t.TempDir()}, "--policy source-first would be ignored"},
		{[]string{"simulate", "--policy", "disabled", "--faults-seed", "3"}, "the disabled policy runs no fault plan"},
		{[]string{"simulate", "--policy", "legacy"}, `policy "legacy", want source-first, destination-first, disabled or aggregated`},
		{[]string{"simulate", "--until-ms", "0"}, "--until-ms 0: want a time after 0"},
		{[]string{"simulate", "--until-ms", "NaN"}, "--until-ms NaN: want a time after 0"},
		{[]string{"simulate", "--policy", "disabled", "--until-ms", "5"}, "--until-ms: the disabled policy runs no handoff lifecycle to tear down"},
	} {
		code, _, errOut := runCLI(t, c.args...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d naming %q", c.args, code, errOut, exitUsage, c.want)
		}
	}
}

// docs/simulate.md compares the --keep-going example with the same run on
// the built-in tables in prose: the figures it gives are that run's.
func TestSimulate_KeepGoingBaselineInTheDocs(t *testing.T) {
	code, out, errOut := runCLI(t, "simulate", "--config", "../../testdata/sim/keep-going.json", "--faults", "../../testdata/sim/keep-going-faults.jsonl", "--keep-going", "--json")
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	var res struct {
		Summary struct {
			Succeeded, Failed int
			ThroughputRPS     float64               `json:"throughput_rps"`
			TTFT              struct{ P99 float64 } `json:"ttft_ms"`
			KeptGoing         struct {
				Violations  []any `json:"violations"`
				InUseBlocks int64 `json:"in_use_blocks"`
			} `json:"kept_going"`
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	s := res.Summary
	if len(s.KeptGoing.Violations) != 0 || s.KeptGoing.InUseBlocks != 0 {
		t.Fatalf("the built-in tables: %+v", s.KeptGoing)
	}
	page, err := os.ReadFile("../../docs/simulate.md")
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(string(page)), " ")
	want := fmt.Sprintf("break nothing: %d requests succeed, %d fail where their source aborted, throughput is %.2f requests/s, TTFT p99 %.1f ms, and nothing is in use at the end",
		s.Succeeded, s.Failed, s.ThroughputRPS, s.TTFT.P99)
	if !strings.Contains(flat, want) {
		t.Errorf("docs/simulate.md lacks %q", want)
	}
}

// --keep-going is refused, with a line saying why, where a run has no
// handoff lifecycle to go on with or where its verdicts would not hold.
func TestSimulate_KeepGoingRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--policy", "disabled"}, "--keep-going: the disabled policy runs no handoff lifecycle"},
		{[]string{"--policy", "aggregated"}, "--keep-going: the aggregated policy runs no handoff lifecycle"},
		{[]string{"--props", "../../testdata/props/questions.clock.props"}, "--keep-going with --props"},
	} {
		code, _, errOut := runCLI(t, append([]string{"simulate", "--keep-going"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.says) {
			t.Errorf("simulate --keep-going %v: exit %d, %q; want exit 2 saying %q", tc.args, code, errOut, tc.says)
		}
	}
}
