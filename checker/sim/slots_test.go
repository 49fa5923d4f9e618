package sim

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/model"
)

// slotOrder counts the requests that took a decode slot while an older
// request waited for one on the same worker. A request waits from the
// step that activates it without a slot; waiters are kept in the order
// they began to wait.
type slotOrder struct {
	waiting []*request
	running map[*request]bool
	granted int // slots taken
	waited  int // requests that waited for one
	jumped  int // slots taken ahead of an older waiter
	first   string
}

func waitsForSlot(r *request) bool {
	x := &r.st.W.H[0]
	return r.d >= 0 && !r.retired && x.Dst == model.DstActive && !x.Running
}

func (o *slotOrder) watch(s *Sim) func(r *request) {
	o.running = map[*request]bool{}
	return func(r *request) {
		x := &r.st.W.H[0]
		if x.Running && !o.running[r] && r.d >= 0 {
			o.running[r] = true
			o.granted++
			for _, q := range o.waiting {
				if q == r {
					break
				}
				if q.d == r.d && waitsForSlot(q) {
					o.jumped++
					if o.first == "" {
						o.first = fmt.Sprintf("at %s request %d took a slot on worker %d while request %d waited for one", fmtMS(s.now), r.Index, r.d, q.Index)
					}
					break
				}
			}
		}
		if waitsForSlot(r) {
			if !slices.Contains(o.waiting, r) {
				o.waited++
				o.waiting = append(o.waiting, r)
			}
		}
		o.waiting = slices.DeleteFunc(o.waiting, func(q *request) bool { return !waitsForSlot(q) })
	}
}

// runWatched runs a workload with a watch on every step.
func runWatched(t *testing.T, cfg *cluster.Config, reqs []cluster.Request, watch func(*Sim) func(*request)) *Result {
	t.Helper()
	s, err := newSim(cfg, &SliceSource{Reqs: reqs}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.watch = watch(s)
	res, err := s.run(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil {
		t.Fatalf("%v\n%s", res.Violation, joinHistory(res.Violation.History))
	}
	return res
}

// TestDecodeSlot_OlderWaiterFirstAtATie: one decode worker with one
// slot. Request 0 decodes; request 1 activates meanwhile and waits for
// the slot; request 2 activates at the very instant request 0 finishes
// and frees it. Request 1, the older waiter, takes the slot, and request
// 2 waits behind it.
func TestDecodeSlot_OlderWaiterFirstAtATie(t *testing.T) {
	cfg := policyConfig("source-first")
	cfg.Decode.Slots, cfg.Decode.Workers, cfg.JitterUS = 1, 1, 0
	reqs := []cluster.Request{
		{Index: 0, ArrivalUS: 0, PromptTokens: 600, OutputTokens: 10, CancelUS: -1},
		{Index: 1, ArrivalUS: 10_000, PromptTokens: 600, OutputTokens: 10, CancelUS: -1},
		{Index: 2, ArrivalUS: 200_000, PromptTokens: 600, OutputTokens: 10, CancelUS: -1},
	}
	var o slotOrder
	got := [3]int64{-1, -1, -1}    // when each took the slot
	waited := [3]int64{-1, -1, -1} // when each began to wait for it
	activated := [3]int64{-1, -1, -1}
	freed := int64(-1) // when request 0 gave the slot back
	runWatched(t, cfg, reqs, func(s *Sim) func(*request) {
		inner := o.watch(s)
		return func(r *request) {
			x := &r.st.W.H[0]
			if x.Dst == model.DstActive && activated[r.Index] < 0 {
				activated[r.Index] = s.now
			}
			if waitsForSlot(r) && waited[r.Index] < 0 {
				waited[r.Index] = s.now
			}
			if x.Running && got[r.Index] < 0 {
				got[r.Index] = s.now
			}
			if r.Index == 0 && got[0] >= 0 && !x.Running && freed < 0 {
				freed = s.now
			}
			inner(r)
		}
	})
	// The tie: request 2 activates the instant request 0 frees the slot,
	// while request 1 waits for it.
	if freed < 0 || activated[2] != freed || waited[1] < 0 || waited[1] >= freed {
		t.Fatalf("no tie: request 0 freed the slot at %s, request 2 activated at %s, request 1 waited from %s", fmtMS(freed), fmtMS(activated[2]), fmtMS(waited[1]))
	}
	winner := 1
	if got[2] == freed {
		winner = 2
	}
	if o.jumped > 0 || got[1] != freed || waited[2] != activated[2] || got[2] <= got[1] {
		t.Fatalf("the slot freed at %s went to request %d, not to request 1, which had waited for it since %s: request 1 took a slot at %s, request 2 (activated at %s) at %s",
			fmtMS(freed), winner, fmtMS(waited[1]), fmtMS(got[1]), fmtMS(activated[2]), fmtMS(got[2]))
	}
}

// TestDecodeSlots_FirstComeUnderLoad: a steady workload without jitter,
// whose facts and decodes often fall on the same instant, on decode
// workers of 4 slots: no request takes a slot while an older one waits
// for one on its worker.
func TestDecodeSlots_FirstComeUnderLoad(t *testing.T) {
	for _, gap := range []int64{60_000, 80_000} {
		cfg := policyConfig("source-first")
		cfg.Decode.Slots, cfg.JitterUS = 4, 0
		reqs := steady(4000, gap).Reqs
		var o slotOrder
		runWatched(t, cfg, reqs, o.watch)
		t.Logf("a request every %s: %d of %d requests waited for a slot, %d took one ahead of an older waiter (%.3f%%)",
			fmtMS(gap), o.waited, len(reqs), o.jumped, 100*float64(o.jumped)/float64(len(reqs)))
		if o.waited < len(reqs)/10 {
			t.Fatalf("only %d of %d requests waited for a slot: the workload does not fill the slots", o.waited, len(reqs))
		}
		if o.jumped > 0 {
			t.Errorf("a request every %s: %d of %d requests took a slot ahead of an older waiter (%.3f%%); first %s",
				fmtMS(gap), o.jumped, len(reqs), 100*float64(o.jumped)/float64(len(reqs)), o.first)
		}
	}
}
