package live

import (
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
)

// A prefill cancelled while it computes gives its worker back at once, as
// in the simulator (TestCancelledPrefillFreesItsWorker there): the next
// prefill computes from its dispatch, not from when the cancelled one
// would have ended. The worker used to book the whole compute of the
// cancelled prefill and keep it, so the next one waited out 100
// configured seconds. The gap between the two answers (1 s against 100 s
// of configured time) dwarfs any scheduling noise.
func TestCancelledPrefillFreesItsWorker(t *testing.T) {
	for _, policy := range []string{"source-first", "destination-first"} {
		t.Run(policy, func(t *testing.T) {
			cfg := parityConfig(t, policy)
			cfg.Prefill.Workers = 1
			cfg.Prefill.TokensPerSec = 120 // a: 12,000 tokens, 100 s; b: 120 tokens, 1 s
			reqs := []cluster.Request{
				{Index: 0, ID: "a", ArrivalUS: 0, PromptTokens: 12_000, OutputTokens: 4, CancelUS: 5_000},
				{Index: 1, ID: "b", ArrivalUS: 2_000_000, PromptTokens: 120, OutputTokens: 4, CancelUS: -1},
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			rep, err := Run(ctx, Options{Config: cfg, Workload: &slice{rs: reqs}, Rewind: again(reqs), Scale: 0.02, Dir: dirFor(t), Spawn: &GoSpawner{}})
			if err != nil {
				t.Fatal(err)
			}
			dispatched, pinned := int64(-1), int64(-1)
			for _, name := range rep.Logs {
				for _, f := range factsOf(t, name) {
					switch {
					case f.Attempt == "b" && f.Kind == obslog.PrefillDispatched:
						dispatched = f.TUS
					case f.Attempt == "b" && f.Kind == obslog.Pinned:
						pinned = f.TUS
					}
				}
			}
			if dispatched < 0 || pinned < 0 {
				rep.Write(os.Stderr)
				t.Fatalf("b dispatched at %d µs, pinned at %d µs: the run did not go as meant", dispatched, pinned)
			}
			// Wall-clock microseconds to configured ones.
			took := float64(pinned-dispatched) / rep.Scale
			t.Logf("b pinned %.3f configured seconds after its dispatch", took/1e6)
			if took > 20e6 {
				rep.Write(os.Stderr)
				t.Fatalf("b pinned %.1f configured seconds after its dispatch, want about 1 s (its own compute): the cancelled prefill kept the worker", took/1e6)
			}
			judge(t, rep)
		})
	}
}

// factsOf reads every fact of one process's log.
func factsOf(t *testing.T, name string) []obslog.Fact {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := obslog.NewReader(f, name)
	if err != nil {
		t.Fatal(err)
	}
	var out []obslog.Fact
	for {
		x, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, x)
	}
}
