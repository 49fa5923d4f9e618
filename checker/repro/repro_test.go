package repro

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/internal/variant"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// found runs check on a configuration under a variant and returns the
// input a reproduction is written from.
func found(t testing.TB, configFile, specFile, run string) Input {
	t.Helper()
	in, ok := tryFound(t, configFile, specFile, run)
	if !ok {
		t.Fatalf("%s under %s: no violation", configFile, specFile)
	}
	return in
}

// tryFound is found, reporting false when check finds no violation.
func tryFound(t testing.TB, configFile, specFile, run string) (Input, bool) {
	t.Helper()
	cfgJSON, err := os.ReadFile(configFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := system.ParseConfig(configFile, cfgJSON)
	if err != nil {
		t.Fatal(err)
	}
	proto := variant.Protocol(t, specFile)
	runs, err := checker.SelectRuns(cfg, []string{run}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := checker.Check(context.Background(), proto, cfg, runs, checker.Limits{Workers: 1, Liveness: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Runs[0].Violation == nil {
		return Input{}, false
	}
	abs, _ := filepath.Abs(specFile)
	return Input{Protocol: proto, Spec: proto.Spec(), SpecFile: abs, ConfigJSON: cfgJSON, Run: runs[0], Found: rep.Runs[0].Violation,
		Command: "handoffcheck check --config " + configFile + " --spec " + specFile + " --run " + run}, true
}

// A counterexample on two handoffs that needs one is reproduced on one:
// the trace replays to the same invariant at its last step, no longer
// than the search's, and the reproduction is the same bytes each time.
func TestWrite_MinimizesAndReplays(t *testing.T) {
	in := found(t, "../../testdata/configs/two-handoffs.json", "../../testdata/variants/release-on-heartbeat.json", "vllm")
	dir := t.TempDir()
	res, err := Write(dir, in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Handoffs != 1 || res.HandoffsBefore != 2 || res.Steps != len(in.Found.Steps) || res.Invariant != "SourcePinnedUntilRead" {
		t.Fatalf("%+v", res)
	}
	tr := readTrace(t, dir)
	if len(tr.Config.World.Handoffs) != 1 || len(tr.Config.Runs) != 1 || tr.Violation != res.Invariant {
		t.Fatalf("the trace's configuration has %d handoffs and %d runs, records %q", len(tr.Config.World.Handoffs), len(tr.Config.Runs), tr.Violation)
	}
	c, err := checker.New(in.Protocol, tr.Config, tr.Config.Runs[0])
	if err != nil {
		t.Fatal(err)
	}
	s := c.Initial()
	for i, m := range tr.Moves {
		r, err := c.Apply(&s, m)
		if err != nil {
			t.Fatal(err)
		}
		if (r.Violation != nil) != (i == len(tr.Moves)-1) {
			t.Fatalf("step %d: violation %v", i+1, r.Violation)
		}
	}
	readme, _ := os.ReadFile(filepath.Join(dir, ReadmeFile))
	for _, want := range []string{"# Reproduction: SourcePinnedUntilRead", "6 steps over one handoff (the configuration had 2",
		"6. deliver h=0 to=source msg=LeaseRenewed", "handoffcheck replay trace.jsonl", in.Command,
		"handoffcheck simulate --config sim.json --workload workload.jsonl --faults faults.jsonl --spec " + in.SpecFile,
		"handoffcheck live --config sim.json --workload workload.jsonl --faults faults.jsonl --spec " + in.SpecFile} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("the README lacks %q:\n%s", want, readme)
		}
	}
	again := t.TempDir()
	if _, err := Write(again, in); err != nil {
		t.Fatal(err)
	}
	if got := simulated(t, dir, in.Protocol, res.Plan.KeepGoing, res.Invariant); got != res.Invariant {
		t.Errorf("the plan's files, read as simulate reads them, break %q", got)
	}
	for _, f := range res.Files() {
		a, _ := os.ReadFile(filepath.Join(dir, f))
		b, _ := os.ReadFile(filepath.Join(again, f))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two writes", f)
		}
	}
}

// On the clock: a variant whose bug a timed scenario reaches names the
// scenario, and the simulator run it names breaks the same invariant; one
// whose bug no scenario reaches lists what was tried.
func TestFindTimed(t *testing.T) {
	in := found(t, "../../testdata/configs/two-handoffs.json", "../../testdata/variants/release-on-heartbeat.json", "vllm")
	tm, err := FindTimed(context.Background(), in.Protocol, in.Run, "SourcePinnedUntilRead")
	if err != nil {
		t.Fatal(err)
	}
	if tm.Scenario != "fault-sweep" || tm.Policy != "source-first" || tm.Request < 0 || tm.AtMS <= 0 || tm.Requests == 0 {
		t.Fatalf("%+v", tm)
	}
	none, err := FindTimed(context.Background(), in.Protocol, in.Run, "NoSuchInvariant")
	if err != nil {
		t.Fatal(err)
	}
	if none.Scenario != "" || len(none.Tried) == 0 || none.Tried[0] != "fault-sweep" {
		t.Fatalf("%+v", none)
	}
	trt := in.Run
	trt.Engine = model.TRTLLM
	if other, _ := FindTimed(context.Background(), in.Protocol, trt, "SourcePinnedUntilRead"); other.Why == "" || other.Scenario != "" {
		t.Fatalf("a run on an engine timeline does not pair with the policy: %+v", other)
	}
}

// A liveness counterexample is kept whole, loop included, and still
// loops.
func TestWrite_KeepsALivenessTraceWhole(t *testing.T) {
	// The shipped trace's configuration, where rearm-reservation loops.
	data, err := os.ReadFile("../../testdata/traces/rearm-reservation-loop.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := checker.ParseTrace("rearm-reservation-loop.jsonl", data)
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfgFile, shipped.ConfigJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	in := found(t, cfgFile, "../../testdata/variants/rearm-reservation.json", shipped.Run)
	if len(in.Found.Loop) == 0 {
		t.Fatalf("rearm-reservation's counterexample is no loop: %s", in.Found.Violation.Invariant)
	}
	dir := t.TempDir()
	res, err := Write(dir, in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != len(in.Found.Steps)+len(in.Found.Loop) || res.Handoffs != res.HandoffsBefore {
		t.Fatalf("%+v", res)
	}
	data, _ = os.ReadFile(filepath.Join(dir, TraceFile))
	tr, err := checker.ParseTrace(TraceFile, data)
	if err != nil {
		t.Fatal(err)
	}
	if tr.LoopFrom != len(in.Found.Steps) {
		t.Fatalf("loop from %d, want %d", tr.LoopFrom, len(in.Found.Steps))
	}
}

// The test a reproduction carries fails while the variant allows the
// steps and passes once the variant's file holds tables that do not:
// go test run on it, in a directory of this module.
func TestWrite_TheTestFailsUntilFixed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs go test twice")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	variant, err := os.ReadFile("../../testdata/variants/release-on-heartbeat.json")
	if err != nil {
		t.Fatal(err)
	}
	specFile := filepath.Join(t.TempDir(), "variant.json")
	if err := os.WriteFile(specFile, variant, 0o644); err != nil {
		t.Fatal(err)
	}
	in := found(t, "../../testdata/configs/small.json", specFile, "vllm")
	// Inside the module, so that the test's imports resolve.
	dir, err := os.MkdirTemp(".", "reprotest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if _, err := Write(dir, in); err != nil {
		t.Fatal(err)
	}
	goTest := func() (string, error) {
		cmd := exec.Command(goBin, "test", "-count=1", "./"+filepath.Base(dir))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := goTest()
	if err == nil || !strings.Contains(out, "violates SourcePinnedUntilRead") {
		t.Fatalf("with the bug, go test: %v\n%s", err, out)
	}
	fixed, err := system.Generated().Spec().MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(specFile, fixed, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := goTest(); err != nil {
		t.Fatalf("with the built-in tables in the variant's file, go test: %v\n%s", err, out)
	}
}

// The time to write a reproduction once check found the counterexample:
// minimizing (the smaller configuration's replay) and writing the three
// files.
func BenchmarkWrite_TwoHandoffs(b *testing.B) {
	in := found(b, "../../testdata/configs/two-handoffs.json", "../../testdata/variants/release-on-heartbeat.json", "vllm")
	dir := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Write(dir, in); err != nil {
			b.Fatal(err)
		}
	}
}
