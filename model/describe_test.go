package model

import (
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/spec"
)

// Drained is false while any one thing is held, booked, pending or
// counted: each handoff fact and each worker ledger on its own, so that a
// condition dropped from the test is noticed. It is what Quiescence and
// EventuallyDrained stand on.
func TestWorld_DrainedNeedsEveryLedgerAtRest(t *testing.T) {
	c := testConfig(t, spec.SourceFirst, VLLM, 2, 2)
	for _, tc := range []struct {
		name  string
		spoil func(w *World)
	}{
		{"source holds", func(w *World) { w.H[1].Src = SrcPinned }},
		{"destination holds", func(w *World) { w.H[1].Dst = DstReserved }},
		{"waits for a reservation", func(w *World) { w.H[1].Pending = true }},
		{"compute load", func(w *World) { w.H[1].ComputeLoad = true }},
		{"armed timer", func(w *World) { w.H[1].Timers = 1 << TimerLease }},
		{"source in flight", func(w *World) { w.H[1].InFlight[SourceSide] = true }},
		{"destination in flight", func(w *World) { w.H[1].InFlight[DestinationSide] = true }},
		{"compute queued", func(w *World) { w.H[1].Compute = ComputeQueued }},
		{"compute running", func(w *World) { w.H[1].Compute = ComputeRunning }},
		{"transfer running", func(w *World) { w.H[1].Xfer = XferRunning }},
		{"booking held", func(w *World) { w.H[1].Life[ResDecodeBooking] = Held }},
		{"pinned blocks", func(w *World) { w.W[0].Pinned = 1 }},
		{"reserved pages", func(w *World) { w.W[1].Reserved = 1 }},
		{"active beyond background", func(w *World) { w.W[1].Active = w.W[1].Background + 1 }},
		{"worker in flight", func(w *World) { w.W[1].InFlight = 1 }},
		{"prefill tokens", func(w *World) { w.W[0].PrefillTokens = 1 }},
		{"owned", func(w *World) { w.W[0].Owned = 1 }},
		{"booked blocks", func(w *World) { w.W[1].BookedBlocks = 1 }},
		{"headroom", func(w *World) { w.W[1].HeadroomUsed = 1 }},
		{"slots beyond background", func(w *World) { w.W[1].SlotsUsed = w.W[1].BackgroundSlot + 1 }},
	} {
		w := NewWorld(c)
		if !w.Drained() {
			t.Fatalf("a new world is not drained: %s", w.DescribeHeld())
		}
		tc.spoil(&w)
		if w.Drained() {
			t.Errorf("%s: counted as drained", tc.name)
		}
	}
}

// The descriptions are what counterexamples and goldens show: the
// background load and a tainted transfer appear when present, and
// DescribeHeld names every handoff's holdings, the first handoff's too.
func TestWorld_Describe(t *testing.T) {
	c := testConfig(t, spec.SourceFirst, VLLM, 2, 2)
	w := NewWorld(c)
	if got := w.DescribeWorker(1); strings.Contains(got, "background") {
		t.Errorf("no background load, yet: %s", got)
	}
	w.W[1].Background, w.W[1].Active, w.W[1].Free = 1, 1, w.W[1].Free-1
	if got := w.DescribeWorker(1); !strings.Contains(got, " background=1 ") {
		t.Errorf("background load of one block not shown: %s", got)
	}
	if got := w.DescribeWorker(0); got != "prefill0 gen=0 free=12 cached=0 active=0 pinned=0 reserved=0 kv_used=0 in_flight=0 owned=0 active_prefill_tokens=0 stored=0" {
		t.Errorf("prefill worker: %s", got)
	}

	h := newHistory(t, c)
	h.clean(route, accept, computed, routed, reserved, pulling)
	h.w.H[0].Tainted = true
	if got := h.w.DescribeHandoff(0); !strings.Contains(got, " xfer=running xfer_bytes=") || !strings.Contains(got, " tainted") {
		t.Errorf("a tainted transfer not shown: %s", got)
	}
	h.w.H[0].SrcKept, h.w.H[0].SrcIndexed, h.w.H[0].DstKept = true, true, true
	if got := h.w.DescribeHandoff(0); !strings.Contains(got, " src_kept src_indexed ") || !strings.Contains(got, " dst_kept") {
		t.Errorf("kept and advertised blocks not shown: %s", got)
	}
	h.w.H[0].SrcKept, h.w.H[0].SrcIndexed, h.w.H[0].DstKept = false, false, false
	held := h.w.DescribeHeld()
	for _, want := range []string{
		"handoff 0 source holds pinned blocks",
		"handoff 0 destination holds reserved pages",
		"handoff 0 prefill booking held",
		"handoff 0 decode booking held",
		"handoff 0 counted in flight on the source",
	} {
		if !strings.Contains(held, want) {
			t.Errorf("DescribeHeld lacks %q: %s", want, held)
		}
	}
	if strings.Contains(held, "handoff 1") {
		t.Errorf("handoff 1 holds nothing, yet: %s", held)
	}
	w = NewWorld(c)
	w.W[0].Owned = 1
	if got := w.DescribeHeld(); !strings.HasPrefix(got, "nothing held by the handoffs; worker ledgers are off: prefill0 ") || !strings.Contains(got, "owned=1") {
		t.Errorf("a ledger off with nothing held: %s", got)
	}
}
