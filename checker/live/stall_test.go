package live

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/model"
)

// TestLive_NoFalseStall: the coordinator asks whether its attempts are
// stuck after every silence of a millisecond, in runs of the built-in
// tables, whose attempts always end: every answer must name what is
// still to happen, so the runs end clean, with no stall of either kind.
// A worker that answered "nothing" while a move, a deadline or a
// transfer of its was still to come would end a run on a false
// Quiescence here.
func TestLive_NoFalseStall(t *testing.T) {
	for _, policy := range []string{"source-first", "destination-first"} {
		t.Run(policy, func(t *testing.T) {
			cfg := cluster.DefaultConfig()
			if policy == "destination-first" {
				cfg.Engine = model.SGLang
			}
			if err := cfg.SetPolicy(policy); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			// Every request arrives at once: the arrivals are soon all out,
			// and the rest of the run is the attempts in flight, asked about.
			// Each decodes 400 tokens (80 ms on the wall clock), silent
			// but for the worker's own scheduled steps.
			rs := spaced(20, 0)
			for i := range rs {
				rs[i].OutputTokens = 400
			}
			rep, err := Run(ctx, Options{Config: cfg, Workload: &slice{rs: rs}, Rewind: again(rs), Scale: 0.01, Dir: dirFor(t), Spawn: &GoSpawner{},
				StallAsk: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d questions", rep.StallQuestions)
			if rep.Stall != nil || !rep.Clean || rep.Succeeded != 20 || rep.StallQuestions == 0 {
				rep.Write(os.Stderr)
				t.Fatalf("stall %+v after %d questions; want 20 clean successes, questions asked, and no stall", rep.Stall, rep.StallQuestions)
			}
			judge(t, rep)
		})
	}
}
