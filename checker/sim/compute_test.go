package sim

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/sim/workload"
	"github.com/handoffcheck/handoffcheck/model"
)

// policyConfig is the default configuration run under a policy, with
// the engine the policy needs.
func policyConfig(pol string) *cluster.Config {
	cfg := cluster.DefaultConfig()
	cfg.Policy = pol
	_ = cfg.SetPolicy(pol)
	if pol == "destination-first" {
		cfg.Engine = model.SGLang
	}
	return cfg
}

// logged runs a workload and reads its observation log back.
func logged(t *testing.T, cfg *cluster.Config, reqs []cluster.Request) []obslog.Fact {
	t.Helper()
	var buf bytes.Buffer
	w, err := obslog.NewWriter(&buf, cfg.LogHeader(obslog.All))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), cfg, &SliceSource{Reqs: reqs}, Options{Log: w})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil {
		t.Fatalf("%v\n%s", res.Violation, joinHistory(res.Violation.History))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	rd, err := obslog.NewReader(&buf, "run.log")
	if err != nil {
		t.Fatal(err)
	}
	var out []obslog.Fact
	for {
		f, err := rd.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
}

// TestCancelledPrefillFreesItsWorker: with one prefill worker, request a
// (200 ms of prefill) is cancelled at 5 ms and request b (100 ms) arrives
// at 100 ms. The worker stopped a's prefill at the cancel, so b computes
// at once and pins 100 ms after it was dispatched (at 200.5 ms, not
// 300.5 ms behind the rest of a's prefill). The same in the disabled mode:
// b's prefill ends at 200.5 ms.
func TestCancelledPrefillFreesItsWorker(t *testing.T) {
	reqs := []cluster.Request{
		{Index: 0, ID: "a", ArrivalUS: 0, PromptTokens: 12_000, OutputTokens: 8, CancelUS: 5_000},
		{Index: 1, ID: "b", ArrivalUS: 100_000, PromptTokens: 6_000, OutputTokens: 8, CancelUS: -1},
	}
	for _, pol := range []string{"source-first", "destination-first"} {
		t.Run(pol, func(t *testing.T) {
			cfg := policyConfig(pol)
			cfg.Prefill.Workers, cfg.JitterUS = 1, 0
			var stopped, dispatched, pinned int64 = -1, -1, -1
			for _, f := range logged(t, cfg, reqs) {
				switch {
				case f.Attempt == "a" && f.Kind == obslog.PrefillStopped:
					stopped = f.TUS
				case f.Attempt == "b" && f.Kind == obslog.PrefillDispatched:
					dispatched = f.TUS
				case f.Attempt == "b" && f.Kind == obslog.Pinned:
					pinned = f.TUS
				}
			}
			if stopped < 0 || stopped > 10_000 || dispatched < 100_000 {
				t.Fatalf("a stopped at %d µs, b dispatched at %d µs: the scenario did not run as meant", stopped, dispatched)
			}
			if want := dispatched + 100_000; pinned != want {
				t.Fatalf("b pinned at %s, want %s: 100 ms after its dispatch at %s, the worker being free since a's prefill stopped at %s",
					fmtMS(pinned), fmtMS(want), fmtMS(dispatched), fmtMS(stopped))
			}
		})
	}
	t.Run("aggregated", func(t *testing.T) {
		cfg := policyConfig(cluster.Aggregated)
		cfg.Decode.Workers = 1
		var steps []Step
		if _, err := Run(context.Background(), cfg, &SliceSource{Reqs: reqs}, Options{DisabledSteps: &steps}); err != nil {
			t.Fatal(err)
		}
		done := int64(-1)
		for _, st := range steps {
			if st.Request == 1 && st.Kind == StepPrefill {
				done = st.TUS
			}
		}
		if done != 200_500 {
			t.Fatalf("b's prefill done at %s, want 200.500ms (admitted at 100.5 ms, a cancelled at 5 ms): %v", fmtMS(done), steps)
		}
	})
}

// generated draws a workload with the default generator's shapes at a
// rate and share of cancels.
func generated(t *testing.T, seed uint64, n int, rate, cancels float64) []cluster.Request {
	t.Helper()
	g := workload.DefaultGen()
	g.Seed, g.Requests, g.RatePerSec, g.CancelFraction = seed, n, rate, cancels
	var buf bytes.Buffer
	w, err := workload.NewWriter(&buf, g.Header("generated"))
	if err != nil {
		t.Fatal(err)
	}
	if err := workload.Generate(g, w); err != nil {
		t.Fatal(err)
	}
	rd, err := workload.NewReader(&buf, "generated")
	if err != nil {
		t.Fatal(err)
	}
	var out []cluster.Request
	for {
		r, err := rd.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		q := cluster.Request{Index: r.Index, ArrivalUS: r.ArrivalUS, PromptTokens: model.Tokens(r.PromptTokens), OutputTokens: model.Tokens(r.OutputTokens),
			PrefixGroup: r.PrefixGroup, PrefixTokens: model.Tokens(r.PrefixTokens), CancelUS: -1}
		if r.HasCancel {
			q.CancelUS = r.CancelUS
		}
		out = append(out, q)
	}
}

// prefillWaits reads, from a run's log, how long each pinned prefill
// waited for its worker (from its dispatch to the start of its compute,
// which ends at its pin), and what a first-in-first-out worker would
// have made it wait: a worker that computes its dispatched prefills one
// at a time in dispatch order, and is free again when a prefill ends or
// is stopped. It returns the two mean waits in ms and how many prefills
// waited otherwise than the reference says.
func prefillWaits(t *testing.T, cfg *cluster.Config, reqs []cluster.Request, facts []obslog.Fact) (got, want float64, n, differ int) {
	t.Helper()
	type job struct {
		proc                   int
		ready, pinned, stopped int64
		dur                    int64
	}
	jobs := map[string]*job{}
	var order []*job
	for _, f := range facts {
		if f.Proc < 1 || f.Proc > cfg.Prefill.Workers {
			continue
		}
		switch f.Kind {
		case obslog.PrefillDispatched:
			i, err := strconv.Atoi(strings.TrimPrefix(strings.Split(f.Attempt, "/")[0], "r"))
			if err != nil || i >= len(reqs) {
				t.Fatalf("attempt %q names no request", f.Attempt)
			}
			wc := cfg.AttemptWorld(reqs[i].PromptTokens, 0)
			if err := wc.Prepare(); err != nil {
				t.Fatal(err)
			}
			j := &job{proc: f.Proc, ready: f.TUS, pinned: -1, stopped: -1, dur: cfg.ComputeUS(wc)}
			jobs[f.Attempt] = j
			order = append(order, j)
		case obslog.Pinned:
			jobs[f.Attempt].pinned = f.TUS
		case obslog.PrefillStopped:
			if j := jobs[f.Attempt]; j.pinned < 0 {
				j.stopped = f.TUS
			}
		}
	}
	free := make([]int64, cfg.Prefill.Workers+1)
	var sumGot, sumWant int64
	for _, j := range order {
		start := max(j.ready, free[j.proc])
		switch {
		case j.stopped >= 0 && j.stopped <= start:
			// Stopped while it waited: it never computed.
		case j.stopped >= 0 && j.stopped < start+j.dur:
			free[j.proc] = j.stopped
		default:
			free[j.proc] = start + j.dur
		}
		if j.pinned >= 0 {
			n++
			sumGot += j.pinned - j.dur - j.ready
			sumWant += start - j.ready
			if j.pinned != start+j.dur {
				differ++
			}
		}
	}
	if n == 0 {
		t.Fatal("no prefill was pinned")
	}
	return float64(sumGot) / float64(n) / 1000, float64(sumWant) / float64(n) / 1000, n, differ
}

// TestPrefillQueue_FirstInFirstOut: at 80% of the prefill workers'
// compute, with 20% and with 3% of the requests cancelled by the client,
// every pinned prefill waits for its worker exactly as long as a
// first-in-first-out worker that gives back a stopped prefill's time
// makes it wait. Decode has room to spare, so that the prefill worker
// is the only queue.
func TestPrefillQueue_FirstInFirstOut(t *testing.T) {
	for _, pol := range []string{"source-first", "destination-first"} {
		for _, cancels := range []float64{0.20, 0.03} {
			cfg := policyConfig(pol)
			cfg.Decode.Workers = 8
			// The default workload's prompts average 2048 tokens.
			rate := 0.8 * float64(cfg.Prefill.Workers) * cfg.Prefill.TokensPerSec / 2048
			reqs := generated(t, 1, 2000, rate, cancels)
			got, want, n, differ := prefillWaits(t, cfg, reqs, logged(t, cfg, reqs))
			t.Logf("%s, %.0f%% cancelled: %d prefills pinned, mean wait %.3f ms, first-in-first-out %.3f ms (%.4fx)", pol, cancels*100, n, got, want, got/want)
			if differ > 0 {
				t.Errorf("%s, %.0f%% cancelled: %d of %d prefills waited otherwise than first in, first out: mean wait %.3f ms, the reference's %.3f ms (%.4fx)",
					pol, cancels*100, differ, n, got, want, got/want)
			}
		}
	}
}
