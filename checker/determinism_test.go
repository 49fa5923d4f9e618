package checker

import (
	"context"
	"fmt"
	"testing"

	"github.com/handoffcheck/handoffcheck/spec"
)

// Walk reports are the same for any number of workers, for every
// schedule, plain and swarm: the counts and the statistics cover the walks
// up to the first failing one, in index order, whichever later walks a
// worker happened to start.
func TestWalk_ReportIndependentOfWorkers(t *testing.T) {
	s := spec.Default()
	override(t, s, spec.Source, "Pinned", "LeaseRenewed", spec.SourceFirst, "Released",
		"DisarmLease", "ReleaseSource", "ReportSourceReleased", "Complete")
	cfg := mustConfig(t, twoByTwo)
	c, err := New(interpreted(t, s), cfg, cfg.Runs[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, sched := range []schedule{scheduleUniform, schedulePositions, schedulePCT} {
		for _, swarm := range []bool{false, true} {
			opts := walkOptions{Seed: 11, Walks: 300, Steps: 80, Swarm: swarm, sched: sched, Workers: 1}
			one := c.walk(context.Background(), opts)
			if one.Violation == nil {
				t.Fatalf("%s swarm=%v: 300 walks found nothing", sched.name(), swarm)
			}
			for try := 0; try < 5; try++ {
				opts.Workers = 2
				two := c.walk(context.Background(), opts)
				if one.Walks != two.Walks || one.Moves != two.Moves || one.Distinct != two.Distinct || one.Failing != two.Failing {
					t.Fatalf("%s swarm=%v: one worker: %d walks, %d moves, %d distinct, walk %d failed; two: %d, %d, %d, %d",
						sched.name(), swarm, one.Walks, one.Moves, one.Distinct, one.Failing, two.Walks, two.Moves, two.Distinct, two.Failing)
				}
				a, b := one.stats, two.stats
				if fmt.Sprint(a.Coverage.Rows, a.Kinds, a.Faults, a.Lengths, a.Ended, a.Horizon, one.schedule) !=
					fmt.Sprint(b.Coverage.Rows, b.Kinds, b.Faults, b.Lengths, b.Ended, b.Horizon, two.schedule) {
					t.Fatalf("%s swarm=%v: statistics differ between one worker and two:\n%+v\n%+v", sched.name(), swarm, a, b)
				}
			}
		}
	}
}
