package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

const small = "../../testdata/configs/small.json"

func TestCLI_CheckPasses(t *testing.T) {
	code, out, errOut := runCLI(t, "check", "--config", small, "--progress", "never")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	for _, want := range []string{"run vllm (source-first, engine vllm): complete, no violation",
		"run sglang (destination-first, engine sglang): complete, no violation", "distinct states", "states/s",
		"coverage: source rows", "invariants checked: TransferNeedsReservation", "EventuallyDrained"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestCLI_CheckJSON(t *testing.T) {
	code, out, _ := runCLI(t, "check", "--config", small, "--policy", "destination-first", "--json")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	var rep struct {
		Verdict string `json:"verdict"`
		Runs    []struct {
			Name     string  `json:"name"`
			Policy   string  `json:"policy"`
			Complete bool    `json:"complete"`
			States   int     `json:"states"`
			Depth    int     `json:"depth"`
			Rate     float64 `json:"states_per_second"`
			Coverage []struct {
				Role  string   `json:"role"`
				Fired int      `json:"fired"`
				Total int      `json:"total"`
				Dead  []string `json:"never_fired"`
			} `json:"coverage"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	if rep.Verdict != "pass" || len(rep.Runs) != 1 || rep.Runs[0].Name != "sglang" || !rep.Runs[0].Complete ||
		rep.Runs[0].States != 897 || len(rep.Runs[0].Coverage) != 2 || rep.Runs[0].Coverage[0].Fired == 0 {
		t.Fatalf("report: %+v", rep)
	}
}

func TestCLI_CheckViolationAndReplay(t *testing.T) {
	dir := t.TempDir()
	code, out, _ := runCLI(t, "spec")
	if code != exitOK {
		t.Fatal("spec failed")
	}
	// Break the spec: the source releases its pin on a heartbeat.
	broken := strings.Replace(out,
		`"from": [
          "Pinned"
        ],
        "event": "LeaseRenewed",
        "policies": [
          "source-first"
        ],
        "actions": [
          "RenewLease"
        ],`,
		`"from": [
          "Pinned"
        ],
        "event": "LeaseRenewed",
        "policies": [
          "source-first"
        ],
        "to": "Released",
        "actions": [
          "DisarmLease", "ReleaseSource", "ReportSourceReleased", "Complete"
        ],`, 1)
	if broken == out {
		t.Fatal("the spec output changed shape; update the edit")
	}
	specFile := filepath.Join(dir, "broken.json")
	os.WriteFile(specFile, []byte(broken), 0o644)
	if code, _, errOut := runCLI(t, "validate", specFile); code != exitOK {
		t.Fatalf("validate: exit %d: %s", code, errOut)
	}
	traceFile := filepath.Join(dir, "ce.jsonl")
	code, out, _ = runCLI(t, "check", "--config", small, "--spec", specFile, "--run", "vllm", "--trace-out", traceFile, "--mermaid")
	if code != exitViolation || !strings.Contains(out, "VIOLATION SourcePinnedUntilRead") || !strings.Contains(out, "sequenceDiagram") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	_, full, _ := runCLI(t, "check", "--config", small, "--spec", specFile, "--run", "vllm", "--full-states", "--timing=false")
	if !strings.Contains(full, "    6. deliver h=0 to=source msg=LeaseRenewed") || strings.Count(full, "prefill0 gen=0") < 7 {
		t.Fatalf("--full-states does not print every worker line after each step:\n%s", full)
	}
	code, out, _ = runCLI(t, "replay", traceFile)
	if code != exitViolation || !strings.Contains(out, "(the violation the trace records)") {
		t.Fatalf("replay: exit %d:\n%s", code, out)
	}
	code, out, _ = runCLI(t, "check", "--config", small, "--spec", specFile, "--run", "vllm", "--walks", "200", "--steps", "60", "--seed", "3")
	if code != exitViolation || !strings.Contains(out, "reproduce: handoffcheck check --config "+small+" --spec "+specFile+" --run vllm --walks 1 --steps 60 --seed ") {
		t.Fatalf("walks: exit %d:\n%s", code, out)
	}
}

func TestCLI_BadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{\n  \"schema\": \"handoffcheck.config/v1\",\n  \"runs\": [{\"name\": \"x\", \"policy\": \"sideways\", \"engine\": \"vllm\"}]\n}\n"), 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"check", "--policy", "both"}, "--policy"},
		{[]string{"check", "--config", bad}, bad + ":3:"},
		{[]string{"check", "--config", filepath.Join(dir, "missing.json")}, "no such file"},
		{[]string{"check", "--max-memory", "lots"}, "--max-memory"},
		{[]string{"check", "--bitstate", "lots"}, "--bitstate \"lots\": want a size of at least 512B"},
		{[]string{"check", "--bitstate", "100B"}, "--bitstate \"100B\""},
		{[]string{"check", "--bitstate", "1MiB", "--exact"}, "--bitstate keeps bits, not states"},
		{[]string{"check", "--bitstate", "1MiB", "--liveness"}, "--bitstate keeps bits, not states"},
		{[]string{"check", "--bitstate", "1MiB", "--walks", "3"}, "--bitstate applies to exhaustive search"},
		{[]string{"check", "--run", "nope"}, "--run \"nope\""},
		{[]string{"check", "--steps", "0", "--walks", "1"}, "--steps"},
		{[]string{"check", "extra"}, "unexpected argument"},
		{[]string{"validate"}, "exactly one"},
		{[]string{"validate", bad}, bad + ":"},
		{[]string{"replay", bad}, bad + ":"},
		{[]string{"bogus"}, "unknown command"},
	}
	for _, tc := range cases {
		code, out, errOut := runCLI(t, tc.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

// --bitstate: the JSON report carries the bit array's figures, the run
// judges no liveness, and its verdict line says it was a bitstate search.
func TestCLI_Bitstate(t *testing.T) {
	code, out, errOut := runCLI(t, "check", "--config", small, "--run", "vllm", "--bitstate", "64KiB", "--json", "--timing=false")
	var rep struct {
		Runs []struct {
			States   int  `json:"states"`
			Liveness bool `json:"liveness_checked"`
			Bitstate *struct {
				Bytes    int64   `json:"bytes"`
				Hashes   int     `json:"hashes"`
				Fill     float64 `json:"bits_set_fraction"`
				Coverage float64 `json:"estimated_coverage"`
			} `json:"bitstate"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &rep); code != exitOK || err != nil || len(rep.Runs) != 1 {
		t.Fatalf("exit %d, %v:\n%s%s", code, err, out, errOut)
	}
	r := rep.Runs[0]
	if r.Liveness || r.Bitstate == nil || r.Bitstate.Bytes != 64<<10 || r.Bitstate.Hashes != 3 || r.Bitstate.Fill <= 0 || r.Bitstate.Coverage <= 0.99 || r.States != 563 {
		t.Fatalf("%+v, bitstate %+v", r, r.Bitstate)
	}
	_, out, _ = runCLI(t, "check", "--config", small, "--run", "vllm", "--bitstate", "64KiB", "--timing=false")
	if !strings.HasPrefix(out, "run vllm (source-first, engine vllm): bitstate search done (estimated coverage ") || !strings.Contains(out, "\n  bitstate: 64.0 KiB of bits, 3 per state, ") {
		t.Fatalf("text report:\n%s", out)
	}
}

// With --timing=false a report holds no measured figure, so two runs of
// the same inputs print the same bytes, whatever the number of workers.
func TestCLI_DeterministicText(t *testing.T) {
	_, a, _ := runCLI(t, "check", "--config", small, "--timing=false", "--workers", "1")
	_, b, _ := runCLI(t, "check", "--config", small, "--timing=false", "--workers", "2")
	if a != b || strings.Contains(a, "elapsed") {
		t.Fatalf("reports differ or hold timings:\n%s\n---\n%s", a, b)
	}
	_, a, _ = runCLI(t, "check", "--config", small, "--walks", "40", "--seed", "4", "--timing=false")
	_, b, _ = runCLI(t, "check", "--config", small, "--walks", "40", "--seed", "4", "--timing=false", "--workers", "1")
	if a != b {
		t.Fatalf("walk reports differ:\n%s\n---\n%s", a, b)
	}
}

func TestCLI_Deterministic(t *testing.T) {
	_, a, _ := runCLI(t, "check", "--config", small, "--walks", "50", "--seed", "9", "--json")
	_, b, _ := runCLI(t, "check", "--config", small, "--walks", "50", "--seed", "9", "--json")
	strip := func(s string) string {
		var lines []string
		for _, l := range strings.Split(s, "\n") {
			if !strings.Contains(l, "elapsed_ms") {
				lines = append(lines, l)
			}
		}
		return strings.Join(lines, "\n")
	}
	if strip(a) != strip(b) {
		t.Fatalf("two runs with the same seed differ:\n%s\n---\n%s", a, b)
	}
}
