package live

import (
	"io"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
)

// A hybrid model's grouped caches run live as they run on the clock: the
// workers get the groups through the configuration they are started
// with (its JSON form), price and hold each attempt by them, and the
// handoffs go through the same transitions as in the simulator.
func TestLiveReplayParity_Grouped(t *testing.T) {
	data, err := os.ReadFile("../../testdata/sim/grouped.json")
	if err != nil {
		t.Fatal(err)
	}
	grouped, err := cluster.ParseConfig("grouped.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if grouped.Grouped == nil || grouped.DecodeGrouped == nil {
		t.Fatal("testdata/sim/grouped.json has no grouped profiles")
	}
	for _, policy := range []string{"source-first", "destination-first"} {
		t.Run(policy, func(t *testing.T) {
			cfg := parityConfig(t, policy)
			cfg.Transfer, cfg.Grouped, cfg.DecodeLinear, cfg.DecodeGrouped = grouped.Transfer, grouped.Grouped, grouped.DecodeLinear, grouped.DecodeGrouped
			back, err := cluster.ParseConfig("round-trip.json", cfg.JSON())
			if err != nil {
				t.Fatalf("the grouped configuration's JSON form, which the workers start with, does not read back: %v", err)
			}
			if !cmp.Equal(back.AttemptWorld(8192, 0).Grouped, cfg.AttemptWorld(8192, 0).Grouped) {
				t.Fatal("the workers would read another grouped profile than the coordinator's")
			}
			want, _ := simTransitions(t, cfg, nil)
			got, rep := liveTransitions(t, cfg, nil, &GoSpawner{Errors: io.Discard})
			if rep.TooLate {
				t.Skipf("the machine is too loaded to compare: %s", rep.LateWhy)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("live differs from the simulator (-simulate +live):\n%s", d)
			}
			if !rep.Clean {
				t.Errorf("leak check: %v", rep.Leaks)
			}
		})
	}
}
