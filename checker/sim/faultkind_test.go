package sim

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
)

// A fault of a kind the simulator does not strike is refused before the
// run, naming the plan's line: it used to pass the plan's check and then
// match no case of the dispatch, so the run reported a clean result with
// the fault silently never struck.
func TestUnknownFaultKindRefused(t *testing.T) {
	for _, kind := range []string{"meteor", "reorder", "early_timer"} {
		t.Run(kind, func(t *testing.T) {
			cfg := cluster.DefaultConfig()
			src := &SliceSource{Reqs: evenly(2, 0, 1000, 64, 4, "", 0)}
			res, err := Run(context.Background(), cfg, src, Options{Faults: []cluster.Fault{
				{File: "plan.jsonl", Line: 3, AtUS: 0, Kind: kind, Request: 1, Worker: -1},
			}})
			if err == nil {
				t.Fatalf("a %q fault ran (%d faults struck, %d missed); want it refused", kind, res.Summary.FaultsStruck, res.Summary.FaultsMissed)
			}
			if !errors.Is(err, cluster.ErrInput) || !strings.HasPrefix(err.Error(), "plan.jsonl:3: ") || !strings.Contains(err.Error(), `"`+kind+`"`) {
				t.Fatalf("got %v; want plan.jsonl:3 naming fault kind %q, wrapping ErrInput", err, kind)
			}
		})
	}
}
