package checker

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/handoffcheck/handoffcheck/checker/system"
)

// A search whose fingerprints move to disk part of the way through (at
// once, or after some levels, with a window that fills many times a
// level) finds the same states in the same order as one in memory: the
// same counts, coverage and shortest trace, on any number of workers.
func TestDisk_SameSearchOnDisk(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/commands.json")
	broken := variantChecker(t, "late-cancel-finalizes-twice.json", "vllm", budgetOf(t, "duplicate=1", "cancel=1", "early_timer=1"))
	t.Cleanup(func() { testWindow = 0 })
	for _, tc := range []struct {
		name   string
		c      *Checker
		after  int
		window int
	}{
		{"trtllm from the start", checkerFor(t, system.Generated(), cfg, "trtllm"), 1, 0},
		{"trtllm-destination-first after 2,000 states, a window of 100", checkerFor(t, system.Generated(), cfg, "trtllm-destination-first"), 2000, 100},
		{"a broken table", broken, 5, 8},
	} {
		testWindow = tc.window
		for _, workers := range []int{1, 2} {
			ref := tc.c.checkRun(context.Background(), Limits{Workers: workers}, nil)
			dir := t.TempDir()
			r := tc.c.checkRun(context.Background(), Limits{Workers: workers, DiskAfter: tc.after, SpillDir: dir}, nil)
			if diff := cmp.Diff(outcomeOf(ref, tc.c), outcomeOf(r, tc.c)); diff != "" {
				t.Errorf("%s on %d workers: differs on disk (-in memory +on disk):\n%s", tc.name, workers, diff)
			}
			// A merge at the end of each level after the one it moved
			// in, and more where the window fills within levels.
			levels := r.Stats.Depth - depthAt(t, tc.c, workers, r.Stats.DiskAt)
			if r.Stats.DiskAt < max(tc.after, 1) || (ref.Violation == nil && (r.Stats.DiskMerges < levels-1 || tc.window > 0 && r.Stats.DiskMerges <= levels)) {
				t.Errorf("%s on %d workers: moved to disk at %d states, %d merges over %d levels", tc.name, workers, r.Stats.DiskAt, r.Stats.DiskMerges, r.Stats.Depth)
			}
			if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
				t.Errorf("%s: the spill directory holds %d entries after the run (%v)", tc.name, len(entries), err)
			}
		}
	}
}

// depthAt is the depth of the level whose batch reached n states.
func depthAt(t *testing.T, c *Checker, workers, n int) int {
	t.Helper()
	for d := 1; ; d++ {
		r := c.checkRun(context.Background(), Limits{Workers: workers, MaxDepth: d}, nil)
		if r.Stats.States >= n || r.Complete {
			return d - 1
		}
	}
}

// A merge writes the union of the file and the window, sorted and
// without repeats, and marks the window's fingerprints the file held.
func TestDisk_MergeMarksWhatTheFileHeld(t *testing.T) {
	d := &diskSet{dir: &spillDir{parent: t.TempDir()}}
	defer d.dir.remove()
	shards := func(fps ...uint64) [][]uint64 {
		out := make([][]uint64, numShards)
		slices.Sort(fps)
		for _, fp := range fps {
			out[shardOf(fp)] = append(out[shardOf(fp)], fp)
		}
		return out
	}
	const hi = uint64(1) << 63
	if err := d.merge(shards(5, 9, hi|3), nil); err != nil {
		t.Fatal(err)
	}
	win := shards(1, 5, 7, hi|3, hi|4)
	old := make([][]bool, numShards)
	for i := range old {
		old[i] = make([]bool, len(win[i]))
	}
	if err := d.merge(win, old); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(d.path)
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for i := 0; i+8 <= len(data); i += 8 {
		var v uint64
		for b := 7; b >= 0; b-- {
			v = v<<8 | uint64(data[i+b])
		}
		got = append(got, v)
	}
	if want := []uint64{1, 5, 7, 9, hi | 3, hi | 4}; !slices.Equal(got, want) || d.n != 6 {
		t.Fatalf("file %v (%d), want %v", got, d.n, want)
	}
	if !slices.Equal(old[0], []bool{false, true, false}) || !slices.Equal(old[numShards/2], []bool{true, false}) {
		t.Fatalf("marks %v %v", old[0], old[numShards/2])
	}
	// The merged file replaces the one before: a search that merges at
	// every level keeps one file, not one per level.
	ents, err := os.ReadDir(d.dir.dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || filepath.Join(d.dir.dir, ents[0].Name()) != d.path {
		t.Fatalf("the spill directory holds %d files after two merges, want the merged one alone", len(ents))
	}
}

// The memory bound moves the fingerprints to disk rather than stopping a
// search that can go there: a level that would not fit under the bound
// is explored on disk, and the run completes with the counts of a run in
// memory. A search that cannot (one keeping the liveness graph) stops.
func TestDisk_TheBoundMovesTheSearchToDisk(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/commands.json")
	c := checkerFor(t, system.Generated(), cfg, "trtllm")
	ref := c.checkRun(context.Background(), Limits{Workers: 2}, nil)
	const bound = 1 << 40
	old := readResident
	t.Cleanup(func() { readResident = old })
	looks := 0
	// Resident memory reads as the bound once, before the sixth level.
	readResident = func() uint64 {
		looks++
		if looks == 6 {
			return bound
		}
		return 0
	}
	r := c.checkRun(context.Background(), Limits{Workers: 2, MaxMemory: bound}, nil)
	if !r.Complete || r.Stats.States != ref.Stats.States || r.Stats.Transitions != ref.Stats.Transitions || r.Stats.DiskAt == 0 {
		t.Fatalf("complete=%v (%s), %d states and %d transitions, moved to disk at %d; in memory: %d and %d",
			r.Complete, r.StopDetail, r.Stats.States, r.Stats.Transitions, r.Stats.DiskAt, ref.Stats.States, ref.Stats.Transitions)
	}
	looks = 0
	r = c.checkRun(context.Background(), Limits{Workers: 2, MaxMemory: bound, Liveness: true}, nil)
	if r.Complete || r.StopReason != stopMaxMemory || r.Stats.DiskAt != 0 {
		t.Fatalf("with the liveness graph: complete=%v stop=%q, moved to disk at %d", r.Complete, r.StopReason, r.Stats.DiskAt)
	}
}

// Moving to disk writes every fingerprint to the file and leaves a window
// of a quarter of the memory bound at most, not the table it had: a
// window as large as the table left a 4 GiB run a twentieth of the bound
// to grow in, and it stopped there.
func TestDisk_TheMoveGivesTheTableBack(t *testing.T) {
	const n = 1 << 20
	const bound = 8 << 20 // a window of 262,144 slots at most
	fs := newFPSet(false, false)
	e := &exploration{lim: Limits{MaxMemory: bound}, words: 2, fwords: 2, vis: fs, spill: spillDir{parent: t.TempDir()}}
	defer e.spill.remove()
	defer func() { e.vis.free() }()
	for i := uint64(1); i <= n; i++ {
		fs.insert(i*0x9E3779B97F4A7C15, nil)
	}
	before := e.vis.fingerprintBytes()
	if err := e.goToDisk(); err != nil {
		t.Fatal(err)
	}
	d := e.vis.(*diskStore)
	after := e.vis.fingerprintBytes()
	if before <= bound/4 || after > bound/4 || d.windowSize() != 0 {
		t.Fatalf("table %d bytes before the move, %d after (bound %d), window holds %d", before, after, bound, d.windowSize())
	}
	if d.onFile.n != n || d.onFile.window > bound/4/8 {
		t.Fatalf("%d fingerprints on file, want %d; window of %d", d.onFile.n, n, d.onFile.window)
	}
	for i := uint64(1); i <= n; i += 4099 {
		if _, ok := e.vis.lookup(i*0x9E3779B97F4A7C15, nil); ok {
			t.Fatalf("fingerprint %d still in the window", i)
		}
	}
}

// A search on disk writes checkpoints too, and one resumed from any of
// them (between two levels, or within a level whose window held
// fingerprints not yet merged) reaches the uninterrupted search's states,
// counts, coverage and trace, on another number of workers.
func TestDisk_CheckpointAndResumeOnDisk(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/commands.json")
	c := checkerFor(t, system.Generated(), cfg, "sglang")
	t.Cleanup(func() { testWindow = 0 })
	// A window larger than what a batch adds: a checkpoint within a level
	// finds fingerprints in it not yet merged.
	testWindow = 50000
	ref := c.checkRun(context.Background(), Limits{Workers: 1}, nil)
	if !ref.Complete || ref.Stats.States < 20000 {
		t.Fatalf("the reference search: complete=%v, %d states", ref.Complete, ref.Stats.States)
	}
	resume := func(what, dir string) {
		t.Helper()
		m, _, ok, err := readMeta(checkpointDir(dir, c.Run()))
		if err != nil || !ok || m.Disk == nil || m.Finished {
			t.Fatalf("%s: the checkpoint is not one of an unfinished search on disk: %+v %v", what, m.Disk, err)
		}
		if err := c.canResume(dir, Limits{}); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		r := c.checkRun(context.Background(), Limits{Workers: 2, Resume: dir, SpillDir: t.TempDir()}, nil)
		if !r.Resumed || r.Stats.DiskAt != m.Disk.At || r.Stats.DiskMerges <= m.Disk.Merges-1 {
			t.Errorf("%s: resumed=%v, on disk at %d (the checkpoint's %d), %d merges (%d before)", what, r.Resumed, r.Stats.DiskAt, m.Disk.At, r.Stats.DiskMerges, m.Disk.Merges-1)
		}
		if diff := cmp.Diff(outcomeOf(ref, c), outcomeOf(r, c)); diff != "" {
			t.Errorf("%s: the resumed search differs (-uninterrupted +resumed):\n%s", what, diff)
		}
	}

	// Between two levels: stopped by a depth bound after the move.
	dir := t.TempDir()
	r := c.checkRun(context.Background(), Limits{Workers: 1, DiskAfter: 2000, Checkpoint: dir, MaxDepth: ref.Stats.Depth / 2}, nil)
	if r.StopReason != stopMaxDepth || r.Stats.DiskAt == 0 || r.Checkpoints != 1 {
		t.Fatalf("stopped for %q, on disk at %d, %d checkpoints", r.StopReason, r.Stats.DiskAt, r.Checkpoints)
	}
	resume("between levels", dir)

	// Within a level: a checkpoint after every batch, and the run stopped
	// once one of them is on disk part of the way through a level, past
	// the move (a checkpoint there merges the window's fingerprints of
	// the batches since the last one: its third merge at least).
	dir = t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan *Result)
	go func() {
		stopped <- c.checkRun(ctx, Limits{Workers: 1, DiskAfter: 2000, Checkpoint: dir, CheckpointEvery: time.Nanosecond}, nil)
	}()
	for {
		m, _, ok, _ := readMeta(checkpointDir(dir, c.Run()))
		if ok && m.Disk != nil && m.Disk.Merges >= 3 && m.Done > 0 && !m.Finished {
			cancel()
			break
		}
		select {
		case r := <-stopped:
			t.Fatalf("the run ended (complete=%v) before a checkpoint within a level on disk", r.Complete)
		case <-time.After(time.Millisecond):
		}
	}
	if r := <-stopped; r.StopReason != stopInterrupted || r.Checkpoints < 2 {
		t.Fatalf("stopped for %q with %d checkpoints", r.StopReason, r.Checkpoints)
	}
	resume("within a level", dir)
}
