package checker

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/machines/interp"
	"github.com/handoffcheck/handoffcheck/spec"
)

// override replaces what a table does in one state on one event under one
// policy, splitting the row that did it so the rest of it is kept.
func override(t *testing.T, s *spec.Spec, r spec.Role, from, event string, p spec.Policy, to string, acts ...string) {
	t.Helper()
	tb := s.Table(r)
	i := tb.Lookup(p, from, event)
	if i < 0 {
		t.Fatalf("%s has no row for %s × %s under %s", r, from, event, p)
	}
	old := tb.Rows[i]
	var keep []spec.Row
	if rest := slices.DeleteFunc(slices.Clone(old.From), func(x string) bool { return x == from }); len(rest) > 0 {
		r := old
		r.From = rest
		keep = append(keep, r)
	}
	if others := slices.DeleteFunc(slices.Clone(old.Policies), func(x spec.Policy) bool { return x == p }); len(others) > 0 {
		r := old
		r.From, r.Policies = []string{from}, others
		keep = append(keep, r)
	}
	tb.Rows = append(append(slices.Clone(tb.Rows[:i]), keep...), tb.Rows[i+1:]...)
	tb.Rows = append(tb.Rows, spec.Row{From: []string{from}, Event: event, Policies: []spec.Policy{p}, To: to, Actions: acts, Why: "broken on purpose"})
	if err := s.Validate(); err != nil {
		t.Fatalf("broken table does not validate: %v", err)
	}
}

func interpreted(t *testing.T, s *spec.Spec) *system.Protocol {
	t.Helper()
	it, err := interp.New(s)
	if err != nil {
		t.Fatal(err)
	}
	p, err := system.FromStepper("broken table", s, it)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Breaking the spec on purpose is caught: each broken table fails with the
// invariant it breaks and a shortest trace whose last step breaks it.
func TestExplore_CatchesBrokenTables(t *testing.T) {
	cases := []struct {
		name   string
		run    string
		budget system.Budget
		break_ func(t *testing.T, s *spec.Spec)
		want   string
		steps  int
	}{
		{
			// The source releases its pin when a heartbeat arrives, while
			// the destination still waits to read it.
			name: "release-source-before-reader-completes", run: "vllm", budget: budgetOf(t, "duplicate=1", "cancel=1", "early_timer=1"),
			break_: func(t *testing.T, s *spec.Spec) {
				override(t, s, spec.Source, "Pinned", "LeaseRenewed", spec.SourceFirst, "Released",
					"DisarmLease", "ReleaseSource", "ReportSourceReleased", "Complete")
			},
			want: "SourcePinnedUntilRead", steps: 6,
		},
		{
			name: "publish-stored-at-reservation", run: "vllm", budget: budgetOf(t, "duplicate=1", "cancel=1"),
			break_: func(t *testing.T, s *spec.Spec) {
				override(t, s, spec.Destination, "Reserving", "DestinationReserved", spec.SourceFirst, "Receiving",
					"RegisterDestination", "PublishStored", "StartPull")
			},
			want: "NoStoredBeforeActivation", steps: 5,
		},
		{
			// A cancel frees the reservation and ends the decode
			// router's booking but leaves the machine waiting, so a
			// duplicate of the cancel ends the booking again. (The
			// second release itself is the core's no-op.)
			name: "release-reservation-twice-on-duplicate-cancel", run: "sglang", budget: budgetOf(t, "duplicate=1", "abort=1"),
			break_: func(t *testing.T, s *spec.Spec) {
				override(t, s, spec.Destination, "Reserved", "Cancelled", spec.DestinationFirst, "",
					"DisarmReservationTimer", "FenceDestination", "ReleaseDestination", "ReportDecodeFailed")
			},
			want: "ExactlyOnceRelease", steps: 7,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := spec.Default()
			tc.break_(t, s)
			cfg := mustConfig(t, smallConfig)
			cfg.Budget = tc.budget
			var run system.Run
			for _, r := range cfg.Runs {
				if r.Name == tc.run {
					run = r
				}
			}
			c, err := New(interpreted(t, s), cfg, run)
			if err != nil {
				t.Fatal(err)
			}
			r := c.checkRun(context.Background(), Limits{Liveness: true}, nil)
			if r.Violation == nil {
				t.Fatalf("no violation found in %d states", r.Stats.States)
			}
			ce := r.Violation
			if ce.Violation.Invariant != tc.want {
				t.Fatalf("violated %s, want %s:\n%s", ce.Violation.Invariant, tc.want, c.formatCounterexample(ce))
			}
			if len(ce.Steps) != tc.steps || !ce.Steps[len(ce.Steps)-1].Failed {
				t.Fatalf("trace of %d steps, want the shortest, %d, ending on the failing step:\n%s", len(ce.Steps), tc.steps, c.formatCounterexample(ce))
			}
			// The trace replays: every step is enabled where it is taken,
			// and the last one breaks the invariant.
			sess := newSession(c)
			for i, st := range ce.Steps {
				res, err := sess.Apply(st.Move)
				if err != nil {
					t.Fatalf("step %d %s does not replay: %v", i+1, st.Move, err)
				}
				last := i == len(ce.Steps)-1
				if (res.Violation != nil) != last {
					t.Fatalf("step %d %s: violation %v, want one only on the last step", i+1, st.Move, res.Violation)
				}
			}
			text := c.formatCounterexample(ce)
			if !strings.Contains(text, "VIOLATION "+tc.want) || !strings.Contains(text, "<-- "+tc.want) {
				t.Fatalf("the report does not name the invariant on its failing step:\n%s", text)
			}
		})
	}
}

// A seeded liveness bug: when its deadline fires, the destination renews
// it instead of giving the reservation up. If the push's completion is
// lost, nothing can ever release the reservation: the deadline fires and
// is renewed forever. No state is a dead end (the timer is always there to
// fire), so only EventuallyDrained can see it; the report shows the path
// into the trap and the loop inside it. (The pushing source keeps its pin
// until the destination activated, so its lease expires and its cancel
// would free the destination too: that fact is lost as well.)
func TestExplore_EventuallyDrainedFindsTrap(t *testing.T) {
	s := spec.Default()
	override(t, s, spec.Destination, "Reserved", "ReservationExpired", spec.DestinationFirst, "", "ArmReservationTimer")
	cfg := mustConfig(t, smallConfig)
	cfg.Budget = budgetOf(t, "loss=2")
	var run system.Run
	for _, r := range cfg.Runs {
		if r.Name == "sglang" {
			run = r
		}
	}
	c, err := New(interpreted(t, s), cfg, run)
	if err != nil {
		t.Fatal(err)
	}
	r := c.checkRun(context.Background(), Limits{Liveness: true}, nil)
	if r.Violation == nil || r.Violation.Violation.Invariant != "EventuallyDrained" {
		t.Fatalf("want an EventuallyDrained violation, got %+v", r.Violation)
	}
	ce := r.Violation
	text := c.formatCounterexample(ce)
	if len(ce.Loop) == 0 {
		t.Fatalf("no loop shown:\n%s", text)
	}
	for _, want := range []string{"lose h=0 to=destination msg=Cancelled", "loop:", "timer h=0 timer=reservation", "dst=reserved"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	// Without liveness the same bug is invisible: no safety invariant and
	// no dead end is violated.
	r = c.checkRun(context.Background(), Limits{}, nil)
	if r.Violation != nil {
		t.Fatalf("safety checking alone found %s", r.Violation.Violation.Invariant)
	}
}

// Random walks find a broken table under every schedule, the result does
// not depend on the number of workers, the failing walk is reproduced
// alone by its own seed, and shrinking keeps the violation.
func TestWalk_FindsAndReproduces(t *testing.T) {
	s := spec.Default()
	override(t, s, spec.Source, "Pinned", "LeaseRenewed", spec.SourceFirst, "Released",
		"DisarmLease", "ReleaseSource", "ReportSourceReleased", "Complete")
	cfg := mustConfig(t, twoByTwo)
	c, err := New(interpreted(t, s), cfg, cfg.Runs[0])
	if err != nil {
		t.Fatal(err)
	}
	good, _ := New(system.Generated(), cfg, cfg.Runs[0])
	for _, sched := range []schedule{scheduleUniform, schedulePositions, schedulePCT} {
		one := c.walk(context.Background(), walkOptions{Seed: 11, Walks: 300, Steps: 80, sched: sched, Workers: 1})
		two := c.walk(context.Background(), walkOptions{Seed: 11, Walks: 300, Steps: 80, sched: sched, Workers: 2})
		if one.Violation == nil {
			t.Fatalf("%s: 300 walks found nothing", sched.name())
		}
		if one.Failing != two.Failing || one.Seed != two.Seed || c.formatCounterexample(one.Violation) != c.formatCounterexample(two.Violation) {
			t.Fatalf("%s: results depend on the workers: walk %d vs %d", sched.name(), one.Failing, two.Failing)
		}
		alone := c.walk(context.Background(), walkOptions{Seed: one.Seed, Walks: 1, Steps: 80, sched: sched})
		if alone.Failing != 0 || alone.Original != one.Original {
			t.Fatalf("%s: seed %d alone: failing walk %d after %d moves, want walk 0 after %d", sched.name(), one.Seed, alone.Failing, alone.Original, one.Original)
		}
		ce := one.Violation
		// Releasing on a heartbeat breaks SourcePinnedUntilRead while a read
		// may come, and ReleaseNeedsReaderAck after the reads ended.
		if inv := ce.Violation.Invariant; (inv != "SourcePinnedUntilRead" && inv != "ReleaseNeedsReaderAck") || len(ce.Steps) > one.Original || !ce.Steps[len(ce.Steps)-1].Failed {
			t.Fatalf("%s: shrunk trace: %s in %d steps (walk took %d)", sched.name(), ce.Violation.Invariant, len(ce.Steps), one.Original)
		}
		// The correct tables survive the same walks, swarm included.
		for _, swarm := range []bool{false, true} {
			if r := good.walk(context.Background(), walkOptions{Seed: 11, Walks: 300, Steps: 80, Swarm: swarm, sched: sched}); r.Violation != nil {
				t.Fatalf("%s swarm=%v: %v", sched.name(), swarm, r.Violation.Violation)
			}
		}
	}
}
