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
// and so does live, whose logs conform rejects naming it. The first
// variant's bug needs no fault and no deadline; the second's needs a
// client cancel after the destination reported its outcome, which the
// plan aims at that phase (the destination's worker tells the frontend
// when it logs the fact), so neither live verdict hangs on how closely
// the processes keep to the clock.
func TestCheck_ReproOnTheClockAndLive(t *testing.T) {
	for _, tc := range []struct {
		variant, inv, fault string
	}{
		{"decode-without-reservation", "TransferNeedsReservation", ""},
		{"late-cancel-standin", "ExactlyOnceRelease", `{"at_ms":0,"kind":"cancel","request":0,"side":"destination","after":"outcome_reported"}`},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			variant := "../../testdata/variants/" + tc.variant + ".json"
			dir := t.TempDir()
			code, _, errOut := runCLI(t, "check", "--config", "../../testdata/configs/small.json", "--spec", variant, "--run", "vllm", "--timing=false", "--repro", dir)
			if code != exitViolation || !strings.Contains(errOut, "reproduction of "+tc.inv+" written to "+dir) || !strings.Contains(errOut, "sim.json, workload.jsonl, faults.jsonl") {
				t.Fatalf("check --repro: exit %d\n%s", code, errOut)
			}
			faults, err := os.ReadFile(filepath.Join(dir, "faults.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(faults), tc.fault) {
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
