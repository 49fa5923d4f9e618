package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const (
	propsDir    = "../../testdata/props/"
	smallConfig = "../../testdata/configs/small.json"
)

// A bad properties file is refused before any search: exit 2, one line at
// the file, line and column of the problem, saying what was expected.
func TestProps_BadFileRefused(t *testing.T) {
	code, out, errOut := runCLI(t, "check", "--config", smallConfig, "--props", propsDir+"typo.props")
	want := "handoffcheck check: " + propsDir + "typo.props:3:66: undefined field 'sourceterminal'; want a field of view/v1 (docs/props.md lists each)\n"
	if code != exitUsage || out != "" || errOut != want {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 and %q", code, out, errOut, want)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bounded.props")
	if err := os.WriteFile(bad, []byte("handoffcheck.props/v1\nleads_to A per handoff: h.cancelled ~> h.source_terminal within 20ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"check", "--config", smallConfig, "--props", bad}, {"replay", "--props", bad, "x.jsonl"}, {"explore", "--props", bad}} {
		code, _, errOut = runCLI(t, cmd...)
		if code != exitUsage || !strings.Contains(errOut, bad+":2:65: leads_to A within 20ms: "+cmd[0]+" has no clock") {
			t.Errorf("%v: exit %d, stderr %q", cmd, code, errOut)
		}
	}
	unbounded := filepath.Join(dir, "fair.props")
	if err := os.WriteFile(unbounded, []byte("handoffcheck.props/v1\nleads_to A per handoff: h.cancelled ~> h.source_terminal\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI(t, "simulate", "--props", unbounded)
	if code != exitUsage || !strings.Contains(errOut, unbounded+":2:1: leads_to A without within is judged under weak fairness over every run, which simulate does not do") {
		t.Errorf("simulate: exit %d, stderr %q", code, errOut)
	}
}

// The shipped property that sees release-before-activation's bug finds it,
// one step before the built-in ReleaseNeedsReaderAck would, and holds on
// the built-in tables.
func TestProps_FindsVariantBug(t *testing.T) {
	args := []string{"check", "--config", "../../testdata/configs/commands.json", "--run", "vllm", "--timing=false",
		"--props", propsDir + "release-before-activation.props"}
	code, out, _ := runCLI(t, append(args, "--spec", "../../testdata/variants/release-before-activation.json")...)
	if code != exitViolation || !strings.Contains(out, "run vllm (source-first, engine vllm): VIOLATION AckAfterActivationApplied\n") ||
		!strings.Contains(out, "shortest trace (6 steps):") || !strings.Contains(out, "always AckAfterActivationApplied per handoff: VIOLATED") {
		t.Fatalf("variant: exit %d, want 1 and the property violated in 6 steps:\n%s", code, out)
	}
	code, out, _ = runCLI(t, args...)
	if code != exitOK || !strings.Contains(out, "always AckAfterActivationApplied per handoff: holds\n      antecedent held") {
		t.Fatalf("built-in tables: exit %d, want 0 and the property holding, not vacuously:\n%s", code, out)
	}
}

// A sometimes property's witness is written as a trace file that replay
// accepts, and replay --props reports the step where the property holds;
// the JSON report carries every verdict.
func TestProps_WitnessReplays(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runCLI(t, "check", "--config", smallConfig, "--run", "vllm", "--timing=false", "--json",
		"--props", propsDir+"questions.props", "--witness-dir", dir)
	// WaitsPastReservationDeadline is not reached on a source-first run:
	// a sometimes property not reached fails the check.
	if code != exitViolation {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	var rep struct {
		Properties propsReport `json:"properties"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	got := map[string]propVerdict{}
	for _, v := range rep.Properties.Runs[0].Properties {
		got[v.Name] = v
	}
	if v := got["ActivatedKVKept"]; v.Verdict != "holds" || !v.AntecedentHeld || v.Vacuous {
		t.Errorf("ActivatedKVKept: %+v", v)
	}
	if v := got["WaitsPastReservationDeadline"]; v.Verdict != "not-reached" {
		t.Errorf("WaitsPastReservationDeadline: %+v, want not-reached", v)
	}
	w := got["PinnedAfterDecode"]
	if w.Verdict != "reached" || w.WitnessSteps != 7 || w.WitnessFile != filepath.Join(dir, "vllm-PinnedAfterDecode.jsonl") {
		t.Fatalf("PinnedAfterDecode: %+v", w)
	}
	code, out, errOut = runCLI(t, "replay", w.WitnessFile)
	if code != exitOK || !strings.HasSuffix(out, "\nno violation\n") {
		t.Fatalf("replay: exit %d, stdout:\n%s\nstderr %s", code, out, errOut)
	}
	code, out, _ = runCLI(t, "replay", "--props", propsDir+"questions.props", w.WitnessFile)
	if code != exitOK || !strings.Contains(out, "  sometimes PinnedAfterDecode reached at step 7\n") ||
		!strings.Contains(out, "sometimes WaitsPastReservationDeadline: not reached on this trace\n") {
		t.Fatalf("replay --props: exit %d, stdout:\n%s", code, out)
	}
}

// A sometimes property that no state satisfies fails check (exit 1), and
// says NOT DECIDED when the search was bounded.
func TestProps_NotReachedAndNotDecided(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "never.props")
	if err := os.WriteFile(file, []byte("handoffcheck.props/v1\nsometimes Tainted per handoff: h.tainted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "check", "--config", smallConfig, "--run", "vllm", "--timing=false", "--props", file)
	if code != exitViolation || !strings.Contains(out, "sometimes Tainted per handoff: NOT REACHED (complete search: no reachable state satisfies it)\n") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	code, out, _ = runCLI(t, "check", "--config", smallConfig, "--run", "vllm", "--timing=false", "--max-depth", "3", "--props", file)
	if code != exitOK || !strings.Contains(out, "sometimes Tainted per handoff: NOT DECIDED (the search was bounded: stopped at depth 3 (--max-depth))\n") {
		t.Fatalf("bounded: exit %d:\n%s", code, out)
	}
}

// The same always property is judged by the walks, through the same hook.
func TestProps_Walks(t *testing.T) {
	code, out, _ := runCLI(t, "check", "--config", "../../testdata/configs/commands.json", "--run", "vllm", "--walks", "200",
		"--spec", "../../testdata/variants/release-before-activation.json", "--props", propsDir+"release-before-activation.props")
	if code != exitViolation || !strings.Contains(out, "AckAfterActivationApplied") || !strings.Contains(out, "always AckAfterActivationApplied per handoff: VIOLATED") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// simulate judges the same always property at every simulated step: the
// variant breaks it on the default configuration and workload, the
// built-in tables keep it; a sometimes property is refused at its line.
func TestProps_Simulate(t *testing.T) {
	file := propsDir + "release-before-activation.props"
	code, out, _ := runCLI(t, "simulate", "--spec", "../../testdata/variants/release-before-activation.json", "--props", file)
	if code != exitViolation || !strings.Contains(out, "VIOLATION AckAfterActivationApplied at ") {
		t.Fatalf("variant: exit %d:\n%s", code, out)
	}
	if code, out, _ = runCLI(t, "simulate", "--props", file); code != exitOK {
		t.Fatalf("built-in tables: exit %d:\n%s", code, out)
	}
	code, out, _ = runCLI(t, "simulate", "--props", propsDir+"questions.props")
	if code != exitOK || !strings.Contains(out, "  sometimes PinnedAfterDecode per handoff: NOT REACHED (in this run; one run's not reached is no proof") ||
		!strings.Contains(out, "  always ActivatedKVKept per handoff: NOT VIOLATED (in this run)\n    antecedent held, first at ") {
		t.Fatalf("sometimes and vacuity: exit %d:\n%s", code, out)
	}
}

// The timed question on the built-in tables: simulate judges it on the
// clock, and conform, on the simulator's log of the same run, finds the
// same obligations met, the longest after the same wait, and P first
// held at the same time.
func TestProps_WithinAgrees(t *testing.T) {
	file := propsDir + "questions.clock.props"
	log := filepath.Join(t.TempDir(), "stranded.jsonl")
	code, out, _ := runCLI(t, "simulate", "--config", "../../testdata/sim/stranded.json", "--workload", "../../testdata/sim/stranded.jsonl", "--props", file, "--log", log)
	want := "  leads_to PinnedSourceReleased per handoff within 60s: NOT VIOLATED (in this run: 24 met in time, the longest after 9734.999 ms)\n" +
		"    antecedent held, first at 68.862 ms, "
	if code != exitOK || !strings.Contains(out, want+"request 0 (") {
		t.Fatalf("simulate: exit %d, want %s:\n%s", code, want, out)
	}
	code, out, _ = runCLI(t, "conform", "--props", file, log)
	if code != exitOK || !strings.Contains(out, want+"attempt r0 (") {
		t.Fatalf("conform: exit %d, want %s:\n%s", code, want, out)
	}
}

// A pin held past two lease periods: the variant that ignores the
// reader's acknowledgement while its lease is renewed breaks the timed
// question on a long decode, before any built-in invariant or timed
// property sees it; the built-in tables keep it. conform, on the
// simulator's log of the variant's run, gives the same verdict, and
// refuses the bound on a log without time stamps.
func TestProps_WithinOnTheClock(t *testing.T) {
	// On the simulator's clock, never the wall's: it runs beside the
	// tests that wait (TestCLI_LiveStuckAttemptEnds's silence).
	t.Parallel()
	file := propsDir + "questions.clock.props"
	variant := "../../testdata/variants/pin-ignores-ack-and-lease.json"
	sim := []string{"simulate", "--workload", "../../testdata/sim/long-decode.jsonl", "--props", file}
	code, out, _ := runCLI(t, append(sim, "--spec", variant)...)
	want := "VIOLATION PinnedSourceReleased at 60068.862 ms, request 0: leads_to PinnedSourceReleased within 60s: h.source_hold == \"pinned\" held at 68.862 ms; " +
		"h.source_hold != \"pinned\" did not hold by the deadline 60068.862 ms"
	if code != exitViolation || !strings.Contains(out, want) || !strings.Contains(out, "Pinned --LeaseRenewed--> Pinned") {
		t.Fatalf("variant: exit %d, want 1 and %s:\n%s", code, want, out)
	}
	code, out, _ = runCLI(t, sim...)
	if code != exitOK || !strings.Contains(out, "leads_to PinnedSourceReleased per handoff within 60s: NOT VIOLATED (in this run: 1 met in time") {
		t.Fatalf("built-in tables: exit %d:\n%s", code, out)
	}
	log := filepath.Join(t.TempDir(), "variant.jsonl")
	// Without the property the run goes on until BoundedReclaim stops it,
	// after the deadline: the log holds the time past it.
	code, out, _ = runCLI(t, "simulate", "--workload", "../../testdata/sim/long-decode.jsonl", "--spec", variant, "--log", log)
	if code != exitViolation || !strings.Contains(out, "VIOLATION BoundedReclaim at 80") {
		t.Fatalf("variant without the property: exit %d:\n%s", code, out)
	}
	code, out, _ = runCLI(t, "conform", "--spec", variant, "--props", file, log)
	if code != exitViolation || !strings.Contains(out, "  property: PinnedSourceReleased ("+file+":9)\n  "+strings.TrimPrefix(want, "VIOLATION PinnedSourceReleased at 60068.862 ms, request 0: ")) {
		t.Fatalf("conform: exit %d:\n%s", code, out)
	}
	// The log of the run the property stopped ends before the deadline:
	// judged as a log cut from a running system, the obligation is open
	// and not decided.
	cut := filepath.Join(t.TempDir(), "cut.jsonl")
	if code, out, _ = runCLI(t, append(sim, "--spec", variant, "--log", cut)...); code != exitViolation {
		t.Fatalf("variant with --log: exit %d:\n%s", code, out)
	}
	code, out, _ = runCLI(t, "conform", "--open", "--spec", variant, "--props", file, cut)
	if code != exitOK || !strings.Contains(out, "within 60s: NOT DECIDED (0 met in time, 1 still open when the run ended at 55070.121 ms before their deadline)") {
		t.Fatalf("the cut log: exit %d:\n%s", code, out)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	unstamped := filepath.Join(t.TempDir(), "unstamped.jsonl")
	if err := os.WriteFile(unstamped, regexp.MustCompile(`,"t_us":[0-9]+`).ReplaceAll(data, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, "conform", "--time-scale", "0.01", log)
	if code != exitUsage || !strings.Contains(errOut, "--time-scale scales the time stamps a property's bound is judged on; want --props FILE") {
		t.Fatalf("--time-scale without --props: exit %d, stderr %q", code, errOut)
	}
	// --time-scale divides the time stamps: 1 is the simulator's clock.
	code, out, _ = runCLI(t, "conform", "--spec", variant, "--props", file, "--time-scale", "1", log)
	if code != exitViolation || !strings.Contains(out, "did not hold by the deadline 60068.862 ms") {
		t.Fatalf("--time-scale 1: exit %d:\n%s", code, out)
	}
	// At twice the scale the log's 80 s are 40 s configured: the deadline
	// is not reached, and the log is rejected for what it ends holding.
	code, out, _ = runCLI(t, "conform", "--spec", variant, "--props", file, "--time-scale", "2", log)
	if code != exitViolation || !strings.Contains(out, "  invariant: Quiescence\n") {
		t.Fatalf("--time-scale 2: exit %d:\n%s", code, out)
	}
	code, _, errOut = runCLI(t, "conform", "--spec", variant, "--props", file, unstamped)
	if wantErr := "handoffcheck conform: " + file + ":9:"; code != exitUsage || !strings.HasPrefix(errOut, wantErr) || !strings.Contains(errOut, unstamped+":2 has none (t_us)") {
		t.Fatalf("a log without time stamps: exit %d, stderr %q; want exit 2 and %s...", code, errOut, wantErr)
	}
}

// Combinations whose results would be judged on part of a search are
// refused, not run.
func TestProps_RefusedCombinations(t *testing.T) {
	file := propsDir + "release-before-activation.props"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--walks", "4", "--shard", "0/2"}, "--props with --shard"},
		{[]string{"--checkpoint", t.TempDir(), "--liveness=false"}, "--props judges every state of one search"},
		{[]string{"--walks", "4", "--witness-dir", t.TempDir()}, "--witness-dir writes the witnesses of an exhaustive search"},
	} {
		args := append([]string{"check", "--config", smallConfig, "--props", file}, tc.args...)
		code, _, errOut := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
	code, _, errOut := runCLI(t, "check", "--witness-dir", t.TempDir())
	if code != exitUsage || !strings.Contains(errOut, "give --props") {
		t.Errorf("--witness-dir without --props: exit %d, stderr %q", code, errOut)
	}
}

// conform judges the same always property along every explanation of a
// log: the simulator's log of the variant is rejected at the fact whose
// explanation breaks it, naming it, in text and --json; the built-in
// tables' log of the same run conforms with it; a sometimes property is
// refused at its line.
func TestProps_Conform(t *testing.T) {
	file := propsDir + "release-before-activation.props"
	variant := "../../testdata/variants/release-before-activation.json"
	dir := t.TempDir()
	logs := map[string]string{"variant": filepath.Join(dir, "variant.jsonl"), "builtin": filepath.Join(dir, "builtin.jsonl")}
	sim := []string{"simulate", "--config", "../../testdata/sim/stranded.json", "--workload", "../../testdata/sim/stranded.jsonl"}
	if code, out, _ := runCLI(t, append(sim, "--spec", variant, "--log", logs["variant"])...); code != exitOK {
		t.Fatalf("simulate the variant: exit %d:\n%s", code, out)
	}
	if code, out, _ := runCLI(t, append(sim, "--log", logs["builtin"])...); code != exitOK {
		t.Fatalf("simulate the built-in tables: exit %d:\n%s", code, out)
	}
	code, out, _ := runCLI(t, "conform", "--spec", variant, "--props", file, logs["variant"])
	want := "verdict: rejected at " + logs["variant"] + ":13\n  fact: decode-0 gen 0 attempt r0: transfer_done\n  property: AckAfterActivationApplied (" + file + ":8)\n"
	if code != exitViolation || !strings.Contains(out, want) || !strings.Contains(out, "always AckAfterActivationApplied does not hold") {
		t.Fatalf("variant: exit %d, want 1 and\n%s\ngot:\n%s", code, want, out)
	}
	if code, out, _ := runCLI(t, "conform", "--spec", variant, logs["variant"]); code != exitOK {
		t.Fatalf("variant without the property: exit %d, want 0 (every built-in invariant holds along its explanation):\n%s", code, out)
	}
	code, out, _ = runCLI(t, "conform", "--spec", variant, "--props", file, "--json", logs["variant"])
	var rep struct {
		Verdict   string `json:"verdict"`
		Rejection struct {
			Line       int    `json:"line"`
			Property   string `json:"property"`
			PropertyAt string `json:"property_at"`
		} `json:"rejection"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitViolation {
		t.Fatalf("--json: exit %d, %v:\n%s", code, err, out)
	}
	if rep.Verdict != "rejected" || rep.Rejection.Line != 13 || rep.Rejection.Property != "AckAfterActivationApplied" || rep.Rejection.PropertyAt != file+":8" {
		t.Fatalf("--json: %+v", rep)
	}
	if code, out, _ := runCLI(t, "conform", "--props", file, logs["builtin"]); code != exitOK ||
		!strings.Contains(out, "verdict: explained: a behavior of the tables explains every fact, every invariant and every property of "+file+" holding along it\n") {
		t.Fatalf("built-in tables: exit %d:\n%s", code, out)
	}
	code, _, errOut := runCLI(t, "conform", "--from", "mocker", "--props", file, "../../testdata/logs/mocker/aggregated.jsonl")
	if code != exitUsage || !strings.Contains(errOut, "--props: an aggregated replay hands nothing off") {
		t.Fatalf("an aggregated replay: exit %d, stderr %q; want exit 2", code, errOut)
	}
	code, out, _ = runCLI(t, "conform", "--props", propsDir+"questions.props", logs["builtin"])
	if code != exitOK || !strings.Contains(out, "  sometimes PinnedAfterDecode per handoff: NOT REACHED (in this run; one run's not reached is no proof") ||
		!strings.Contains(out, "  always ActivatedKVKept per handoff: NOT VIOLATED (in this run)\n    antecedent held, first at 91.617 ms, attempt r0 (h.activated)\n") {
		t.Fatalf("sometimes along the explanation: exit %d:\n%s", code, out)
	}
}

// A leads_to property is judged under weak fairness: on the variant where
// the reservation deadline re-arms for ever, ReservationEnds fails with a
// fair lasso that --witness-dir writes and replay --props accepts (the
// loop returns, Q never holds, the loop is weakly fair); on the built-in
// tables it holds, and not vacuously. Without the file replay cannot
// judge the trace and says so.
func TestProps_LeadsToLassoReplays(t *testing.T) {
	dir := t.TempDir()
	file := propsDir + "reservation-ends.props"
	args := []string{"check", "--config", mutCfg, "--run", "sglang", "--timing=false", "--props", file}
	code, out, errOut := runCLI(t, append(args, "--spec", rearm, "--json", "--witness-dir", dir)...)
	if code != exitViolation {
		t.Fatalf("variant: exit %d, want 1; stderr %s", code, errOut)
	}
	var rep struct {
		Properties propsReport `json:"properties"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	v := rep.Properties.Runs[0].Properties[0]
	lasso := filepath.Join(dir, "sglang-ReservationEnds.jsonl")
	if v.Verdict != "violated" || v.WitnessLoop == 0 || v.WitnessSteps == 0 || v.WitnessFile != lasso || !v.AntecedentHeld || v.Vacuous {
		t.Fatalf("variant: %+v", v)
	}
	code, out, _ = runCLI(t, "replay", "--props", file, lasso)
	if code != exitViolation || !strings.Contains(out, "VIOLATION ReservationEnds: P holds of handoff 0 at step ") ||
		!strings.HasSuffix(out, "the loop is weakly fair: every process moves in it or is disabled somewhere on it\n") {
		t.Fatalf("replay --props: exit %d:\n%s", code, out)
	}
	code, _, errOut = runCLI(t, "replay", lasso)
	if code != exitUsage || !strings.Contains(errOut, "records ReservationEnds, which is no built-in invariant: give the properties file") {
		t.Fatalf("replay without --props: exit %d, stderr %q", code, errOut)
	}
	code, out, _ = runCLI(t, args...)
	if code != exitOK || !strings.Contains(out, "leads_to ReservationEnds per handoff: holds (every weakly fair run meets it)\n      P held") {
		t.Fatalf("built-in tables: exit %d:\n%s", code, out)
	}
}

// A fair run may also end: where nothing but faults can happen, no
// process is obliged to move, so an obligation still pending there is
// violated by a finite run, shown and replayed without a loop. A P that
// never holds is reported vacuous.
func TestProps_LeadsToEndedRun(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "never.props")
	if err := os.WriteFile(file, []byte("handoffcheck.props/v1\nleads_to Never per handoff: h.source_terminal ~> false\nleads_to Vacuous: false ~> true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "check", "--config", smallConfig, "--run", "vllm", "--timing=false", "--props", file, "--witness-dir", dir)
	if code != exitViolation || !strings.Contains(out, "leads_to Never per handoff: VIOLATED (handoff 0: P holds at step ") ||
		!strings.Contains(out, "that ends where nothing but faults can happen, and never does:") ||
		!strings.Contains(out, "leads_to Vacuous: holds (every weakly fair run meets it)\n      vacuous: P never held (false)\n") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	code, out, _ = runCLI(t, "replay", "--props", file, filepath.Join(dir, "vllm-Never.jsonl"))
	if code != exitViolation || !strings.Contains(out, "VIOLATION Never: P holds of handoff 0 at step ") || !strings.Contains(out, "where nothing but faults can happen\n") {
		t.Fatalf("replay: exit %d:\n%s", code, out)
	}
}

// leads_to and --fair need the liveness graph of an exhaustive search:
// every search that keeps none refuses them, at the property's line.
func TestProps_LeadsToNeedsTheGraph(t *testing.T) {
	file := propsDir + "reservation-ends.props"
	for _, extra := range [][]string{{"--walks", "3"}, {"--liveness=false"}, {"--bitstate", "1MiB"}} {
		args := append([]string{"check", "--config", smallConfig, "--props", file}, extra...)
		code, _, errOut := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(errOut, file+":7:1: leads_to ReservationEnds without within is judged under weak fairness over every run, which check without the liveness graph") {
			t.Errorf("%v: exit %d, stderr %q", extra, code, errOut)
		}
	}
	code, _, errOut := runCLI(t, "check", "--config", smallConfig, "--fair", "--liveness=false")
	if code != exitUsage || !strings.Contains(errOut, "--fair judges EventuallyDrained's fair form on the liveness graph") {
		t.Errorf("--fair --liveness=false: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runCLI(t, "check", "--config", smallConfig, "--fair", "--walks", "3")
	if code != exitUsage || !strings.Contains(errOut, "--fair applies to exhaustive search") {
		t.Errorf("--fair --walks: exit %d, stderr %q", code, errOut)
	}
}

// check --fair judges EventuallyDrained's fair form beside the
// reachability form: every run of the built-in tables drains on every
// fair run; the rearm-reservation variant's trap is reported as before,
// and its trace replays.
func TestCheck_FairDrained(t *testing.T) {
	code, out, _ := runCLI(t, "check", "--config", smallConfig, "--timing=false", "--fair")
	if code != exitOK || strings.Count(out, "EventuallyDrained in its fair form (every weakly fair run drains): checked too, without symmetry reduction\n") != 3 {
		t.Fatalf("built-in tables: exit %d:\n%s", code, out)
	}
	trace := filepath.Join(t.TempDir(), "sglang.jsonl")
	code, out, _ = runCLI(t, "check", "--config", mutCfg, "--spec", rearm, "--run", "sglang", "--timing=false", "--fair", "--trace-out", trace)
	if code != exitViolation || !strings.Contains(out, "VIOLATION EventuallyDrained") {
		t.Fatalf("variant: exit %d:\n%s", code, out)
	}
	code, out, _ = runCLI(t, "replay", trace)
	if code != exitViolation || !strings.HasSuffix(out, "the loop is weakly fair: every process moves in it or is disabled somewhere on it\n") {
		t.Fatalf("replay: exit %d:\n%s", code, out)
	}
}
