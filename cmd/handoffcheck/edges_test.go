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
