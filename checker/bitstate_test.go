package checker

import (
	"context"
	"math"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"
)

// With bits to spare, a bitstate search omits nothing: it explores the
// states and transitions the fingerprint search does, estimates a
// coverage of one, and finds a broken table's violation with the same
// trace.
func TestBitstate_RoomyArrayMissesNothing(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/small.json")
	for _, run := range []string{"vllm", "sglang"} {
		c := checkerFor(t, system.Generated(), cfg, run)
		ref := c.checkRun(context.Background(), Limits{Workers: 2}, nil)
		r := c.checkRun(context.Background(), Limits{Workers: 2, Bitstate: 1 << 20}, nil)
		if r.Bitstate == nil || r.Liveness || r.Stats.States != ref.Stats.States || r.Stats.Transitions != ref.Stats.Transitions || !r.Complete {
			t.Fatalf("%s: bitstate %+v, liveness %v, %d states and %d transitions; the fingerprint search: %d and %d",
				run, r.Bitstate, r.Liveness, r.Stats.States, r.Stats.Transitions, ref.Stats.States, ref.Stats.Transitions)
		}
		bs := r.Bitstate
		if bs.Bytes != 1<<20 || bs.Hashes != bitHashes || bs.Coverage < 0.999999 || bs.Fill <= 0 || bs.Fill > 0.01 {
			t.Errorf("%s: %+v", run, bs)
		}
	}
	broken := variantChecker(t, "late-cancel-finalizes-twice.json", "vllm", budgetOf(t, "duplicate=1", "cancel=1", "early_timer=1"))
	ref := broken.checkRun(context.Background(), Limits{Workers: 1}, nil)
	r := broken.checkRun(context.Background(), Limits{Workers: 1, Bitstate: 1 << 20}, nil)
	if ref.Violation == nil || r.Violation == nil || broken.formatCounterexample(r.Violation) != broken.formatCounterexample(ref.Violation) {
		t.Fatalf("a broken table: the bitstate search's trace differs from the fingerprint search's")
	}
}

// A bit array too small for the states omits some, and its estimate of
// the coverage is close to the coverage it really had (the states it
// explored over those a fingerprint search explores) while the array is
// not nearly full. A nearly full array never generates the descendants of
// the states it omits, so it cannot count them: its estimate is high, and
// the report says so past half full.
func TestBitstate_SmallArrayEstimatesItsCoverage(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/commands.json")
	c := checkerFor(t, system.Generated(), cfg, "trtllm")
	ref := c.checkRun(context.Background(), Limits{Workers: 2}, nil)
	for _, size := range []int64{8 << 10, 16 << 10, 64 << 10} {
		r := c.checkRun(context.Background(), Limits{Workers: 2, Bitstate: size}, nil)
		real := float64(r.Stats.States) / float64(ref.Stats.States)
		bs := r.Bitstate
		if real >= 1 || bs.Coverage >= 1 || math.Abs(bs.Coverage-real) > 0.02 {
			t.Errorf("%d bytes: explored %d of %d states (%.4f), estimated %.4f", size, r.Stats.States, ref.Stats.States, real, bs.Coverage)
		}
		if want := math.Pow(bs.Fill, bitHashes); bs.Omission != want {
			t.Errorf("%d bytes: omission %g, want the fill %g cubed", size, bs.Omission, bs.Fill)
		}
		t.Logf("%d bytes: explored %.4f of the states, estimated %.4f, %.1f%% of bits set", size, real, bs.Coverage, 100*bs.Fill)
	}
}

// The bits of one state are spread over its shard's region, and the same
// fingerprint always sets the same bits.
func TestBitstate_PositionsAreStableAndInRange(t *testing.T) {
	const n = 1000
	for fp := uint64(1); fp < 1<<40; fp = fp*3 + 1 {
		p, q := bitPositions(fp, n), bitPositions(fp, n)
		if p != q {
			t.Fatalf("fingerprint %x: positions %v then %v", fp, p, q)
		}
		for _, x := range p {
			if x >= n {
				t.Fatalf("fingerprint %x: position %d of %d bits", fp, x, n)
			}
		}
	}
}
