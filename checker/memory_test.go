package checker

import (
	"context"
	"testing"
)

// The memory bound holds within a level: an exploration that would need
// gigabytes stops before the process's resident memory passes the bound,
// says so, and reports the run's own peak.
func TestExplore_MaxMemoryStopsWithinTheBound(t *testing.T) {
	if testing.Short() {
		t.Skip("explores until a few hundred MiB are resident")
	}
	if residentBytes() == 0 {
		t.Skip("this system does not report resident memory")
	}
	cfg := DefaultConfig()
	c, err := New(Generated(), cfg, cfg.Runs[0])
	if err != nil {
		t.Fatal(err)
	}
	settle()
	bound := int64(residentBytes()) + 128<<20
	before := peakResidentBytes()
	rs := sampleResident()
	r := c.Explore(context.Background(), Limits{MaxMemory: bound, Liveness: true, Workers: 2}, nil)
	r.Stats.PeakResident = rs.stop()
	if r.Complete || r.StopReason != StopMaxMemory {
		t.Fatalf("want a stop by the memory bound, got complete=%v stop=%q after %d states", r.Complete, r.StopReason, r.Stats.States)
	}
	// The kernel's high-water mark misses no spike between samples: when
	// the process had stayed below the bound before this run, it must
	// still be below it.
	if before < uint64(bound) {
		if hwm := peakResidentBytes(); hwm > uint64(bound) {
			t.Fatalf("the process's peak resident memory reached %s, bound %s", FormatBytes(int64(hwm)), FormatBytes(bound))
		}
	}
	if r.Stats.PeakResident == 0 || r.Stats.PeakResident > uint64(bound) {
		t.Fatalf("peak resident memory %s, bound %s", FormatBytes(int64(r.Stats.PeakResident)), FormatBytes(bound))
	}
	if r.Stats.States < 100000 {
		t.Fatalf("stopped after only %d states: the bound was not used", r.Stats.States)
	}
	t.Logf("stopped after %d states at a peak of %s (bound %s)", r.Stats.States, FormatBytes(int64(r.Stats.PeakResident)), FormatBytes(bound))
}

// Per-run figures belong to the run: a small run explored after a large
// one reports its own heap, not what the large one left behind.
func TestExplore_PerRunHeapIsTheRunsOwn(t *testing.T) {
	explore := func(cfg *Config, lim Limits) *Result {
		rep, err := Check(context.Background(), Generated(), cfg, cfg.Runs[:1], lim, nil)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Runs[0]
	}
	small := mustConfig(t, twoByTwo)
	first := explore(small, Limits{MaxStates: 200})
	keep := explore(DefaultConfig(), Limits{MaxStates: 200000})
	again := explore(small, Limits{MaxStates: 200})
	if keep.Stats.PeakHeap < 3*first.Stats.PeakHeap {
		t.Skipf("the large run's heap (%d) is not clearly larger than the small one's (%d)", keep.Stats.PeakHeap, first.Stats.PeakHeap)
	}
	if again.Stats.PeakHeap >= keep.Stats.PeakHeap/2 {
		t.Fatalf("a small run after a large one reports a peak heap of %d bytes, the large run's was %d", again.Stats.PeakHeap, keep.Stats.PeakHeap)
	}
	if keep.Stats.PeakResident > 0 && again.Stats.PeakResident >= keep.Stats.PeakResident {
		t.Fatalf("a small run after a large one reports a peak resident memory of %d bytes, the large run's was %d", again.Stats.PeakResident, keep.Stats.PeakResident)
	}
}

// EventuallyDrained is not judged when its reverse graph would not fit
// under the bound: the estimate counts the graph's states and edges.
func TestExplore_LivenessNeedsRoomForTheReverseGraph(t *testing.T) {
	if residentBytes() == 0 {
		t.Skip("this system does not report resident memory")
	}
	e := &exploration{parent: make([]uint32, 1<<20), g: &graph{from: make([]uint32, 5<<20)}}
	need := int64(4*(1<<20+1) + 4*(5<<20) + 4*(1<<20) + 1<<20) // about 29 MiB
	rss := int64(residentBytes())
	// The smallest bound whose threshold passes a given level.
	boundFor := func(threshold int64) int64 {
		b := threshold
		for memoryThreshold(b) < threshold {
			b += 1 << 20
		}
		return b
	}
	tight := boundFor(rss + need/2)
	roomy := boundFor(rss + 4*need)
	if !e.livenessWouldPass(tight) {
		t.Errorf("a reverse graph of %s fits under a threshold only %s above resident memory", FormatBytes(need), FormatBytes(need/2))
	}
	if e.livenessWouldPass(roomy) {
		t.Errorf("a reverse graph of %s does not fit under a threshold %s above resident memory", FormatBytes(need), FormatBytes(4*need))
	}
}
