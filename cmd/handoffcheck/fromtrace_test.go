package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// check --from-trace refuses what it would ignore, and the trace it
// writes replays from the run's initial state to the same violation.
func TestCheck_FromTrace(t *testing.T) {
	for _, flag := range [][]string{{"--config", "../../testdata/configs/small.json"}, {"--run", "vllm"}, {"--spec", "x.json"}, {"--policy", "source-first"}, {"--checkpoint", t.TempDir()}} {
		var out, errOut bytes.Buffer
		args := append([]string{"check", "--from-trace", exploreTrace}, flag...)
		if code := run(args, &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), flag[0]+" with --from-trace") {
			t.Errorf("%s: exit %d, %q", strings.Join(args, " "), code, errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"check", "--from-trace", "nosuch.jsonl"}, &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), "nosuch.jsonl") {
		t.Errorf("a missing trace: exit %d, %q", code, errOut.String())
	}
	trace := filepath.Join(t.TempDir(), "ce.jsonl")
	out.Reset()
	errOut.Reset()
	if code := run([]string{"check", "--from-trace", exploreTrace, "--timing=false", "--trace-out", trace}, &out, &errOut); code != exitViolation {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if first, _, _ := strings.Cut(out.String(), "\n"); !strings.HasPrefix(first, "from: the state after step 5 of "+exploreTrace) {
		t.Errorf("first line %q", first)
	}
	out.Reset()
	if code := run([]string{"replay", trace}, &out, &errOut); code != exitViolation ||
		!strings.Contains(out.String(), "at step 6 (the violation the trace records)") {
		t.Errorf("replay of the written trace: exit %d\n%s", code, out.String())
	}
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n != 7 {
		t.Errorf("the written trace has %d lines, want the header and 6 steps", n)
	}
}

// The timed form a reproduction names runs: timeline with the variant's
// tables breaks the invariant the untimed trace did.
func TestTimeline_Spec(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"timeline", "--scenario", "fault-sweep", "--policy", "source-first",
		"--spec", "../../testdata/variants/release-on-heartbeat.json", "--out", t.TempDir()}, &out, &errOut)
	if code != exitViolation || !strings.Contains(out.String()+errOut.String(), "VIOLATION SourcePinnedUntilRead") {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if code := run([]string{"timeline", "--scenario", "fault-sweep", "--spec", "nosuch.json", "--out", t.TempDir()}, &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), "nosuch.json") {
		t.Fatalf("a missing spec: exit %d, %q", code, errOut.String())
	}
}

// TestCheck_ReproOnTheClockAndLive: check --repro writes the trace's
// plan on the clock; simulate run on its files breaks the same invariant,
// and so does live, whose logs conform rejects naming it. The variants
// are those of the shipped ones whose plan (of their counterexample on
// two-handoffs-faults.json, the first of the vllm and sglang runs) live
// reproduces without hanging on how closely the processes keep to the
// clock: their bug needs no fault, or a fault live strikes where the plan
// aims it whatever the clock (an abort aimed at the phase after the
// destination reported its outcome; a transfer failure, which strikes
// the transfer once it runs). Of the 18 plans, these 6 reproduce live;
// the others need a deadline shortened below what the processes keep to,
// or a fault placed by time, or rest on an order of two processes' steps
// that live logs do not carry (TestCheck_ReproNotLive).
func TestCheck_ReproOnTheClockAndLive(t *testing.T) {
	for _, tc := range []struct {
		variant, run, inv, fault string
	}{
		{"decode-without-reservation", "vllm", "TransferNeedsReservation", ""},
		{"late-cancel-standin", "vllm", "ExactlyOnceRelease", `{"at_ms":0,"kind":"abort","request":0,"side":"destination","after":"outcome_reported"}`},
		{"ownership-at-terminal-token", "vllm", "RouterCleanup", ""},
		{"publish-before-compute", "vllm", "IndexMatchesCache", ""},
		{"pull-failed-reports-success", "vllm", "OutcomeTruthful", `"kind":"transfer_failure","request":0}`},
		{"release-on-scheduler-finish", "vllm", "SourcePinnedUntilRead", ""},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			if testing.Short() && tc.fault == "" && tc.variant != "decode-without-reservation" {
				t.Skip("one variant without a fault is enough in -short")
			}
			variant := "../../testdata/variants/" + tc.variant + ".json"
			dir := t.TempDir()
			code, _, errOut := runCLI(t, "check", "--config", "../../testdata/configs/two-handoffs-faults.json", "--spec", variant, "--run", tc.run, "--timing=false", "--repro", dir)
			if code != exitViolation || !strings.Contains(errOut, "reproduction of "+tc.inv+" written to "+dir) || !strings.Contains(errOut, "sim.json, workload.jsonl, faults.jsonl") {
				t.Fatalf("check --repro: exit %d\n%s", code, errOut)
			}
			faults, err := os.ReadFile(filepath.Join(dir, "faults.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(faults), tc.fault) || (tc.fault == "" && strings.Count(string(faults), "\n") != 1) {
				t.Fatalf("the plan's faults:\n%s\nwant %s", faults, tc.fault)
			}
			plan := []string{"--config", filepath.Join(dir, "sim.json"), "--workload", filepath.Join(dir, "workload.jsonl"), "--faults", filepath.Join(dir, "faults.jsonl"), "--spec", variant}
			code, out, errOut := runCLI(t, append([]string{"simulate"}, plan...)...)
			if code != exitViolation || !strings.Contains(out, "VIOLATION "+tc.inv+" at ") {
				t.Fatalf("simulate on the plan: exit %d\n%s%s", code, out, errOut)
			}
			liveDir := t.TempDir()
			code, out, errOut = runCLI(t, append([]string{"live", "--out", t.TempDir(), "--repro", liveDir}, plan...)...)
			if code != exitViolation || !strings.Contains(out, "verdict: rejected") || !strings.Contains(errOut, "reproduction of "+tc.inv+" written to "+liveDir) {
				t.Fatalf("live on the plan: exit %d\n%s%s", code, out, errOut)
			}
		})
	}
}

// TestCheck_ReproNotLive: the shipped variants whose plan on the clock a
// live run does not reliably reproduce, and what each README says of why.
// A plan that needs a deadline live refuses to scale so short is refused
// by live with exit 2, naming --time-scale (a deterministic check that
// needs no run). The others' live runs hang on how closely the processes
// keep to the clock, so the test holds what the README says of them, not
// their verdict: a fault placed by time (which live does not read), or a
// violation that rests on the order of two processes' steps that no
// message ties.
func TestCheck_ReproNotLive(t *testing.T) {
	const (
		refused = "Live refuses this plan at its default `--time-scale` 0.01"
		byTime  = "which a live run does not read"
		order   = "the judge finds an order that breaks nothing, or one in which another invariant breaks first"
	)
	for _, tc := range []struct {
		variant, run, why string
	}{
		{"expired-lease-reports-release", "vllm", refused},
		{"pull-deadline-without-fence", "vllm", refused},
		{"push-deadline-without-fence", "sglang", refused},
		{"release-on-heartbeat", "vllm", refused},
		{"cancel-noop-leaks-held-source", "vllm", byTime},
		{"late-peer-cancel-fails-done", "vllm", byTime},
		{"prefill-after-early-outcome", "sglang", byTime},
		{"withdraw-noop-leaks-reservation", "vllm", byTime},
		{"bootstrap-as-readiness", "sglang", order},
		{"release-before-activation", "vllm", order},
		{"pin-ignores-ack-and-lease", "vllm", order},
		{"report-before-release-applied", "vllm", order},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			if testing.Short() && tc.variant != "expired-lease-reports-release" {
				t.Skip("one variant is enough in -short")
			}
			variant := "../../testdata/variants/" + tc.variant + ".json"
			dir := t.TempDir()
			code, _, errOut := runCLI(t, "check", "--config", "../../testdata/configs/two-handoffs-faults.json", "--spec", variant, "--run", tc.run, "--timing=false", "--repro", dir)
			if code != exitViolation || !strings.Contains(errOut, "sim.json, workload.jsonl, faults.jsonl") {
				t.Fatalf("check --repro: exit %d\n%s", code, errOut)
			}
			readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
			if err != nil {
				t.Fatal(err)
			}
			if flat := strings.Join(strings.Fields(string(readme)), " "); !strings.Contains(flat, tc.why) {
				t.Fatalf("the README does not say %q:\n%s", tc.why, readme)
			}
			if tc.why != refused {
				return
			}
			code, out, errOut := runCLI(t, "live", "--out", t.TempDir(), "--config", filepath.Join(dir, "sim.json"), "--workload", filepath.Join(dir, "workload.jsonl"), "--faults", filepath.Join(dir, "faults.jsonl"), "--spec", variant)
			if code != exitUsage || !strings.Contains(errOut, "--time-scale 0.01: the configuration's shortest timer") {
				t.Fatalf("live on a plan whose deadline it cannot scale: exit %d\n%s%s", code, out, errOut)
			}
		})
	}
}
