package checker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/handoffcheck/handoffcheck/checker/system"
)

// withSpillLimit makes every frontier and the trace links past n bytes
// move to files for the rest of the test.
func withSpillLimit(t *testing.T, n int) {
	t.Helper()
	old := spillLimit
	spillLimit = n
	t.Cleanup(func() { spillLimit = old })
}

// Keys pushed on a queue come back in order, whether the queue stayed in
// memory or moved to a file part of the way through; the file is gone
// once the queue is closed.
func TestSpill_QueueGivesBackWhatWasPushed(t *testing.T) {
	const words = 9
	rng := rand.New(rand.NewPCG(1, 2))
	var keys [][]uint64
	for i := 0; i < 5000; i++ {
		k := make([]uint64, words)
		for j := range k {
			// Mostly small fields, now and then a full word.
			k[j] = rng.Uint64() >> (rng.IntN(64))
		}
		keys = append(keys, k)
	}
	for _, limit := range []int{1 << 30, 1000, 1} {
		withSpillLimit(t, limit)
		dir := &spillDir{parent: t.TempDir()}
		q := newKeyQueue(words, dir)
		for _, k := range keys {
			q.push(k)
		}
		if spilled := q.f != nil; spilled != (limit < 1<<30) {
			t.Fatalf("limit %d: spilled=%v", limit, spilled)
		}
		r := q.reader()
		var got [][]uint64
		buf := make([]uint64, 7*words)
		for {
			n := r.read(buf, 7)
			if r.err != nil {
				t.Fatalf("limit %d: %v", limit, r.err)
			}
			if n == 0 {
				break
			}
			for i := 0; i < n; i++ {
				got = append(got, append([]uint64(nil), buf[i*words:(i+1)*words]...))
			}
		}
		if diff := cmp.Diff(keys, got); diff != "" {
			t.Fatalf("limit %d: keys read back differ (-pushed +read):\n%s", limit, diff)
		}
		q.close()
		dir.remove()
		if entries, _ := os.ReadDir(filepath.Dir(dir.parent)); dir.dir != "" || len(entries) == 0 {
			t.Fatalf("limit %d: the spill directory was not removed", limit)
		}
	}
}

// A record's header holds a length nibble per word: keys of an odd and an
// even number of words, of one word and of the most a queue holds, with
// words that do not change, change in their low byte only or in their top
// byte, come back as pushed; a queue whose file lost its last bytes is
// read as cut short, not past its end.
func TestSpill_RecordsOfEveryLength(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, words := range []int{1, 2, 3, 8, maxQueueWords} {
		var keys [][]uint64
		for i := 0; i < 300; i++ {
			k := make([]uint64, words)
			for j := range k {
				switch rng.IntN(4) {
				case 0: // unchanged from the key before
					if len(keys) > 0 {
						k[j] = keys[len(keys)-1][j]
					}
				case 1:
					k[j] = uint64(rng.IntN(256))
				case 2:
					k[j] = rng.Uint64() | 1<<63
				default:
					k[j] = rng.Uint64() >> rng.IntN(64)
				}
			}
			keys = append(keys, k)
		}
		for _, cut := range []bool{false, true} {
			withSpillLimit(t, 1)
			dir := &spillDir{parent: t.TempDir()}
			q := newKeyQueue(words, dir)
			for _, k := range keys {
				q.push(k)
			}
			q.flush()
			if cut {
				if err := q.f.Truncate(q.size - 1); err != nil {
					t.Fatal(err)
				}
				q.size--
			}
			r := q.reader()
			buf := make([]uint64, 5*words)
			var got [][]uint64
			for r.err == nil {
				n := r.read(buf, 5)
				if n == 0 {
					break
				}
				for i := 0; i < n; i++ {
					got = append(got, append([]uint64(nil), buf[i*words:(i+1)*words]...))
				}
			}
			switch {
			case cut && r.err == nil:
				t.Errorf("%d words: a queue missing its last byte read without an error", words)
			case cut && len(got) != len(keys)-1:
				t.Errorf("%d words, cut: read %d keys before the error, want %d", words, len(got), len(keys)-1)
			case !cut && r.err != nil:
				t.Errorf("%d words: %v", words, r.err)
			case !cut:
				if diff := cmp.Diff(keys, got); diff != "" {
					t.Errorf("%d words: keys read back differ (-pushed +read):\n%s", words, diff)
				}
			}
			q.close()
			dir.remove()
		}
	}
}

// Queues made one after another in one directory, as a search makes its
// levels, each give back what was pushed on them, although each takes the
// buffer the one before left behind: the next level is pushed while the
// frontier is read, and the frontier is closed before the next is made.
func TestSpill_QueuesPassingTheirBufferOnGiveBackWhatWasPushed(t *testing.T) {
	const words = 9
	rng := rand.New(rand.NewPCG(3, 4))
	level := func(n int) [][]uint64 {
		var keys [][]uint64
		for i := 0; i < n; i++ {
			k := make([]uint64, words)
			for j := range k {
				k[j] = rng.Uint64() >> (rng.IntN(64))
			}
			keys = append(keys, k)
		}
		return keys
	}
	for _, limit := range []int{1 << 30, 1000} {
		withSpillLimit(t, limit)
		dir := &spillDir{parent: t.TempDir()}
		want := level(3000)
		frontier := newKeyQueue(words, dir)
		for _, k := range want {
			frontier.push(k)
		}
		if limit < 1<<30 && cap(dir.spare) < limit {
			t.Fatalf("limit %d: a queue written out left no buffer of the limit's size (cap %d)", limit, cap(dir.spare))
		}
		for lv := 0; lv < 4; lv++ {
			next := newKeyQueue(words, dir)
			if lv > 0 && cap(next.buf) == 0 {
				t.Fatalf("limit %d, level %d: the new queue did not take the buffer left behind", limit, lv)
			}
			nextKeys := level(2000 + 500*lv)
			r := frontier.reader()
			var got [][]uint64
			buf := make([]uint64, 5*words)
			for i := 0; ; i++ {
				// Push the next level in between reads of this one.
				if i < len(nextKeys) {
					next.push(nextKeys[i])
				}
				n := r.read(buf, 5)
				if r.err != nil {
					t.Fatalf("limit %d, level %d: %v", limit, lv, r.err)
				}
				if n == 0 && i >= len(nextKeys) {
					break
				}
				for j := 0; j < n; j++ {
					got = append(got, append([]uint64(nil), buf[j*words:(j+1)*words]...))
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("limit %d, level %d: keys read back differ (-pushed +read):\n%s", limit, lv, diff)
			}
			frontier.close()
			frontier, want = next, nextKeys
		}
		frontier.close()
		dir.remove()
	}
}

// The trace links give back each id's parent and move, from memory or
// from the file, and a truncated log takes appends where it was cut.
func TestSpill_LinksGiveBackWhatWasAppended(t *testing.T) {
	withSpillLimit(t, 64)
	l := linkLog{recordLog{dir: &spillDir{parent: t.TempDir()}}}
	defer l.dir.remove()
	defer l.close()
	for i := 0; i < 1000; i++ {
		l.append(uint32(i*7), uint8(i))
	}
	if l.base == 0 || l.err != nil {
		t.Fatalf("1000 links past a 64-byte limit: %d in the file, error %v", l.base, l.err)
	}
	for i := 0; i < 1000; i++ {
		if p, v := l.get(uint32(i)); p != uint32(i*7) || v != uint8(i) {
			t.Fatalf("id %d: parent %d move %d", i, p, v)
		}
	}
	l.truncate(500)
	for i := 500; i < 600; i++ {
		l.append(uint32(i), 1)
	}
	for i := 0; i < 600; i++ {
		want := uint32(i * 7)
		if i >= 500 {
			want = uint32(i)
		}
		if p, _ := l.get(uint32(i)); p != want || l.n != 600 {
			t.Fatalf("after truncating to 500: id %d has parent %d, want %d (%d ids)", i, p, want, l.n)
		}
	}
}

// Edges appended to the liveness graph's log come back in order, whether
// they stayed in memory or went to a file, and after a truncation the
// edges appended since replace the ones forgotten.
func TestSpill_EdgesGiveBackWhatWasAppended(t *testing.T) {
	withSpillLimit(t, 64)
	l := edgeLog{recordLog{dir: &spillDir{parent: t.TempDir()}}}
	defer l.dir.remove()
	defer l.close()
	check := func(what string, want [][2]uint32) {
		t.Helper()
		var got [][2]uint32
		if err := l.each(func(f, to uint32) { got = append(got, [2]uint32{f, to}) }); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if diff := cmp.Diff(want, got); diff != "" || l.n != len(want) {
			t.Fatalf("%s: %d edges, read back (-appended +read):\n%s", what, l.n, diff)
		}
	}
	var want [][2]uint32
	for i := 0; i < 1000; i++ {
		l.append(uint32(i/3), uint32(i*7))
		want = append(want, [2]uint32{uint32(i / 3), uint32(i * 7)})
	}
	if l.base == 0 || l.err != nil {
		t.Fatalf("1000 edges past a 64-byte limit: %d in the file, error %v", l.base, l.err)
	}
	check("1000 edges", want)
	for _, n := range []int{995, 500} { // within the block in memory, then in the file
		l.truncate(n)
		want = want[:n]
		for i := n; i < n+100; i++ {
			l.append(uint32(i), 1)
			want = append(want, [2]uint32{uint32(i), 1})
		}
		check(fmt.Sprintf("after truncating to %d", n), want)
	}
}

// outcome is what two ways of making one search must agree on: its
// figures, coverage and shortest trace.
type outcome struct {
	States, Depth, DeadEnds int
	Transitions             int64
	Complete                bool
	Rows                    [2][]uint64
	Trace                   string
}

func outcomeOf(r *Result, c *Checker) outcome {
	o := outcome{States: r.Stats.States, Depth: r.Stats.Depth, DeadEnds: r.DeadEnds, Transitions: r.Stats.Transitions,
		Complete: r.Complete, Rows: r.Coverage.Rows}
	if r.Violation != nil {
		o.Trace = c.formatCounterexampleFull(r.Violation, true)
	}
	return o
}

// A run whose frontiers and trace links go to files explores the same
// states in the same order as one that keeps them in memory: the same
// figures, coverage and shortest trace, on any number of workers; and it
// leaves nothing behind in its spill directory.
func TestSpill_SameRunOnFiles(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/small.json")
	broken := variantChecker(t, "late-cancel-finalizes-twice.json", "vllm", budgetOf(t, "duplicate=1", "cancel=1", "early_timer=1"))
	memoryLimit := spillLimit
	withSpillLimit(t, memoryLimit)
	for _, tc := range []struct {
		name     string
		c        *Checker
		liveness bool
	}{
		{"sglang", checkerFor(t, system.Generated(), cfg, "sglang"), false},
		{"vllm with liveness", checkerFor(t, system.Generated(), cfg, "vllm"), true},
		{"a broken table", broken, false},
		{"a liveness trap", rearmChecker(t), true},
	} {
		// A run stopped by a violation counts the transitions of the
		// batches its workers expanded, which depend on how many there
		// were: each is compared with the same number in memory.
		for _, workers := range []int{1, 2} {
			spillLimit = memoryLimit
			ref := tc.c.checkRun(context.Background(), Limits{Workers: workers, Liveness: tc.liveness}, nil)
			if ref.Stats.SpilledBytes != 0 {
				t.Fatalf("%s: a small run spilled %d bytes", tc.name, ref.Stats.SpilledBytes)
			}
			spillLimit = 32
			dir := t.TempDir()
			r := tc.c.checkRun(context.Background(), Limits{Workers: workers, Liveness: tc.liveness, SpillDir: dir}, nil)
			if diff := cmp.Diff(outcomeOf(ref, tc.c), outcomeOf(r, tc.c)); diff != "" {
				t.Errorf("%s on %d workers, spilled: differs (-in memory +on files):\n%s", tc.name, workers, diff)
			}
			if r.Stats.SpilledBytes == 0 || r.Stats.TraceBytes >= int64(ref.Stats.States)*linkBytes {
				t.Errorf("%s on %d workers: spilled %d bytes, %d bytes of links left in memory", tc.name, workers, r.Stats.SpilledBytes, r.Stats.TraceBytes)
			}
			if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
				t.Errorf("%s on %d workers: the spill directory holds %d entries after the run (%v)", tc.name, workers, len(entries), err)
			}
		}
	}
}

// A spill directory that cannot be made stops the run, saying so.
func TestSpill_BrokenDirectoryStopsTheRun(t *testing.T) {
	withSpillLimit(t, 32)
	cfg := loadConfigFile(t, "../testdata/configs/small.json")
	c := checkerFor(t, system.Generated(), cfg, "sglang")
	file := filepath.Join(t.TempDir(), "not-a-directory")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := c.checkRun(context.Background(), Limits{Workers: 1, SpillDir: file}, nil)
	if r.Complete || r.StopReason != stopDisk || r.Violation != nil {
		t.Fatalf("complete=%v stop=%q violation=%v", r.Complete, r.StopReason, r.Violation)
	}
	want := "stopped: a file the search keeps on disk failed: making the spill directory: "
	if len(r.StopDetail) < len(want) || r.StopDetail[:len(want)] != want {
		t.Errorf("detail %q, want it to start %q", r.StopDetail, want)
	}
}

// A frontier file is read back from a checkpoint the user keeps: whatever
// its bytes (the checkpoint's CRC guards them, but the reader must not
// rely on it), reading it gives keys or an error, never a panic or a read
// past its end.
func FuzzFrontierRecords(f *testing.F) {
	dir := &spillDir{parent: f.TempDir()}
	for _, words := range []int{1, 8, maxQueueWords} {
		q := newKeyQueue(words, dir)
		k := make([]uint64, words)
		for i := range 3 {
			k[i%words] = uint64(i) << (20 * i)
			q.push(k)
		}
		f.Add(append([]byte(nil), q.buf...), uint8(words), uint8(q.n))
	}
	f.Fuzz(func(t *testing.T, data []byte, words, n uint8) {
		w := 1 + int(words)%maxQueueWords
		q := &keyQueue{words: w, n: int(n), buf: data, dir: dir}
		r := q.reader()
		buf := make([]uint64, 4*w)
		for got := 0; r.err == nil; {
			m := r.read(buf, 4)
			if m == 0 {
				break
			}
			if got += m; got > int(n) {
				t.Fatalf("read %d keys from a queue of %d", got, n)
			}
		}
	})
}
