package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeFile writes text into a new file of the test's directory.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const workloadHeader = `{"format":"handoffcheck.workload/v1"}` + "\n"

// Two requests under one id are refused at the second's line by every
// command that reads a workload, before anything runs: live used to wait
// for the second forever, and simulate wrote a log that conform rejects.
func TestWorkloadDuplicateIDRefused(t *testing.T) {
	w := writeFile(t, "dup.jsonl", workloadHeader+
		`{"arrival_ms":0,"prompt_tokens":64,"output_tokens":4,"id":"a"}`+"\n"+
		`{"arrival_ms":1,"prompt_tokens":64,"output_tokens":4,"id":"a"}`+"\n")
	want := w + `:3: workload: bad workload: id "a" is already the id of the request on line 2; want each id once`
	wantRefused(t, []string{"simulate", "--workload", w}, want)
	wantRefused(t, []string{"workload", "check", w}, want)
	// live is given a bound: on a defect it would wait for the second
	// request to its end; the bound turns that into a failure, not a hang.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code, out, errOut := runCLIContext(ctx, "live", "--workload", w, "--no-conform", "--out", t.TempDir())
	if code != exitUsage || out != "" || !strings.Contains(errOut, want) {
		t.Fatalf("live: exit %d, stdout %q, stderr %q; want exit 2 saying %s", code, out, errOut, want)
	}
}

// Runs that would judge nothing are refused with exit 2, as check refuses
// an empty selection of runs: a log of its header alone, a workload
// without a request (simulate and live), a time scale under which every
// timer fires at once, and a fault aimed at a request the workload does
// not have (it used to vanish as "found nothing to strike").
func TestNothingJudgedIsNoPass(t *testing.T) {
	data, err := os.ReadFile("../../testdata/logs/valid/source-first-complete.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(string(data), "\n")
	log := writeFile(t, "header.jsonl", head+"\n")
	wantRefused(t, []string{"conform", log}, "the logs hold no fact after their headers: nothing was judged")
	empty := writeFile(t, "empty.jsonl", workloadHeader)
	wantRefused(t, []string{"simulate", "--workload", empty}, empty+": the workload has no request")
	wantRefused(t, []string{"live", "--workload", empty, "--no-conform"}, empty+": the workload has no request")
	for _, scale := range []string{"1e-300", "0.0001"} {
		wantRefused(t, []string{"live", "--time-scale", scale, "--no-conform"},
			"--time-scale "+scale+": the configuration's shortest timer, heartbeat_ms 5000", "want at least 1 ms", "a --time-scale of at least 0.0002")
	}
	wantRefused(t, []string{"live", "--time-scale", "NaN"}, "--time-scale NaN, want more than 0")
	w := "../../testdata/logs/workload.jsonl"
	plan := writeFile(t, "faults.jsonl", `{"format":"handoffcheck.faults/v1"}`+"\n"+`{"at_ms":0,"kind":"cancel","request":1}`+"\n"+`{"at_ms":0,"kind":"hang","request":8}`+"\n")
	want := plan + ":3: faultplan: bad fault plan: the fault aims at request 8, but the workload has 8 requests (0 to 7); want a request of the workload"
	wantRefused(t, []string{"simulate", "--workload", w, "--faults", plan}, want)
	wantRefused(t, []string{"live", "--workload", w, "--faults", plan, "--no-conform"}, want)
}
