package checker

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/spec"
	"pgregory.net/rapid"
)

// walkMachine is the composed system as a rapid state machine: the one
// action takes a move the state enables, the invariant hook runs after
// every action. rapid shrinks a failing run to a minimal move sequence,
// prints the command that reproduces it and saves a fail file under
// testdata/rapid.
func walkMachine(c *Checker) func(*rapid.T) {
	return func(t *rapid.T) {
		s := newSession(c)
		var last StepResult
		t.Repeat(map[string]func(*rapid.T){
			"move": func(t *rapid.T) {
				moves := c.MovesInto(s.State(), nil)
				if len(moves) == 0 {
					return // nothing can happen any more; Quiescence was judged on the last step
				}
				m := rapid.SampledFrom(moves).Draw(t, "move")
				r, err := s.Apply(m)
				if err != nil {
					t.Fatalf("an enabled move was refused: %v", err)
				}
				t.Logf("%s", m)
				last = r
			},
			"": func(t *rapid.T) {
				if last.Violation != nil {
					t.Fatalf("%v", last.Violation)
				}
			},
		})
	}
}

// TestRapid_ProtocolHolds runs the rapid state machine over every run of a
// configuration larger than exhaustive search covers in a unit test.
func TestRapid_ProtocolHolds(t *testing.T) {
	cfg := mustConfig(t, twoByTwo)
	cfg.Budget = budgetOf(t, "duplicate=3", "loss=3", "reorder=3", "cancel=2", "abort=2", "transfer_failure=2", "restart=2", "early_timer=3", "no_show=1", "hang=2", "evict=1")
	all, err := system.ParseCommands(json.RawMessage("true"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Commands = all
	for _, run := range cfg.Runs {
		c, err := New(system.Generated(), cfg, run)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(run.Name, func(t *testing.T) { rapid.Check(t, walkMachine(c)) })
	}
}

// recorder is a rapid.TB that keeps what rapid reports instead of failing
// the enclosing test, so that a test can demand that rapid finds and
// shrinks a failure.
type recorder struct {
	mu     sync.Mutex
	name   string
	failed bool
	log    strings.Builder
}

func (r *recorder) Helper()              {}
func (r *recorder) Name() string         { return r.name }
func (r *recorder) Fail()                { r.mu.Lock(); r.failed = true; r.mu.Unlock() }
func (r *recorder) FailNow()             { r.Fail() }
func (r *recorder) Failed() bool         { r.mu.Lock(); defer r.mu.Unlock(); return r.failed }
func (r *recorder) SkipNow()             {}
func (r *recorder) Skip(...any)          {}
func (r *recorder) Skipf(string, ...any) {}
func (r *recorder) Log(a ...any)         { r.mu.Lock(); fmt.Fprintln(&r.log, a...); r.mu.Unlock() }
func (r *recorder) Logf(f string, a ...any) {
	r.mu.Lock()
	fmt.Fprintf(&r.log, f+"\n", a...)
	r.mu.Unlock()
}
func (r *recorder) Error(a ...any)            { r.Log(a...); r.Fail() }
func (r *recorder) Errorf(f string, a ...any) { r.Logf(f, a...); r.Fail() }
func (r *recorder) Fatal(a ...any)            { r.Error(a...) }
func (r *recorder) Fatalf(f string, a ...any) { r.Errorf(f, a...) }

// TestRapid_ShrinksBrokenTable: on a table that releases the source on a
// heartbeat, rapid finds the violation, shrinks it to a shortest trace and
// prints how to reproduce it.
func TestRapid_ShrinksBrokenTable(t *testing.T) {
	// A fixed seed: this test is about shrinking, and must not depend on
	// which failure a random start happens to hit first.
	for name, value := range map[string]string{"rapid.nofailfile": "true", "rapid.checks": "1000", "rapid.seed": "1"} {
		if f := flag.Lookup(name); f != nil {
			old := f.Value.String()
			f.Value.Set(value)
			defer f.Value.Set(old)
		}
	}
	s := spec.Default()
	override(t, s, spec.Source, "Pinned", "LeaseRenewed", spec.SourceFirst, "Released",
		"DisarmLease", "ReleaseSource", "ReportSourceReleased", "Complete")
	cfg := mustConfig(t, smallConfig)
	cfg.Budget = budgetOf(t, "duplicate=1", "early_timer=3")
	c, err := New(interpreted(t, s), cfg, cfg.Runs[0])
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{name: t.Name()}
	rapid.Check(rec, walkMachine(c))
	out := rec.log.String()
	// Releasing on a heartbeat breaks SourcePinnedUntilRead while reads may
	// come and ReleaseNeedsReaderAck after they ended.
	if !rec.Failed() || !(strings.Contains(out, "SourcePinnedUntilRead") || strings.Contains(out, "ReleaseNeedsReaderAck")) ||
		!strings.Contains(out, "To reproduce") {
		t.Fatalf("rapid did not find the broken release:\n%s", out)
	}
	// The minimized run's output lists the moves it took after the report.
	_, minimized, _ := strings.Cut(out, "Failed test output:")
	var moves []string
	for _, l := range strings.Split(minimized, "\n") {
		if _, err := system.ParseMove(strings.TrimSpace(l), nil); err == nil {
			moves = append(moves, strings.TrimSpace(l))
		}
	}
	// The shortest traces take 6 moves (route, arrive, compute, route
	// decode, heartbeat, deliver), or 8 with the reads done first.
	if len(moves) > 8 {
		t.Fatalf("shrunk to %d moves %v, want at most 8:\n%s", len(moves), moves, out)
	}
	_ = context.Background
}
