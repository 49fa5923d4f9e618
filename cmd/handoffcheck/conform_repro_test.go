package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConform_Repro: --repro on a rejection keeps the rejection's exit
// and report, and writes a reproduction whose trace replay rejects with
// the same invariant; a rejection no explanation reached gets a README
// that says why there is no trace; --repro on an explained log writes
// nothing.
func TestConform_Repro(t *testing.T) {
	log := filepath.Join(logsDir, "invalid", "stored-before-activation.jsonl")
	_, plain, _ := runCLI(t, "conform", log)
	dir := filepath.Join(t.TempDir(), "repro")
	code, out, errOut := runCLI(t, "conform", "--repro", dir, log)
	if code != exitViolation || out != plain {
		t.Fatalf("exit %d, the report differs from the one without --repro: %v\n%s%s", code, out != plain, out, errOut)
	}
	if !strings.Contains(errOut, "reproduction of NoStoredBeforeActivation written to "+dir) {
		t.Fatalf("stderr: %s", errOut)
	}
	for _, f := range []string{"trace.jsonl", "spec.json", "README.md", "repro_test.go"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	readme, _ := os.ReadFile(filepath.Join(dir, "README.md"))
	if !strings.Contains(string(readme), log+":49") || !strings.Contains(string(readme), "handoffcheck conform "+log+"\n") {
		t.Errorf("the README does not name the fact's file:line or the command without --repro:\n%s", readme)
	}
	code, out, _ = runCLI(t, "replay", filepath.Join(dir, "trace.jsonl"))
	if code != exitViolation || !strings.Contains(out, "VIOLATION NoStoredBeforeActivation") {
		t.Fatalf("replay: exit %d\n%s", code, out)
	}

	stale := filepath.Join(logsDir, "invalid", "a-stale-fact-from-an-old-generation.jsonl")
	dir = filepath.Join(t.TempDir(), "stale")
	code, _, errOut = runCLI(t, "conform", "--repro", dir, stale)
	if code != exitViolation || !strings.Contains(errOut, "no trace of the rejection") {
		t.Fatalf("stale: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "trace.jsonl")); !os.IsNotExist(err) {
		t.Fatalf("a trace without an explanation: %v", err)
	}

	// A mocker's log is judged as what it means: its rejection too.
	mock := filepath.Join("..", "..", "testdata", "logs", "mocker", "invalid-release-before-prefill-done.jsonl")
	dir = filepath.Join(t.TempDir(), "mocker")
	code, _, errOut = runCLI(t, "conform", "--from", "mocker", "--repro", dir, mock)
	if code != exitViolation || !strings.Contains(errOut, "written to "+dir) {
		t.Fatalf("mocker: exit %d: %s", code, errOut)
	}
	if readme, err := os.ReadFile(filepath.Join(dir, "README.md")); err != nil || !strings.Contains(string(readme), "handoffcheck conform --from mocker "+mock+"\n") {
		t.Fatalf("mocker: %v\n%s", err, readme)
	}

	valid := filepath.Join(logsDir, "valid", "source-first-complete.jsonl")
	dir = filepath.Join(t.TempDir(), "valid")
	if code, _, errOut := runCLI(t, "conform", "--repro", dir, valid); code != exitOK || errOut != "" {
		t.Fatalf("valid: exit %d: %s", code, errOut)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("an explained log's reproduction directory holds %d files", len(entries))
	}
}
