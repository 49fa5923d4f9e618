package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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
// clock: their bug needs no fault, or faults live strikes where the plan
// aims them whatever the clock (an abort aimed at the phase after the
// destination reported its outcome; a delay and the abort whose command
// it slows, aimed at one phase in that order; a transfer failure or a
// hang, which strike the transfer once it runs; an abort aimed at the
// other side's phase, after_side, struck before the peer's fact that the
// finished side's kept machine then takes: TestFaultPlan_AfterSide), and
// deadlines live keeps with slack either way (late-peer-cancel-fails-done's
// facts slowed to 2 s, so that the reader's completion reaches the
// source long after the abort aimed at the destination's outcome), or a
// peer pinned for live (bootstrap-as-readiness: the destination aborted
// right after the fact of the step that sends DestinationReserved, so
// that its reservation, never made, cannot be placed before the source's
// dispatch; report-before-release-applied: the destination aborted right
// after it logs stored, so that none of its later facts is placed before
// the source's ReaderCompleted: TestPlan_PinsThePeerForLive), or a loop
// (rearm-reservation: on the clock its plan breaks a bound on time
// first and EventuallyDrained going on past it, simulate --keep-going;
// live judges no bound on time, and the run, its deadlines capped at 5 s
// by the plan so that it ends after seconds of silence, ends with the
// destination re-arming its reservation, a loop conform names
// EventuallyDrained: TestDead_LoopThatNeverDrains), or the clock
// (clocked: release-before-activation and release-on-heartbeat, whose
// violation a live run's later facts hide from a judge that orders the
// processes only by their messages, and no abort or restart of the peer
// keeps them out of the logs: the destination's activation, applied late
// by its slowed core, and the hung transfer's failure at the
// destination's health check, both after the source's release. The
// README runs live at the --time-scale that puts them 200 ms of wall
// clock after the release, and has live judge its logs with
// --clock-error 10ms: the processes share one host and so one clock,
// and the judge explains a fact before another process's stamped more
// than 20 ms later). All 19 plans reproduce live; make test runs
// decode-without-reservation and bootstrap-as-readiness live, one of each
// policy, and make test-long (CI runs it) all 19. Five live
// rejections may give no violating trace of their own (noRepro, what the
// reproduction of the live rejection says instead: in some runs the
// attempt's explanation does not replay in its world as a configuration
// file gives it; a fact after the attempt's end,
// late-peer-cancel-fails-done's cancel taken by the finished destination,
// is refused before any state is judged; for prefill-after-early-outcome
// the search along the explanation does not take the fact's step for the
// rejection's, though the step after it breaks the invariant; for
// rearm-reservation, EventuallyDrained is no step's invariant: the
// explanation is written, and check --from-trace on it finds the loop);
// their logs are rejected with the invariant all the same. Judged with
// the clock error, release-before-activation's logs are rejected at the
// destination's late activation, which the step that would explain it,
// the slowed core applying it after the source's release, breaks
// ReleaseNeedsReaderAck; the explanation the rejection writes is the
// furthest, which took the activation at once, so it has no violating
// step.
// prefill-after-early-outcome's violating step is a late fact to the
// finished source, in the model a tie with the source's Cancelled
// reaching the destination: on a loaded machine the destination's end
// may be logged first, and the judge then reads the same step as one
// after the attempt's end (loaded: AttemptIsolation, which its README
// names too). push-deadline-without-fence's destination frees its
// reservation on the source's cancel, after the source released the
// pins of the hung transfer: conform names the source's step
// (SourcePinnedUntilRead), not the destination's release, which no
// explanation reaches before that step (TestDead_PassOverOnlyATakeableFact).
// withdraw-noop-leaks-reservation's and report-before-release-applied's
// outcome, by itself, leaves a finished side holding what it reserved or
// pinned (Quiescence), but the step of the tables that logs it breaks the
// trace's invariant first, and the judge names it as check does
// (TestDead_StepInvariantBeforeQuiescence).
func TestCheck_ReproOnTheClockAndLive(t *testing.T) {
	const noTrace, noStep = "no trace of the rejection", "no violating step"
	for _, tc := range []struct {
		variant, run, inv, fault string
		noRepro, loaded          string
		clocked                  bool
	}{
		{"decode-without-reservation", "vllm", "TransferNeedsReservation", "", "", "", false},
		{"late-cancel-standin", "vllm", "ExactlyOnceRelease", `{"at_ms":0,"kind":"abort","request":0,"side":"destination","after":"outcome_reported"}`, "", "", false},
		{"ownership-at-terminal-token", "vllm", "RouterCleanup", "", "", "", false},
		{"publish-before-compute", "vllm", "IndexMatchesCache", "", "", "", false},
		{"pull-failed-reports-success", "vllm", "OutcomeTruthful", `"kind":"transfer_failure","request":0}`, "", "", false},
		{"release-on-scheduler-finish", "vllm", "SourcePinnedUntilRead", "", "", "", false},
		{"cancel-noop-leaks-held-source", "vllm", "RouterCleanup", `{"at_ms":0,"kind":"delay","request":0,"side":"source","after":"prefill_dispatched"}
{"at_ms":0,"kind":"abort","request":0,"side":"source","after":"prefill_dispatched"}`, "", "", false},
		{"expired-lease-reports-release", "vllm", "OutcomeTruthful", `{"at_ms":0,"kind":"abort","request":1,"side":"source","after":"prefill_dispatched"}`, "", "", false},
		{"pull-deadline-without-fence", "vllm", "DestinationHeldWhileWritten", `"kind":"hang","request":0}`, noTrace, "", false},
		{"push-deadline-without-fence", "sglang", "SourcePinnedUntilRead", `"kind":"hang","request":0}`, "", "", false},
		{"bootstrap-as-readiness", "sglang", "DestinationFirstGate", `{"at_ms":0,"kind":"abort","request":0,"side":"destination","after":"request_accepted"}`, "", "", false},
		{"late-peer-cancel-fails-done", "vllm", "AttemptIsolation", `{"at_ms":0,"kind":"abort","request":0,"side":"source","after":"outcome_reported","after_side":"destination"}`, noTrace, "", false},
		{"pin-ignores-ack-and-lease", "vllm", "Quiescence", `{"at_ms":0,"kind":"abort","request":1,"side":"source","after":"prefill_dispatched"}`, noTrace, "", false},
		{"withdraw-noop-leaks-reservation", "vllm", "InFlightAccounting", `{"at_ms":0,"kind":"delay","request":0,"side":"destination","after":"request_accepted"}
{"at_ms":0,"kind":"abort","request":0,"side":"destination","after":"request_accepted"}`, "", "", false},
		{"report-before-release-applied", "vllm", "RouterCleanup", `{"at_ms":0,"kind":"delay","request":0,"side":"source","after":"stored"}
{"at_ms":0,"kind":"abort","request":0,"side":"destination","after":"stored"}`, "", "", false},
		{"prefill-after-early-outcome", "sglang", "ExactlyOnceRelease", `{"at_ms":0,"kind":"abort","request":0,"side":"source","after":"registered","after_side":"destination"}`, noStep, "AttemptIsolation", false},
		{"rearm-reservation", "sglang", "EventuallyDrained", `{"at_ms":0,"kind":"abort","request":0,"side":"source","after":"request_accepted","after_side":"destination"}`, noStep, "", false},
		{"release-on-heartbeat", "vllm", "SourcePinnedUntilRead", `"kind":"hang","request":0}`, "", "", true},
		{"release-before-activation", "vllm", "ReleaseNeedsReaderAck", `{"at_ms":0,"kind":"delay","request":0,"side":"destination","after":"transfer_started"}`, noStep, "", true},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			if tc.variant != "decode-without-reservation" && tc.variant != "bootstrap-as-readiness" {
				longOnly(t, "the live reproduction of every variant, real processes at each time scale a loaded machine tries; one of each policy runs here")
			}
			if testing.Short() && tc.fault == "" && tc.variant != "decode-without-reservation" {
				t.Skip("one variant without a fault is enough in -short")
			}
			if testing.Short() && tc.variant == "pin-ignores-ack-and-lease" {
				t.Skip("its lease of 0.3 s, 3 ms of wall clock, absorbs little lateness: a loaded machine runs it again at larger time scales, the longest of these")
			}
			if testing.Short() && tc.variant == "release-before-activation" {
				t.Skip("one clocked variant is enough in -short")
			}
			if testing.Short() && tc.inv == "EventuallyDrained" {
				t.Skip("a loop's live run ends only after seconds of silence, at each time scale a loaded machine tries")
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
			// A loop breaks a bound on time first, and the invariant
			// only as the run goes on past it.
			loop := tc.inv == "EventuallyDrained"
			sim := append([]string{"simulate"}, plan...)
			if loop {
				sim = append(sim, "--keep-going")
			}
			code, out, errOut := runCLI(t, sim...)
			if code != exitViolation || !loop && !strings.Contains(out, "VIOLATION "+tc.inv+" at ") ||
				loop && !regexp.MustCompile(`kept going past the first violation \(below\): \d+ violations \([^)]*`+tc.inv+` \d`).MatchString(out) {
				t.Fatalf("simulate on the plan: exit %d\n%s%s", code, out, errOut)
			}
			liveDir := t.TempDir()
			if tc.clocked {
				code, out, errOut = clockedLive(t, dir, plan, liveDir)
			} else {
				code, out, errOut = runCLI(t, append([]string{"live", "--out", t.TempDir(), "--repro", liveDir}, plan...)...)
			}
			named := strings.Contains(errOut, "reproduction of "+tc.inv+" written to "+liveDir)
			if tc.noRepro != "" && !named {
				named = (strings.Contains(out, "\n  invariant: "+tc.inv+"\n") || strings.Contains(out, "a step that would explain it breaks "+tc.inv+": ")) && strings.Contains(errOut, tc.noRepro)
			}
			if tc.loaded != "" && !named {
				named = strings.Contains(out, "\n  invariant: "+tc.loaded+"\n")
				t.Logf("live on the plan named %s (its peer's end logged first): %v", tc.loaded, named)
			}
			if code != exitViolation || !strings.Contains(out, "verdict: rejected") || !named {
				t.Fatalf("live on the plan: exit %d\n%s%s", code, out, errOut)
			}
			if loop {
				// The live rejection's explanation ends in the loop: a
				// search from there finds it.
				code, out, errOut = runCLI(t, "check", "--from-trace", filepath.Join(liveDir, "trace.jsonl"), "--timing=false")
				if code != exitViolation || !strings.Contains(out, "VIOLATION EventuallyDrained") {
					t.Fatalf("check --from-trace on the live rejection's trace: exit %d\n%s%s", code, out, errOut)
				}
			}
		})
	}
}

// clockedLive runs a clocked plan live as the README in dir says (at
// its --time-scale, its logs judged with its --clock-error), with
// --repro into liveDir: live's exit and report.
func clockedLive(t *testing.T, dir string, plan []string, liveDir string) (int, string, string) {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`\n    handoffcheck live --config sim\.json [^\n]*?(--time-scale (\S+) )?--clock-error (\S+)\n`).FindSubmatch(readme)
	if m == nil {
		t.Fatalf("the README shows no clocked live plan:\n%s", readme)
	}
	args := append([]string{"live", "--out", t.TempDir(), "--repro", liveDir}, plan...)
	if len(m[2]) > 0 {
		args = append(args, "--time-scale", string(m[2]))
	}
	return runCLI(t, append(args, "--clock-error", string(m[3]))...)
}

// TestFaultPlan_AfterSide: a fault aimed at the other side's fact
// (after_side). check --repro aims prefill-after-early-outcome's abort at
// the source right after the destination logs registered, the step whose
// DestinationReserved the aborted source then takes; simulate breaks
// ExactlyOnceRelease on that plan. Live strikes the abort at the same
// point every run: the coordinator marks the source before it relays the
// fact, so the source aborts without dispatching its prefill; its worker
// keeps the finished side's machine until the attempt ends on both
// sides, and that machine takes the late fact as the model's does: the
// variant's row dispatches the prefill after the outcome, and the source
// holds its compute for good (the leak check names it; the judge's
// verdict, TestCheck_ReproOnTheClockAndLive). The README says so. A fact
// the named side never logs is refused with the plan's line, exit 2, in
// both.
func TestFaultPlan_AfterSide(t *testing.T) {
	variant := "../../testdata/variants/prefill-after-early-outcome.json"
	dir := t.TempDir()
	code, _, errOut := runCLI(t, "check", "--config", "../../testdata/configs/two-handoffs-faults.json", "--spec", variant, "--run", "sglang", "--timing=false", "--repro", dir)
	if code != exitViolation {
		t.Fatalf("check --repro: exit %d\n%s", code, errOut)
	}
	faults, err := os.ReadFile(filepath.Join(dir, "faults.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"at_ms":0,"kind":"abort","request":0,"side":"source","after":"registered","after_side":"destination"}`
	if !strings.Contains(string(faults), want) {
		t.Fatalf("the plan's faults:\n%s\nwant %s", faults, want)
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if flat := strings.Join(strings.Fields(string(readme)), " "); !strings.Contains(flat, "Its step delivers DestinationReserved to the source after that side reported its outcome holding nothing: a live worker keeps a finished side's machine") {
		t.Fatalf("the README does not say the late fact reaches the kept machine:\n%s", readme)
	}
	plan := []string{"--config", filepath.Join(dir, "sim.json"), "--workload", filepath.Join(dir, "workload.jsonl"), "--faults", filepath.Join(dir, "faults.jsonl"), "--spec", variant}
	code, out, errOut := runCLI(t, append([]string{"simulate"}, plan...)...)
	if code != exitViolation || !strings.Contains(out, "VIOLATION ExactlyOnceRelease at ") {
		t.Fatalf("simulate on the plan: exit %d\n%s%s", code, out, errOut)
	}
	logs := t.TempDir()
	code, out, errOut = runCLI(t, append([]string{"live", "--out", logs, "--no-conform"}, plan...)...)
	if code != exitViolation || !strings.Contains(out, "faults: 1 of the plan struck") || !strings.Contains(out, "leak check FAILED: worker 0 holds [active 3 open attempts 1]") {
		t.Fatalf("live on the plan: exit %d\n%s%s", code, out, errOut)
	}
	// The mark reaches the source ahead of the destination's fact, so the
	// source aborts before it takes anything of the destination's; the
	// fact, relayed before the attempt could end, reaches its kept
	// machine however late either side is.
	src, err := os.ReadFile(filepath.Join(logs, "prefill-0.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, line := range strings.Split(strings.TrimSpace(string(src)), "\n")[1:] {
		var e struct{ Kind string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("the source's log: %v\n%s", err, src)
		}
		kinds = append(kinds, e.Kind)
	}
	if want := []string{"request_accepted", "aborted", "outcome_reported", "prefill_dispatched"}; !slices.Equal(kinds, want) {
		t.Fatalf("the source's log: kinds %v, want %v (aborted before it takes the destination's fact, which the variant's row then acts on)\n%s", kinds, want, src)
	}
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"format":"handoffcheck.faults/v1"}`+"\n"+`{"at_ms":0,"kind":"abort","request":0,"side":"source","after":"reserved"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plan[5] = bad
	for _, cmd := range []string{"simulate", "live"} {
		code, _, errOut = runCLI(t, append([]string{cmd}, plan...)...)
		if code != exitUsage || !strings.Contains(errOut, bad+`:2: sim: input does not fit the configuration: after "reserved", but the source never logs it; want a fact the source logs, or after_side "destination"`) {
			t.Fatalf("%s on a fact the side never logs: exit %d\n%s", cmd, code, errOut)
		}
	}
}
