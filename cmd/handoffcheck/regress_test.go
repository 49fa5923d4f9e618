package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/system"
)

func runCLIContext(ctx context.Context, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := runContext(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

const (
	rearm      = "../../testdata/variants/rearm-reservation.json"
	release    = "../../testdata/variants/release-on-heartbeat.json"
	lateCancel = "../../testdata/variants/late-cancel-standin.json"
	mutCfg     = "../../checker/mutation.json"
)

// Checking nothing is never a pass, and a run named twice is refused
// rather than run twice.
func TestCheck_RunSelectionRefusesNothingAndTwice(t *testing.T) {
	for _, args := range [][]string{
		{"check", "--config", small, "--run", "vllm", "--policy", "destination-first"},
		{"check", "--config", small, "--run", "vllm,vllm"},
		{"check", "--config", small, "--run", "vllm,"},
		{"check", "--config", small, "--run", "vllm", "--policy", "destination-first", "--walks", "3"},
	} {
		code, out, errOut := runCLI(t, args...)
		if code != exitUsage || out != "" || errOut == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and a message", args, code, out, errOut)
		}
	}
}

// --timing=false leaves every measured figure out of the JSON report.
func TestCheck_JSONWithoutTiming(t *testing.T) {
	code, out, _ := runCLI(t, "check", "--config", small, "--json", "--timing=false")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, key := range []string{"elapsed_ms", "states_per_second", "transitions_per_second", "workers", "peak_heap_bytes", "peak_resident_bytes"} {
		if strings.Contains(out, `"`+key+`"`) {
			t.Errorf("--json --timing=false still prints %s:\n%s", key, out)
		}
	}
	_, withTiming, _ := runCLI(t, "check", "--config", small, "--json")
	if !strings.Contains(withTiming, `"elapsed_ms"`) || !strings.Contains(withTiming, `"peak_resident_bytes"`) {
		t.Errorf("--json without --timing=false lacks the measurements:\n%s", withTiming)
	}
}

// Every mode gives byte-identical output for the same inputs with
// --timing=false, for one worker and for two.
func TestCLI_DeterministicEveryMode(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "ce.jsonl")
	modes := map[string][]string{
		"check text":  {"check", "--config", small},
		"check json":  {"check", "--config", small, "--json"},
		"violation":   {"check", "--config", small, "--spec", release, "--run", "vllm"},
		"liveness":    {"check", "--config", mutCfg, "--spec", rearm, "--run", "sglang", "--json"},
		"walks":       {"check", "--config", small, "--spec", release, "--walks", "300", "--steps", "60", "--seed", "3"},
		"walks json":  {"check", "--config", small, "--spec", release, "--walks", "300", "--steps", "60", "--seed", "3", "--json"},
		"swarm":       {"check", "--config", small, "--walks", "200", "--steps", "60", "--seed", "5", "--swarm"},
		"swarm json":  {"check", "--config", small, "--spec", release, "--walks", "200", "--steps", "60", "--seed", "5", "--swarm", "--json"},
		"walks stats": {"check", "--config", small, "--walks", "100", "--seed", "2", "--stats"},
		"uniform":     {"check", "--config", small, "--spec", release, "--walks", "300", "--steps", "60", "--seed", "3", "--schedule", "uniform"},
		"swarm pct":   {"check", "--config", small, "--spec", lateCancel, "--walks", "2000", "--swarm", "--schedule", "pct", "--json"},
		// On the small configuration eight swap-actions mutants are
		// killed, in its first or its second run, after 7 to 623 states,
		// and five survive after 1,597: their explorations end in another
		// order than they start. On the mutation configuration (the
		// default) the same question took twenty times the CPU.
		"mutate":      {"mutate", "--operators", "swap-actions", "--config", small},
		"mutate json": {"mutate", "--operators", "swap-actions", "--config", small, "--json"},
	}
	for name, args := range modes {
		t.Run(name, func(t *testing.T) {
			var outs []string
			for _, w := range []string{"1", "2", "2"} {
				a := append(append([]string(nil), args...), "--workers", w)
				if args[0] == "check" {
					a = append(a, "--timing=false")
				}
				_, out, errOut := runCLI(t, a...)
				if out == "" {
					t.Fatalf("%v printed nothing: %s", a, errOut)
				}
				outs = append(outs, out)
			}
			if outs[0] != outs[1] || outs[1] != outs[2] {
				t.Fatalf("output differs between runs or worker counts:\n%s\n---\n%s\n---\n%s", outs[0], outs[1], outs[2])
			}
		})
	}
	// replay reads a trace: the same file gives the same bytes.
	runCLI(t, "check", "--config", small, "--spec", release, "--run", "vllm", "--trace-out", trace)
	_, a, _ := runCLI(t, "replay", trace)
	_, b, _ := runCLI(t, "replay", trace)
	if a != b || a == "" {
		t.Fatalf("replay differs:\n%s\n---\n%s", a, b)
	}
}

// An interrupted check prints its report, lists the runs that did not
// run, and exits 3; so does an interrupted mutate.
func TestCLI_InterruptedExitsThreeAndListsWhatDidNotRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	code, out, errOut := runCLIContext(ctx, "check", "--timing=false")
	if code != exitInterrupted {
		t.Fatalf("check: exit %d, want %d; stderr %s", code, exitInterrupted, errOut)
	}
	for _, want := range []string{"run trtllm-destination-first (destination-first, engine trtllm): not run (interrupted)", "interrupted: the verdicts above"} {
		if !strings.Contains(out, want) {
			t.Errorf("check report lacks %q:\n%s", want, out)
		}
	}
	// The first run was under way (or, on a very slow machine, not yet
	// begun): either way the report says so.
	if !strings.Contains(out, "run vllm (source-first, engine vllm): incomplete (interrupted") &&
		!strings.Contains(out, "run vllm (source-first, engine vllm): not run (interrupted)") {
		t.Errorf("check report does not say what became of run vllm:\n%s", out)
	}
	done, cancelNow := context.WithCancel(context.Background())
	cancelNow()
	code, out, _ = runCLIContext(done, "check", "--json", "--timing=false")
	var rep struct {
		Verdict string   `json:"verdict"`
		NotRun  []string `json:"not_run"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitInterrupted || rep.Verdict != "interrupted" || len(rep.NotRun) != 4 {
		t.Fatalf("check --json interrupted: exit %d, %+v (%v)\n%s", code, rep, err, out)
	}
	code, out, _ = runCLIContext(done, "check", "--walks", "10")
	if code != exitInterrupted || !strings.Contains(out, "not run (interrupted)") {
		t.Fatalf("walks interrupted: exit %d\n%s", code, out)
	}
	code, out, _ = runCLIContext(done, "mutate", "--operators", "swap-actions")
	if code != exitInterrupted || !strings.Contains(out, "interrupted: 13 of 13 mutants not checked") {
		t.Fatalf("mutate interrupted: exit %d\n%s", code, out)
	}
}

// --schedule's default is the schedule the walks' zero options name: a
// reproduction that leaves it out runs the walk it reproduces.
func TestCLI_DefaultScheduleIsTheZeroSchedule(t *testing.T) {
	lc, err := loadConfig(context.Background(), small, "")
	if err != nil {
		t.Fatal(err)
	}
	report := func(sched string) string {
		rep, err := checker.Check(context.Background(), system.Generated(), lc.cfg, lc.cfg.Runs[:1],
			checker.Limits{Seed: 3, Walks: 20, Steps: 40, Swarm: true, Schedule: sched, Workers: 1})
		if err != nil {
			t.Fatalf("--schedule %q: %v", sched, err)
		}
		out, err := rep.Render(checker.TextOptions{NoTiming: true}, true)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	if zero, def := report(""), report(defaultSchedule); zero != def {
		t.Errorf("--schedule %s walks otherwise than the zero options:\n%s\n%s", defaultSchedule, def, zero)
	}
}

// Flags that would be ignored or contradict each other are refused.
func TestCLI_ConflictingFlagsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"check", "--walks", "5", "--max-states", "10"},
		{"check", "--walks", "5", "--exact"},
		{"check", "--walks", "5", "--max-depth", "3"},
		{"check", "--walks", "5", "--liveness=false"},
		{"check", "--walks", "5", "--speedup", "--stats"},
		{"check", "--walks", "5", "--schedule", "random"},
		{"check", "--schedule", "uniform"},
		{"check", "--seed", "4"},
		{"check", "--swarm"},
		{"check", "--steps", "10"},
		{"check", "--speedup"},
		{"check", "--stats", "--timing=false"},
		{"check", "--sleep"},
		{"check", "--sleep", "--liveness=false", "--por=false"},
		{"check", "--sleep", "--liveness=false", "--exact"},
		{"check", "--sleep", "--liveness=false", "--bitstate", "1MiB"},
		{"check", "--sleep", "--liveness=false", "--checkpoint", "ck"},
		{"check", "--walks", "5", "--sleep"},
		{"mutate", "--operators", "drop-action,drop-action"},
		{"help", "nosuchcommand"},
		{"help", "check", "extra"},
	} {
		code, out, errOut := runCLI(t, args...)
		if code != exitUsage || out != "" || errOut == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and a message", args, code, out, errOut)
		}
	}
}

// --max-memory: sizes that overflow are refused, not wrapped to a tiny
// bound; 0 means no bound; the default comes from the machine's memory.
func TestCLI_MaxMemoryParsing(t *testing.T) {
	for _, s := range []string{"9223372036854775807GiB", "99999999999999999999", "-1MiB", "lots", "1.5GiB"} {
		if _, err := parseMaxMemory(s, 1<<34); err == nil {
			t.Errorf("--max-memory %q accepted", s)
		}
	}
	for s, want := range map[string]int64{"0": 0, "auto": 3 << 32, "2GiB": 2 << 30, "500MB": 500e6, "1024": 1024} {
		if got, err := parseMaxMemory(s, 1<<34); err != nil || got != want {
			t.Errorf("--max-memory %q = %d, %v; want %d", s, got, err, want)
		}
	}
	code, _, errOut := runCLI(t, "check", "--config", small, "--max-memory", "9223372036854775807GiB")
	if code != exitUsage || !strings.Contains(errOut, "too large") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// Help goes to stdout with exit 0; help of an unknown command exits 2;
// every command's help gives its exit codes; --version works.
func TestCLI_HelpAndVersion(t *testing.T) {
	code, out, errOut := runCLI(t, "--help")
	if code != exitOK || errOut != "" || !strings.Contains(out, "commands:") || !strings.Contains(out, "exit codes") {
		t.Errorf("--help: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for _, name := range commandNames() {
		for _, args := range [][]string{{"help", name}, {name, "--help"}, {name, "-h"}} {
			code, out, errOut := runCLI(t, args...)
			if code != exitOK || errOut != "" || !strings.Contains(out, "usage: handoffcheck "+name) || !strings.Contains(out, "exit codes:") {
				t.Errorf("%v: exit %d, stderr %q, stdout:\n%s", args, code, errOut, out)
			}
		}
	}
	code, out, _ = runCLI(t, "--version")
	if code != exitOK || !strings.HasPrefix(out, "handoffcheck ") {
		t.Errorf("--version: exit %d, %q", code, out)
	}
	if code, _, _ := runCLI(t); code != exitUsage {
		t.Errorf("no arguments: exit %d, want 2", code)
	}
}

// The version line names the module version and the revision from the
// toolchain's record, the link-time stamp when there is none, and says so
// when neither is known.
func TestVersion_Line(t *testing.T) {
	vcs := &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261203101110-2805b1defa9a"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "2805b1defa9a9f60f9022e7818dc37f02c5dd6cc"}, {Key: "vcs.modified", Value: "true"}}}
	for _, tc := range []struct {
		bi             *debug.BuildInfo
		stamp, stampMd string
		want           string
	}{
		{vcs, "", "", "handoffcheck v0.0.0-20261203101110-2805b1defa9a (2805b1defa9a+modified)"},
		{vcs, "ffffffffffffffff", "false", "handoffcheck v0.0.0-20261203101110-2805b1defa9a (2805b1defa9a+modified)"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "0123456789abcdef", "false", "handoffcheck devel (0123456789ab)"},
		{&debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"}}, "", "", "handoffcheck v1.2.0 (revision unknown: built without version control information; 'make install' records it)"},
		{nil, "", "", "handoffcheck devel (revision unknown: built without version control information; 'make install' records it)"},
	} {
		if got := versionOf(tc.bi, tc.stamp, tc.stampMd); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}
