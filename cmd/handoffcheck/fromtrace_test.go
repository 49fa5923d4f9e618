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
