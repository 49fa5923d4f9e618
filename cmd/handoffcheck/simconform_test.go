package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The simulator's own log of its default run conforms: a run of the
// default configuration and workload, judged by conform. (Canonical
// block adoption once broke it: the simulator shared adopted blocks, the
// judge counted them twice and rejected the log with CapacityRespected.)
// A run that adopts canonical blocks writes a log conform refuses at its
// first line, naming why.
func TestSimulateLog_Conforms(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "default.jsonl")
	var out, errOut bytes.Buffer
	if code := run([]string{"simulate", "--log", log}, &out, &errOut); code != exitOK {
		t.Fatalf("simulate: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	out.Reset()
	if code := run([]string{"conform", log}, &out, &errOut); code != exitOK || !strings.Contains(out.String(), "verdict: explained") {
		t.Fatalf("conform of the default run's log: exit %d\n%s%s", code, out.String(), errOut.String())
	}

	cfg := filepath.Join(dir, "adopt.json")
	data, err := os.ReadFile("../../checker/cluster/default.json")
	if err != nil {
		t.Fatal(err)
	}
	adopting := strings.Replace(string(data), "{", "{\n  \"adopt_canonical_blocks\": true,", 1)
	if err := os.WriteFile(cfg, []byte(adopting), 0o644); err != nil {
		t.Fatal(err)
	}
	alog := filepath.Join(dir, "adopt.jsonl")
	out.Reset()
	errOut.Reset()
	if code := run([]string{"simulate", "--config", cfg, "--log", alog}, &out, &errOut); code != exitOK || !strings.Contains(out.String(), "duplicate blocks adopted at activation") {
		t.Fatalf("simulate with adoption: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if code := run([]string{"conform", alog}, &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), alog+":1:") || !strings.Contains(errOut.String(), "adopt_canonical_blocks") {
		t.Fatalf("conform of an adopting run's log: exit %d\n%s%s", code, out.String(), errOut.String())
	}
}
