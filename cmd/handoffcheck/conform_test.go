package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const logsDir = "../../testdata/logs"

// examplesArgs is how the valid example logs are made (make examples).
func examplesArgs(policy, engine, records, out string) []string {
	return []string{"simulate", "--config", filepath.Join(logsDir, "config.json"), "--workload", filepath.Join(logsDir, "workload.jsonl"),
		"--faults", filepath.Join(logsDir, "faults.jsonl"), "--policy", policy, "--engine", engine, "--log-records", records, "--log", out}
}

// TestConform_ExamplesFresh: the valid example logs are what simulate
// writes today for their inputs, byte for byte.
func TestConform_ExamplesFresh(t *testing.T) {
	dir := t.TempDir()
	for _, p := range [][2]string{{"source-first", "vllm"}, {"destination-first", "sglang"}} {
		for _, r := range []string{"complete", "milestones"} {
			rec := "all"
			if r == "milestones" {
				rec = "milestones"
			}
			name := p[0] + "-" + r + ".jsonl"
			out := filepath.Join(dir, name)
			if code, _, errOut := runCLI(t, examplesArgs(p[0], p[1], rec, out)...); code != exitOK {
				t.Fatalf("simulate for %s: exit %d: %s", name, code, errOut)
			}
			got, _ := os.ReadFile(out)
			want, err := os.ReadFile(filepath.Join(logsDir, "valid", name))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(string(want), string(got)); d != "" {
				t.Errorf("%s is stale (make examples rewrites it; -committed +today):\n%s", name, d)
			}
		}
	}
}

// TestConform_Exits: explained 0, rejected 1 with the line and the
// invariant, malformed 2 with file:line, inconclusive 4; --json is one
// object with the same verdict; the same input prints the same bytes.
func TestConform_Exits(t *testing.T) {
	valid := filepath.Join(logsDir, "valid", "source-first-complete.jsonl")
	code, out, errOut := runCLI(t, "conform", valid)
	if code != exitOK || !strings.Contains(out, "verdict: explained") {
		t.Fatalf("valid: exit %d\n%s%s", code, out, errOut)
	}
	if _, again, _ := runCLI(t, "conform", valid); again != out {
		t.Fatal("two runs print different reports")
	}
	stale := filepath.Join(logsDir, "invalid", "a-stale-fact-from-an-old-generation.jsonl")
	code, out, _ = runCLI(t, "conform", stale)
	if code != exitViolation || !strings.Contains(out, "invariant: AttemptIsolation") || !strings.Contains(out, "verdict: rejected at "+stale+":126") {
		t.Fatalf("invalid: exit %d\n%s", code, out)
	}
	code, js, _ := runCLI(t, "conform", "--json", stale)
	var rep struct {
		Verdict   string
		Rejection struct {
			Line      int
			Invariant string
		}
	}
	if code != exitViolation || json.Unmarshal([]byte(js), &rep) != nil || rep.Verdict != "rejected" || rep.Rejection.Line != 126 || rep.Rejection.Invariant != "AttemptIsolation" {
		t.Fatalf("--json: exit %d %+v\n%s", code, rep, js)
	}
	milestones := filepath.Join(logsDir, "valid", "destination-first-milestones.jsonl")
	code, out, _ = runCLI(t, "conform", "--bound", "1", milestones)
	if code != exitInconclusive || !strings.Contains(out, "verdict: inconclusive") {
		t.Fatalf("--bound 1 on milestones: exit %d\n%s", code, out)
	}
	if code, _, _ := runCLI(t, "conform", milestones); code != exitOK {
		t.Fatalf("milestones with the default bound: exit %d", code)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "cut.jsonl")
	data, _ := os.ReadFile(valid)
	os.WriteFile(bad, data[:len(data)-20], 0o644)
	code, _, errOut = runCLI(t, "conform", bad)
	if code != exitUsage || !strings.Contains(errOut, "cut.jsonl:161: ") || !strings.Contains(errOut, "cut short") {
		t.Fatalf("truncated: exit %d: %s", code, errOut)
	}
	for _, args := range [][]string{{"conform"}, {"conform", "--bound", "0", valid}, {"conform", "--max-faults", "99", valid}, {"conform", filepath.Join(dir, "none.jsonl")}} {
		if code, _, _ := runCLI(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}

// TestConform_Mocker: --from mocker judges the mocker's bookkeeping and
// reports where its in-flight counts differ from the contract's; a
// rejection names the line of the mocker's log.
func TestConform_Mocker(t *testing.T) {
	code, out, errOut := runCLI(t, "conform", "--from", "mocker", filepath.Join(logsDir, "mocker", "source-first.jsonl"))
	if code != exitOK || !strings.Contains(out, "verdict: explained") || !strings.Contains(out, "mocker bookkeeping: 2 handoffs; its in-flight counts differ from the contract's at 2 events") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	bad := filepath.Join(logsDir, "mocker", "invalid-release-before-prefill-done.jsonl")
	code, out, _ = runCLI(t, "conform", "--from", "mocker", bad)
	if code != exitViolation || !strings.Contains(out, "rejected at "+bad+":8") || !strings.Contains(out, "invariant: ExactlyOnceRelease") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	code, _, errOut = runCLI(t, "conform", "--from", "mocker", filepath.Join(logsDir, "valid", "source-first-complete.jsonl"))
	if code != exitUsage || !strings.Contains(errOut, "source-first-complete.jsonl:1: ") {
		t.Fatalf("a handoffcheck log read as a mocker's: exit %d: %s", code, errOut)
	}
}

// TestConform_ClockError: --clock-error flips the verdict of a live run's
// log that only the shared clock orders (docs/conform.md), says so in the
// report, and refuses a negative error and an unstamped fact (exit 2,
// with its line); without it the output is what it always was.
func TestConform_ClockError(t *testing.T) {
	log := filepath.Join(logsDir, "clock", "release-before-activation.jsonl")
	spec := "../../testdata/variants/release-before-activation.json"
	code, out, errOut := runCLI(t, "conform", "--spec", spec, log)
	if code != exitOK || !strings.Contains(out, "verdict: explained") || strings.Contains(out, "clock error") {
		t.Fatalf("without a clock error: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "conform", "--clock-error", "10ms", "--spec", spec, log)
	if code != exitViolation || !strings.Contains(out, "\nclock error: 10ms ") || !strings.Contains(out, "verdict: rejected at "+log+":19") ||
		!strings.Contains(out, "a step that would explain it breaks ReleaseNeedsReaderAck") {
		t.Fatalf("--clock-error 10ms: exit %d\n%s%s", code, out, errOut)
	}
	code, js, _ := runCLI(t, "conform", "--json", "--clock-error", "250us", "--spec", spec, log)
	if code != exitViolation || !strings.Contains(js, `"clock_error": "250µs"`) {
		t.Fatalf("--json: exit %d\n%s", code, js)
	}
	if code, _, errOut := runCLI(t, "conform", "--clock-error", "-1ms", log); code != exitUsage || !strings.Contains(errOut, "--clock-error -1ms: want a duration of 0 or more") {
		t.Fatalf("a negative clock error: exit %d, %s", code, errOut)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	unstamped := filepath.Join(t.TempDir(), "unstamped.jsonl")
	os.WriteFile(unstamped, []byte(strings.Replace(string(data), `"kind":"activated","t_us":843782`, `"kind":"activated"`, 1)), 0o644)
	if code, _, errOut := runCLI(t, "conform", "--clock-error", "10ms", "--spec", spec, unstamped); code != exitUsage || !strings.Contains(errOut, "unstamped.jsonl:19: conform: bad input: --clock-error needs every fact stamped") {
		t.Fatalf("an unstamped fact: exit %d, %s", code, errOut)
	}
	backwards := filepath.Join(t.TempDir(), "backwards.jsonl")
	os.WriteFile(backwards, []byte(strings.Replace(string(data), `"kind":"activated","t_us":843782`, `"kind":"activated","t_us":622000`, 1)), 0o644)
	if code, _, errOut := runCLI(t, "conform", "--clock-error", "10ms", "--spec", spec, backwards); code != exitUsage ||
		!strings.Contains(errOut, "backwards.jsonl:19: conform: bad input: t_us 622000 is before 622962, decode-0's previous fact ("+backwards+":14)") {
		t.Fatalf("a stamp going back: exit %d, %s", code, errOut)
	}
}
