package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
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

// TestConform_ReproThreeForms: each shipped invalid log that conform
// --repro reproduces gives a trace replay stops on the rejection's
// invariant, a plan simulate breaks it with, and the same plan run live,
// whose logs conform rejects with it; where a form cannot be made, the
// README says why and the command's exit is still the rejection's.
// Pages never returned breaks a bound on time first on the clock (the
// side that gave up owes its pages back within it): simulate
// --keep-going breaks Quiescence on the plan once nothing is left to
// happen for the request, and no live plan is derived (a live run's logs
// are judged by their first violation).
func TestConform_ReproThreeForms(t *testing.T) {
	for _, tc := range []struct {
		log, inv string
		// sim: the plan on the clock breaks inv; live: the invariants
		// conform may name for a live run of it, the first the one it
		// names on an idle machine (none: it explains the logs); why:
		// what the README says of a form that cannot be made as it is.
		sim  bool
		live []string
		why  string
	}{
		{"stored-before-activation", "NoStoredBeforeActivation", true, []string{"NoStoredBeforeActivation"}, ""},
		// These two plans slow a worker's core (a delay aimed at a
		// phase). Run live they are rejected, the first naming
		// ExactlyOnceRelease (the judge, free to apply the booking's
		// release at once, breaks it in the step that reports success),
		// the second SourcePinnedUntilRead (no message ties the release
		// to the transfer, so the judge places it before the reads). On
		// a loaded machine the slowed command may land after the
		// source was cancelled, in a state the tables give nothing to
		// take: the attempt is stuck, the run ends on the invariant the
		// simulator names for it (the README says so), and conform
		// judges its logs, naming the invariant the order they show
		// breaks first.
		{"success-reported-for-a-failed-transfer", "OutcomeTruthful", true, []string{"ExactlyOnceRelease", "OutcomeTruthful", "Quiescence", "BoundedReclaim", "BoundedGiveUp"}, slowCoreNote},
		{"source-released-before-the-reader-completed", "ReleaseNeedsReaderAck", true, []string{"SourcePinnedUntilRead", "ReleaseNeedsReaderAck", "Quiescence", "BoundedReclaim", "BoundedGiveUp"}, slowCoreNote},
		// The dispatch waits for nothing from the decode worker: the
		// judge orders the reservation first.
		{"prefill-dispatched-before-the-destination-reserved", "DestinationFirstGate", true, nil, orderNote},
		{"pages-never-returned-after-a-failed-transfer", "Quiescence", true, nil,
			"breaks BoundedGiveUp first, at 74.586 ms of virtual time on request 0: a bound on time, whose request goes on; going on past it (`--keep-going`), the request breaks Quiescence once nothing is left to happen for it"},
	} {
		t.Run(tc.log, func(t *testing.T) {
			if testing.Short() && tc.log != "stored-before-activation" && tc.log != "pages-never-returned-after-a-failed-transfer" {
				t.Skip("one live run is enough in -short")
			}
			log := filepath.Join(logsDir, "invalid", tc.log+".jsonl")
			dir := t.TempDir()
			code, _, errOut := runCLI(t, "conform", "--repro", dir, log)
			if code != exitViolation || !strings.Contains(errOut, "reproduction of "+tc.inv+" written to "+dir) {
				t.Fatalf("conform --repro: exit %d\n%s", code, errOut)
			}
			code, out, _ := runCLI(t, "replay", filepath.Join(dir, "trace.jsonl"))
			if code != exitViolation || !strings.Contains(out, "VIOLATION "+tc.inv) {
				t.Fatalf("replay: exit %d\n%s", code, out)
			}
			readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
			if err != nil {
				t.Fatal(err)
			}
			if flat := strings.Join(strings.Fields(string(readme)), " "); tc.why != "" && !strings.Contains(flat, tc.why) {
				t.Errorf("the README does not say why a form cannot be made (%q):\n%s", tc.why, readme)
			}
			plan := []string{"--config", filepath.Join(dir, "sim.json"), "--workload", filepath.Join(dir, "workload.jsonl"), "--faults", filepath.Join(dir, "faults.jsonl"), "--spec", filepath.Join(dir, "spec.json")}
			if !tc.sim {
				if _, err := os.Stat(filepath.Join(dir, "sim.json")); !os.IsNotExist(err) {
					t.Fatalf("a plan on the clock that does not reach %s was written: %v", tc.inv, err)
				}
				return
			}
			if strings.Contains(string(readme), "going on past it (`--keep-going`)") {
				code, out, errOut = runCLI(t, append([]string{"simulate", "--keep-going"}, plan...)...)
				if code != exitViolation || !regexp.MustCompile(`VIOLATION (BoundedGiveUp|BoundedReclaim) at `).MatchString(out) ||
					!regexp.MustCompile(`kept going past the first violation \(below\): \d+ violations \(.*`+tc.inv+` 1`).MatchString(out) {
					t.Fatalf("simulate --keep-going on the plan: exit %d\n%s%s", code, out, errOut)
				}
				if !strings.Contains(string(readme), "**Live.** No live plan is derived from these steps: on the clock they break a bound on time first") {
					t.Fatalf("the README does not say why no live plan is derived:\n%s", readme)
				}
				return
			}
			code, out, errOut = runCLI(t, append([]string{"simulate"}, plan...)...)
			if code != exitViolation || !strings.Contains(out, "VIOLATION "+tc.inv+" at ") {
				t.Fatalf("simulate on the plan: exit %d\n%s%s", code, out, errOut)
			}
			liveDir := t.TempDir()
			code, out, errOut = runCLI(t, append([]string{"live", "--out", t.TempDir(), "--repro", liveDir}, plan...)...)
			if len(tc.live) == 0 {
				if code != exitOK || !strings.Contains(out, "verdict: explained") {
					t.Fatalf("live on the plan, whose logs cannot show %s: exit %d\n%s%s", tc.inv, code, out, errOut)
				}
				return
			}
			named := slices.IndexFunc(tc.live, func(inv string) bool {
				return strings.Contains(errOut, "reproduction of "+inv+" written to "+liveDir)
			})
			if code != exitViolation || !strings.Contains(out, "verdict: rejected") || named < 0 {
				t.Fatalf("live on the plan: exit %d, want a rejection naming one of %v\n%s%s", code, tc.live, out, errOut)
			}
			if strings.Contains(out, "STALL") && !regexp.MustCompile(`STALL: VIOLATION (Quiescence|BoundedReclaim|BoundedGiveUp): attempt r0: `).MatchString(out) {
				t.Fatalf("live on the plan stopped on a stall that names no stuck attempt:\n%s", out)
			}
		})
	}
}

// slowCoreNote is what a reproduced rejection's README says of a plan
// that slows a core, run live.
const slowCoreNote = "The plan slows a core: where its late command leaves a side in a state the tables give nothing to take, the attempt is stuck, and the live run ends on the invariant the simulator names for a stuck side (Quiescence, BoundedReclaim or BoundedGiveUp), naming the attempt and its sides"

// orderNote is what a reproduced rejection's README says of the order
// live logs carry.
const orderNote = "Where the violation rests on the order of two processes' steps that no message ties (under these tables, a step one side takes without waiting for the other), the judge finds an order that breaks nothing, or one in which another invariant breaks first, and names that one."
