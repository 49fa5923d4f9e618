package sim

import (
	"bytes"
	"context"
	"encoding/json"
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
	cfg.Engine, cfg.AdoptCanonical = engine, true
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
// keeps both: neither adopts, and the summary has no adoption line.
func TestAdoption_OthersAsTheyBehave(t *testing.T) {
	for _, e := range []model.Engine{model.SGLang, model.TRTLLM} {
		cfg, reqs := twoOfAGroup(e)
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
	cfg.AdoptCanonical = true
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
