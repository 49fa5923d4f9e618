package sim

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/model"
)

// twoOfAGroup is two requests of one prefix group on one decode worker,
// the second activating while the first decodes: neither finds a prefix
// hit (the worker's cache holds nothing when they are routed), so both
// receive the whole prompt, the 32 blocks of the shared 512-token prefix
// among it.
func twoOfAGroup(engine model.Engine) (*cluster.Config, []cluster.Request) {
	cfg := policyConfig("source-first")
	if engine == model.SGLang {
		cfg = policyConfig("destination-first")
	}
	cfg.Engine = engine
	cfg.Prefill.Workers, cfg.Decode.Workers, cfg.JitterUS = 1, 1, 0
	return cfg, []cluster.Request{
		{Index: 0, ArrivalUS: 0, PromptTokens: 1024, OutputTokens: 100, PrefixGroup: "g", PrefixTokens: 512, CancelUS: -1},
		{Index: 1, ArrivalUS: 100_000, PromptTokens: 1024, OutputTokens: 10, PrefixGroup: "g", PrefixTokens: 512, CancelUS: -1},
	}
}

// vLLM adopts canonical blocks at activation: the second request's
// destination already holds the first's 32 prefix blocks, keeps them and
// frees the 32 it received, so while both decode the worker uses 32
// blocks fewer than the two requests hold between them; when they end
// the share ends with them and the worker holds nothing. The summary
// says how many blocks were adopted, in text and JSON.
func TestAdoption_VLLMAdoptsAtActivation(t *testing.T) {
	cfg, reqs := twoOfAGroup(model.VLLM)
	const n = 512 / 16
	both := false
	res := runWatched(t, cfg, reqs, func(s *Sim) func(*request) {
		return func(r *request) {
			a, b := s.active[0], s.active[1]
			if a == nil || b == nil || a.st.W.H[0].Dst != model.DstActive || b.st.W.H[0].Dst != model.DstActive {
				return
			}
			both = true
			k := s.workers[1]
			if held := a.Hold[1].Used() + b.Hold[1].Used(); k.KVUsed()+n != held {
				t.Errorf("at %s both decode: the worker uses %d blocks, the requests hold %d, want %d shared", fmtMS(s.now), int64(k.KVUsed()), int64(held), n)
			}
		}
	})
	if !both {
		t.Fatal("the two requests never decoded together")
	}
	s := res.Summary
	if s.AdoptedBlocks == nil || *s.AdoptedBlocks != n {
		t.Fatalf("adopted %v blocks, want %d", s.AdoptedBlocks, n)
	}
	if s.Succeeded != 2 {
		t.Errorf("%d of 2 succeeded", s.Succeeded)
	}
	var out bytes.Buffer
	res.WriteSummary(&out)
	if !bytes.Contains(out.Bytes(), []byte("  canonical blocks: 32 duplicate blocks adopted at activation\n")) {
		t.Errorf("the summary does not count the adopted blocks:\n%s", out.String())
	}
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(js, []byte(`"adopted_blocks":32`)) {
		t.Errorf("the JSON summary has no adopted_blocks 32: %s", js)
	}
}

// sglang frees a duplicate when it inserts the request's KV into its
// radix cache, at the request's end, not at activation, and trtllm
// keeps both: neither adopts, even when the configuration asks for it,
// and the summary has no adoption line. vLLM with adoption turned off
// adopts nothing either.
func TestAdoption_OthersAsTheyBehave(t *testing.T) {
	on, off := true, false
	for _, c := range []struct {
		e     model.Engine
		adopt *bool
	}{{model.SGLang, nil}, {model.SGLang, &on}, {model.TRTLLM, nil}, {model.TRTLLM, &on}, {model.VLLM, &off}} {
		e := c.e
		cfg, reqs := twoOfAGroup(e)
		cfg.AdoptCanonical = c.adopt
		res, err := Run(context.Background(), cfg, &SliceSource{Reqs: reqs}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Violation != nil {
			t.Fatalf("%s: %v", e, res.Violation)
		}
		if res.Summary.AdoptedBlocks != nil {
			t.Errorf("%s adopted %d blocks at activation", e, *res.Summary.AdoptedBlocks)
		}
		var out bytes.Buffer
		res.WriteSummary(&out)
		if bytes.Contains(out.Bytes(), []byte("adopted at activation")) {
			t.Errorf("%s: the summary speaks of adoption:\n%s", e, out.String())
		}
	}
}

// The shares end with the requests that hold them, whatever ends them:
// a busy group of requests on few decode workers, with a decode worker
// restarting and client cancels, runs every invariant on every step
// (blocks conserved, the pool never overcommitted) and drains.
func TestAdoption_SharesEndWithTheirRequests(t *testing.T) {
	cfg := policyConfig("source-first")
	reqs := randomWorkload(5, 300, 20_000, 0.1)
	for i := range reqs {
		reqs[i].PrefixGroup, reqs[i].PrefixTokens = "g", min(reqs[i].PromptTokens, 512)
	}
	faults := []cluster.Fault{{AtUS: 1_500_000, Kind: "restart", Worker: 2, Request: -1}}
	res, err := Run(context.Background(), cfg, &SliceSource{Reqs: reqs}, Options{Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil {
		t.Fatalf("%v\n%s", res.Violation, joinHistory(res.Violation.History))
	}
	if a := res.Summary.AdoptedBlocks; a == nil || *a == 0 {
		t.Fatalf("no block adopted in a run of one prefix group: %v", a)
	}
	t.Logf("%d blocks adopted, %d requests", *res.Summary.AdoptedBlocks, res.Summary.Requests)
}

// When the request that owns the canonical blocks ends first, the
// oldest of its adopters holds them in its place: requests 1 and 2
// adopted request 0's prefix blocks; once 0 has freed its own, 1 and 2 still
// share one copy, so the worker uses 32 blocks fewer than they hold.
func TestAdoption_AnAdopterInheritsTheCanonicalBlocks(t *testing.T) {
	cfg, reqs := twoOfAGroup(model.VLLM)
	reqs[0].OutputTokens = 10
	reqs[1].ArrivalUS, reqs[1].OutputTokens = 50_000, 100
	reqs = append(reqs, cluster.Request{Index: 2, ArrivalUS: 100_000, PromptTokens: 1024, OutputTokens: 100, PrefixGroup: "g", PrefixTokens: 512, CancelUS: -1})
	const n = 512 / 16
	inherited := false
	res := runWatched(t, cfg, reqs, func(s *Sim) func(*request) {
		return func(r *request) {
			o, a, b := s.active[0], s.active[1], s.active[2]
			if o != nil && (o.st.W.H[0].Dst == model.DstActive || o.st.W.H[0].DstKept) {
				return // request 0 still holds its blocks
			}
			if a == nil || b == nil || a.st.W.H[0].Dst != model.DstActive || b.st.W.H[0].Dst != model.DstActive {
				return
			}
			inherited = true
			if held := a.Hold[1].Used() + b.Hold[1].Used(); s.workers[1].KVUsed()+n != held {
				t.Errorf("at %s, request 0 gone: the worker uses %d blocks, requests 1 and 2 hold %d, want %d shared", fmtMS(s.now), int64(s.workers[1].KVUsed()), int64(held), n)
			}
			if len(s.shares) != 1 || s.shares[0].owner != a || s.shares[0].adopter != b {
				t.Errorf("at %s the shares are %+v, want request 2 sharing request 1's blocks", fmtMS(s.now), s.shares)
			}
		}
	})
	if !inherited {
		t.Fatal("requests 1 and 2 never decoded together after request 0 ended")
	}
	if a := res.Summary.AdoptedBlocks; a == nil || *a != 2*n {
		t.Fatalf("adopted %v blocks, want %d", a, 2*n)
	}
}

// ledgerExact says how worker w's ledger differs from what the requests
// hold there, each shared block counted once, or "": its active blocks
// are what the requests hold active less each share's blocks, and a
// share lasts only while both its requests hold their blocks active on
// the worker; its kept cache is what the released requests keep less
// the blocks each left active with the request it shared them with; its
// pinned, reserved and prefix blocks are the requests'; no category is
// negative and they sum to the worker's capacity.
func ledgerExact(s *Sim, w int) string {
	var held model.Holdings
	var short, shared model.Blocks
	for _, r := range s.active {
		if r.p == w {
			held = held.Plus(r.Hold[0])
		}
		if r.d != w {
			continue
		}
		held = held.Plus(r.Hold[1])
		if r.keptShort > 0 {
			if x := &r.st.W.H[0]; !x.DstKept || r.keptShort > r.Hold[1].Kept() {
				return fmt.Sprintf("request %d counts %d kept blocks shared, keeping %d (kept: %v)", r.Index, int64(r.keptShort), int64(r.Hold[1].Kept()), x.DstKept)
			}
			short += r.keptShort
		}
	}
	for _, sh := range s.shares {
		if sh.w != w {
			continue
		}
		for _, q := range []*request{sh.adopter, sh.owner} {
			if s.active[q.Index] != q || q.d != w || q.st.W.H[0].Dst != model.DstActive || q.Hold[1].Active() < sh.n {
				return fmt.Sprintf("request %d shares %d blocks, but does not hold them active on the worker (its destination: %v)", q.Index, int64(sh.n), q.st.W.H[0].Dst)
			}
		}
		shared += sh.n
	}
	k := s.workers[w]
	switch {
	case k.Active != held.Active()+k.Background-shared:
		return fmt.Sprintf("active %d, the requests hold %d active (background %d), %d of them shared", int64(k.Active), int64(held.Active()), int64(k.Background), int64(shared))
	case k.Kept != held.Kept()-short:
		return fmt.Sprintf("kept %d, the requests keep %d, %d of them left active with a sharer", int64(k.Kept), int64(held.Kept()), int64(short))
	case k.Pinned != held.Pinned() || k.Reserved != held.Reserved() || k.Prefix != held.Prefix():
		return fmt.Sprintf("pinned %d, reserved %d, prefix %d; the requests hold %d, %d, %d", int64(k.Pinned), int64(k.Reserved), int64(k.Prefix), int64(held.Pinned()), int64(held.Reserved()), int64(held.Prefix()))
	case k.Free < 0 || k.Cached < 0 || k.Kept < 0 || k.Active < 0:
		return fmt.Sprintf("a category is negative: %+v", k)
	case k.Free+k.Cached+k.Kept+k.Prefix+k.Active+k.Pinned+k.Reserved != s.cfg.Capacity(w):
		return fmt.Sprintf("the categories sum to %d, capacity %d", int64(k.Free+k.Cached+k.Kept+k.Prefix+k.Active+k.Pinned+k.Reserved), int64(s.cfg.Capacity(w)))
	}
	return ""
}

// sharedFaults is a seeded plan of faults for a workload of n requests
// on a cluster of workers: message loss, duplicates, hangs, failed
// transfers, delays, cancels and aborts aimed at requests, and restarts
// of the decode workers (where the shares are) and a prefill worker.
func sharedFaults(seed uint64, n int, cfg *cluster.Config, endUS int64) []cluster.Fault {
	rng := rand.New(rand.NewPCG(seed, 33))
	var out []cluster.Fault
	for i := 0; i < n/10; i++ {
		f := cluster.Fault{Request: rng.IntN(n), Worker: -1}
		switch rng.IntN(7) {
		case 0:
			f.Kind, f.To = "loss", []string{"source", "destination"}[rng.IntN(2)]
		case 1:
			f.Kind = "duplicate"
		case 2:
			f.Kind = "hang"
		case 3:
			f.Kind = "transfer_failure"
		case 4:
			f.Kind, f.Side = "delay", []string{"source", "destination"}[rng.IntN(2)]
		case 5:
			f.Kind, f.AtUS = "cancel", rng.Int64N(endUS)
		case 6:
			f.Kind, f.AtUS, f.Side = "abort", rng.Int64N(endUS), []string{"source", "destination"}[rng.IntN(2)]
		}
		out = append(out, f)
	}
	for i := 0; i < 3; i++ {
		out = append(out, cluster.Fault{AtUS: rng.Int64N(endUS), Kind: "restart", Request: -1, Worker: cfg.Prefill.Workers + rng.IntN(cfg.Decode.Workers)})
	}
	out = append(out, cluster.Fault{AtUS: rng.Int64N(endUS), Kind: "restart", Request: -1, Worker: rng.IntN(cfg.Prefill.Workers)})
	slices.SortStableFunc(out, func(a, b cluster.Fault) int { return cmp.Compare(a.AtUS, b.AtUS) })
	return out
}

// Every worker's ledger is exact at every step with adoption on: long
// seeded runs of requests in two prefix groups on few decode workers,
// with seeded faults, under both policies, checked after every step of
// every request (ledgerExact). The runs release shared blocks into the
// cache and evict them, abort and restart sharers, and adopt thousands
// of blocks.
func TestAdoption_LedgerExactAtEveryStep(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4, 5, 6}
	if testing.Short() {
		seeds = seeds[:2]
	}
	var adopted, keptShort int64
	for _, pol := range []string{"source-first", "destination-first"} {
		for _, seed := range seeds {
			cfg := policyConfig(pol)
			cfg.Engine = model.VLLM
			cfg.Decode.Workers = 2
			const n = 400
			reqs := randomWorkload(seed, n, 15_000, 0.05)
			for i := range reqs {
				g := i % 2
				reqs[i].PrefixGroup = string(rune('a' + g))
				reqs[i].PrefixTokens = min(reqs[i].PromptTokens, model.Tokens(512*(g+1)))
			}
			end := reqs[n-1].ArrivalUS
			s, err := newSim(cfg, &SliceSource{Reqs: reqs}, Options{Faults: sharedFaults(seed, n, cfg, end)})
			if err != nil {
				t.Fatal(err)
			}
			bad := ""
			s.watch = func(r *request) {
				if r.keptShort > 0 {
					keptShort++
				}
				for w := range s.workers {
					if why := ledgerExact(s, w); why != "" && bad == "" {
						bad = fmt.Sprintf("%s seed %d: at %s, after a step of request %d, worker %d: %s", pol, seed, fmtMS(s.now), r.Index, w, why)
					}
				}
			}
			res, err := s.run(context.Background(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Violation != nil {
				t.Fatalf("%s seed %d: %v\n%s", pol, seed, res.Violation, joinHistory(res.Violation.History))
			}
			if bad != "" {
				t.Fatal(bad)
			}
			if res.Summary.AdoptedBlocks != nil {
				adopted += *res.Summary.AdoptedBlocks
			}
		}
	}
	t.Logf("%d blocks adopted; %d steps saw a released sharer's kept blocks short", adopted, keptShort)
	if adopted == 0 || keptShort == 0 {
		t.Errorf("the runs adopted %d blocks and released a sharer into the cache %d times: the check saw too little", adopted, keptShort)
	}
}
