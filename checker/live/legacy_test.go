package live

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
)

func legacyConfig(t *testing.T) *cluster.Config {
	t.Helper()
	cfg := cluster.DefaultConfig()
	if err := cfg.SetPolicy(cluster.Disabled); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestLegacySmoke: the legacy path over real processes: every request
// succeeds, nothing is held on a worker or a router, nothing is found.
func TestLegacySmoke(t *testing.T) {
	cfg := legacyConfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rs := spaced(20, 200_000)
	rep, err := Run(ctx, Options{Config: cfg, Workload: &slice{rs: rs}, Rewind: again(rs), Scale: 0.01, Dir: dirFor(t), Spawn: &GoSpawner{}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean || rep.Succeeded != 20 || len(rep.Findings) > 0 || rep.Policy != cluster.Disabled {
		rep.Write(os.Stderr)
		t.Fatalf("want 20 clean successes of policy disabled")
	}
}
