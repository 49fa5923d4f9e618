package checker

import (
	"context"
	"testing"

	"github.com/handoffcheck/handoffcheck/spec"
)

// Walk reports are the same for any number of workers: the counts cover
// the walks up to the first failing one, in index order, whichever later
// walks a worker happened to start.
func TestWalk_ReportIndependentOfWorkers(t *testing.T) {
	s := spec.Default()
	override(t, s, spec.Source, "Pinned", "LeaseRenewed", spec.SourceFirst, "Released",
		"DisarmLease", "ReleaseSource", "ReportSourceReleased", "Complete")
	cfg := mustConfig(t, twoByTwo)
	c, err := New(interpreted(t, s), cfg, cfg.Runs[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, swarm := range []bool{false, true} {
		opts := WalkOptions{Seed: 11, Walks: 300, Steps: 80, Swarm: swarm, Workers: 1}
		one := c.Walk(context.Background(), opts)
		if one.Violation == nil {
			t.Fatalf("swarm=%v: 300 walks found nothing", swarm)
		}
		for try := 0; try < 5; try++ {
			opts.Workers = 2
			two := c.Walk(context.Background(), opts)
			if one.Walks != two.Walks || one.Moves != two.Moves || one.Distinct != two.Distinct || one.Failing != two.Failing {
				t.Fatalf("swarm=%v: one worker: %d walks, %d moves, %d distinct, walk %d failed; two: %d, %d, %d, %d",
					swarm, one.Walks, one.Moves, one.Distinct, one.Failing, two.Walks, two.Moves, two.Distinct, two.Failing)
			}
		}
	}
}
