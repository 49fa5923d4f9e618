package sim

import (
	"context"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/model"
)

// reference is a plain aggregated serving loop, written apart from the
// simulator: requests go to the worker with the fewest requests (or in
// turn), wait in arrival order for their prompt's blocks and a slot,
// prefill one at a time per worker in the order admitted, decode, and
// free. A worker serves its prefill line: it computes the line's first
// request, and a cancel takes a request out of the line, so a cancelled
// prefill frees the worker for the next at once. At one instant,
// finishes come first, then cancels, then prefill completions, then
// arrivals; ties by request index.
func reference(cfg *cluster.Config, reqs []cluster.Request, roundRobin bool) []Step {
	type req struct {
		cluster.Request
		w                          int
		blocks                     model.Blocks
		admitted, done             bool
		arriveAt, prefillAt, endAt int64
		cancelAt                   int64
	}
	type worker struct {
		free    model.Blocks
		slots   int
		line    []*req // admitted, prefill not done; the first computes
		n       int
		waiting []*req
	}
	const never = int64(1) << 62
	ws := make([]worker, cfg.Decode.Workers)
	for i := range ws {
		ws[i].free = cfg.Decode.CapacityBlocks
	}
	rs := make([]*req, len(reqs))
	for i, r := range reqs {
		rs[i] = &req{Request: r, blocks: model.BlocksFor(r.PromptTokens, cfg.Transfer.BlockSize),
			arriveAt: r.ArrivalUS + cfg.LatencyUS, prefillAt: never, endAt: never, cancelAt: never}
		if r.CancelUS >= 0 {
			rs[i].cancelAt = max(r.CancelUS, rs[i].arriveAt)
		}
	}
	var out []Step
	now := int64(0)
	turn := 0
	emit := func(r *req, kind string) {
		out = append(out, Step{TUS: now, Request: r.Index, Worker: cfg.Prefill.Workers + r.w, Kind: kind})
	}
	// serve starts the first prefill of a worker's line if none computes.
	serve := func(wk *worker) {
		if len(wk.line) > 0 && wk.line[0].prefillAt == never {
			r := wk.line[0]
			r.prefillAt = now + int64(math.Round(float64(r.PromptTokens)*1e6/cfg.Prefill.TokensPerSec))
		}
	}
	admit := func(w int) {
		wk := &ws[w]
		for len(wk.waiting) > 0 {
			r := wk.waiting[0]
			if r.blocks > wk.free || wk.slots >= cfg.Decode.Slots {
				return
			}
			wk.waiting = wk.waiting[1:]
			wk.free -= r.blocks
			wk.slots++
			r.admitted = true
			emit(r, StepAdmit)
			wk.line = append(wk.line, r)
			serve(wk)
		}
	}
	leave := func(wk *worker, r *req) {
		for i, q := range wk.line {
			if q == r {
				wk.line = append(wk.line[:i], wk.line[i+1:]...)
				break
			}
		}
		serve(wk)
	}
	release := func(r *req) {
		r.done = true
		r.prefillAt, r.endAt, r.cancelAt = never, never, never
		wk := &ws[r.w]
		wk.n--
		if r.admitted {
			leave(wk, r)
			wk.free += r.blocks
			wk.slots--
		} else {
			for i, q := range wk.waiting {
				if q == r {
					wk.waiting = append(wk.waiting[:i], wk.waiting[i+1:]...)
					break
				}
			}
		}
		admit(r.w)
	}
	for {
		// The next thing to happen, by time, then kind, then request.
		var next *req
		kind, at := 0, never
		for _, r := range rs {
			for k, t := range []int64{r.endAt, r.cancelAt, r.prefillAt, r.arriveAt} {
				if t < at || (t == at && (k < kind || (k == kind && next != nil && r.Index < next.Index))) {
					next, kind, at = r, k, t
				}
			}
		}
		if next == nil {
			return out
		}
		now = at
		r := next
		switch kind {
		case 0:
			emit(r, StepFinish)
			release(r)
		case 1:
			emit(r, StepCancel)
			release(r)
		case 2:
			r.prefillAt = never
			leave(&ws[r.w], r)
			emit(r, StepPrefill)
			r.endAt = now + int64(r.OutputTokens)*cfg.Decode.PerTokenUS
		case 3:
			r.arriveAt = never
			w := 0
			if roundRobin {
				w = turn % len(ws)
				turn++
			} else {
				for i := range ws {
					if ws[i].n < ws[w].n {
						w = i
					}
				}
			}
			r.w = w
			ws[w].n++
			emit(r, StepArrive)
			ws[w].waiting = append(ws[w].waiting, r)
			admit(w)
		}
	}
}

// DisabledModeUnchanged, event for event: the aggregated path equals a
// plain aggregated loop written apart.
func TestDisabledModeUnchanged_MatchesReference(t *testing.T) {
	type wl struct {
		name string
		reqs []cluster.Request
	}
	var wls []wl
	for i, gap := range []int64{1_000, 5_000, 20_000, 50_000, 200_000} {
		wls = append(wls, wl{name: "steady", reqs: steady(150+40*i, gap).Reqs})
	}
	for i, seed := range []uint64{1, 2, 3, 4, 5, 6} {
		wls = append(wls, wl{name: "random", reqs: randomWorkload(seed, 200, int64(2_000+3_000*i), 0.1*float64(i%3))})
	}
	n := 0
	for _, w := range wls {
		for _, rr := range []cluster.Router{cluster.LeastLoaded, cluster.RoundRobin} {
			cfg := cluster.DefaultConfig()
			cfg.Aggregated = true
			cfg.DecodeRouter = rr
			cfg.Decode.Slots = 8
			var got []Step
			res, err := Run(context.Background(), cfg, &SliceSource{Reqs: w.reqs}, Options{DisabledSteps: &got})
			if err != nil {
				t.Fatal(err)
			}
			want := reference(cfg, w.reqs, rr == cluster.RoundRobin)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("%s workload %d (%s router): the disabled run differs from the aggregated reference (-reference +run):\n%s", w.name, n, rr, diff)
			}
			if res.Summary.Succeeded+res.Summary.Cancelled != len(w.reqs) {
				t.Fatalf("workload %d: %d succeeded and %d cancelled of %d", n, res.Summary.Succeeded, res.Summary.Cancelled, len(w.reqs))
			}
			n++
		}
	}
	if n < 10 {
		t.Fatalf("compared %d workloads, want at least 10", n)
	}
	t.Logf("%d workloads, event for event", n)
}
