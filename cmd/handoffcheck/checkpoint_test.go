package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const commandsCfg = "../../testdata/configs/commands.json"

// uninterrupted is the reference a resumed run must equal: the JSON
// report without measured figures.
func uninterrupted(t *testing.T) string {
	t.Helper()
	code, out, errOut := runCLI(t, "check", "--config", commandsCfg, "--liveness=false", "--json", "--timing=false")
	if code != exitOK {
		t.Fatalf("uninterrupted: exit %d: %s", code, errOut)
	}
	return out
}

// checkpointOf reads a run's current checkpoint.json, if any.
func checkpointOf(dir, run string) (map[string]any, bool) {
	data, err := os.ReadFile(filepath.Join(dir, run, "current", "checkpoint.json"))
	if err != nil {
		return nil, false
	}
	var m map[string]any
	if json.Unmarshal(data, &m) != nil {
		return nil, false
	}
	return m, true
}

// A run killed with SIGKILL part of the way through resumes from its last
// checkpoint to the same report as a run never stopped: the same verdict,
// counts, depth and coverage, for every run of the configuration, on
// another number of workers.
func TestCLI_CheckpointKilledAndResumed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	want := uninterrupted(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "check", "--config", commandsCfg, "--checkpoint", dir, "--checkpoint-every", "100ms", "--workers", "1", "--json")
	cmd.Env = append(os.Environ(), "HANDOFFCHECK_CLI=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it once the second run (sglang) has a checkpoint part of the
	// way through: the first is then finished, the second under way and
	// the last two not begun.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if m, ok := checkpointOf(dir, "sglang"); ok && m["finished"] == false {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("no checkpoint of the sglang run within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the run was not killed by SIGKILL but ended: %v", err)
	}
	m, _ := checkpointOf(dir, "sglang")
	if m["done"].(float64) == 0 && m["next"].(float64) == 0 && m["depth"].(float64) == 0 {
		t.Fatalf("the checkpoint is of the start of the run: %v", m)
	}
	if _, ok := checkpointOf(dir, "trtllm"); ok {
		t.Fatalf("a run not begun when the process was killed has a checkpoint")
	}
	code, got, errOut := runCLI(t, "check", "--config", commandsCfg, "--resume", dir, "--workers", "2", "--json", "--timing=false")
	if code != exitOK {
		t.Fatalf("resume: exit %d: %s", code, errOut)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the resumed run's report differs from the uninterrupted one's (-uninterrupted +resumed):\n%s", diff)
	}
}

// Ctrl-C writes a checkpoint of the run under way, from which the run
// resumes to the uninterrupted report; and the text report says the run
// was resumed and counts the checkpoints written.
func TestCLI_CheckpointOnInterrupt(t *testing.T) {
	args := []string{"check", "--config", commandsCfg, "--run", "sglang", "--liveness=false", "--json", "--timing=false"}
	began := time.Now()
	code, want, errOut := runCLI(t, args...)
	took := time.Since(began)
	if code != exitOK {
		t.Fatalf("uninterrupted: exit %d: %s", code, errOut)
	}
	dir := t.TempDir()
	// Interrupted two fifths of the way through, on this machine.
	ctx, cancel := context.WithTimeout(context.Background(), took*2/5)
	defer cancel()
	code, out, errOut := runCLIContext(ctx, "check", "--config", commandsCfg, "--run", "sglang", "--checkpoint", dir, "--checkpoint-every", "1h")
	if code != exitInterrupted {
		t.Fatalf("interrupted: exit %d: %s%s", code, out, errOut)
	}
	if m, ok := checkpointOf(dir, "sglang"); !ok || m["finished"] != false || !strings.Contains(out, "\n  checkpoints written: 1\n") {
		t.Fatalf("no checkpoint of the interrupted run (%v):\n%s", m, out)
	}
	code, got, errOut := runCLI(t, append(args[:len(args)-2:len(args)-2], "--resume", dir, "--json", "--timing=false")...)
	if code != exitOK {
		t.Fatalf("resume: exit %d: %s", code, errOut)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the resumed run's report differs from the uninterrupted one's (-uninterrupted +resumed):\n%s", diff)
	}
	_, text, _ := runCLI(t, "check", "--config", commandsCfg, "--run", "sglang", "--resume", dir)
	if !strings.Contains(text, "\n  resumed from a checkpoint\n") {
		t.Fatalf("the text report does not say the run was resumed:\n%s", text)
	}
}

// What a checkpoint cannot resume is refused before any run starts, with
// exit 2: another configuration's checkpoint, a damaged file, and flags a
// checkpoint does not keep.
func TestCLI_CheckpointRefusals(t *testing.T) {
	dir := t.TempDir()
	if code, _, errOut := runCLI(t, "check", "--config", small, "--run", "vllm", "--checkpoint", dir); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"check", "--config", commandsCfg, "--run", "vllm", "--resume", dir}, "is a checkpoint of another search"},
		{[]string{"check", "--config", small, "--run", "vllm", "--resume", dir, "--bitstate", "1MiB"}, "is a checkpoint of another search"},
		{[]string{"check", "--config", small, "--checkpoint", dir, "--liveness"}, "take neither --exact nor --liveness"},
		{[]string{"check", "--config", small, "--resume", dir, "--exact"}, "take neither --exact nor --liveness"},
		{[]string{"check", "--config", small, "--checkpoint-every", "1m"}, "--checkpoint-every needs --checkpoint"},
	}
	for _, tc := range cases {
		code, out, errOut := runCLI(t, tc.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
	// --liveness=false says what these searches do anyway: it is taken.
	for _, args := range [][]string{
		{"check", "--config", small, "--run", "vllm", "--resume", dir, "--liveness=false"},
		{"check", "--config", small, "--run", "vllm", "--checkpoint", t.TempDir(), "--liveness=false"},
		{"check", "--config", small, "--run", "vllm", "--bitstate", "1MiB", "--liveness=false"},
	} {
		if code, _, errOut := runCLI(t, args...); code != exitOK {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
	}
	links := filepath.Join(dir, "vllm", "current", "links.bin")
	data, err := os.ReadFile(links)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	os.WriteFile(links, data, 0o644)
	code, out, errOut := runCLI(t, "check", "--config", small, "--run", "vllm", "--resume", dir)
	if code != exitUsage || out != "" || !strings.Contains(errOut, "links.bin is damaged") {
		t.Errorf("a damaged checkpoint: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// An edited checkpoint.json is refused with exit 2 before any run starts:
// its counts and positions are covered by a content hash it records, as
// the CRCs cover the other files. Without it, a changed count resumed to
// another search's report with exit 0.
func TestCLI_CheckpointEditedRefused(t *testing.T) {
	dir := t.TempDir()
	if code, _, errOut := runCLI(t, "check", "--config", small, "--run", "vllm", "--checkpoint", dir); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	path := filepath.Join(dir, "vllm", "current", "checkpoint.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // fingerprints and CRCs are 64-bit: no float64 on the way
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	// The same file laid out otherwise resumes: the hash is of the values.
	again, _ := json.Marshal(m)
	if err := os.WriteFile(path, again, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "check", "--config", small, "--run", "vllm", "--resume", dir); code != exitOK {
		t.Fatalf("the checkpoint re-encoded: exit %d: %s", code, errOut)
	}
	n, _ := m["states"].(json.Number).Int64()
	m["states"] = n - 1
	edited, _ := json.Marshal(m)
	if err := os.WriteFile(path, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "check", "--config", small, "--run", "vllm", "--resume", dir)
	if code != exitUsage || out != "" || !strings.Contains(errOut, path+" was edited or damaged") {
		t.Fatalf("an edited checkpoint: exit %d, stdout %q, stderr %q; want exit 2 saying it was edited", code, out, errOut)
	}
}

// --resume naming a regular file or nothing is refused: it used to start
// every run afresh without a word. --checkpoint into a file, and
// --trace-out into a folder that does not exist, are refused before the
// search rather than after it.
func TestCLI_CheckOutputsCheckedUpFront(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "plain")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"check", "--config", small, "--resume", file}, "--resume " + file + ": not a directory; want the --checkpoint directory of an earlier run"},
		{[]string{"check", "--config", small, "--resume", filepath.Join(dir, "none")}, "not a directory"},
		{[]string{"check", "--config", small, "--checkpoint", filepath.Join(file, "ck")}, "--checkpoint: "},
		{[]string{"check", "--config", small, "--trace-out", filepath.Join(dir, "missing", "ce.jsonl")},
			"--trace-out: cannot write " + filepath.Join(dir, "missing", "ce.jsonl") + ": folder " + filepath.Join(dir, "missing") + " does not exist"},
		{[]string{"check", "--config", small, "--trace-out", dir}, "is a directory; want a file name"},
	} {
		code, out, errOut := runCLI(t, tc.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
	// A writable --trace-out is left as it was when there is nothing to write.
	ce := filepath.Join(dir, "ce.jsonl")
	if code, _, errOut := runCLI(t, "check", "--config", small, "--run", "vllm", "--trace-out", ce); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(ce); !os.IsNotExist(err) {
		t.Errorf("--trace-out without a counterexample left a file: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".handoffcheck-probe-*")); len(left) > 0 {
		t.Errorf("the writability probe was left behind: %v", left)
	}
}
