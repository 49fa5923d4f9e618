package conform

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/sim"
)

// goneRec is a record whose every field depends on i.
func goneRec(i int) finished {
	return finished{p: int16(i % 7), d: int16(i%5 - 1), gen: [2]int32{int32(i), -int32(i)}, removed: [2]int32{int32(i % 3), -1}, line: int32(10 * i), file: uint16(i % 4),
		dec: finishedDecoder{proc: int16(i%3 - 1), gen: uint32(1<<31 - i%2), prompt: int32(i), hit: int32(-i)}}
}

// checkGone puts n records into a store that keeps 8 in memory, changes
// three after reading them back, and finds every one as it was last put;
// ids never put are not found.
func checkGone(t *testing.T, g *goneStore, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		g.put(fmt.Sprintf("r%d", i), goneRec(i))
	}
	for _, i := range []int{3, n / 2, n - 3} {
		id := fmt.Sprintf("r%d", i)
		e, ok, err := g.get(id)
		if err != nil || !ok || e != goneRec(i) {
			t.Fatalf("%s: %+v %v %v, want %+v", id, e, ok, err, goneRec(i))
		}
		e.removed[0] = -1
		g.put(id, e)
	}
	// Pushed out again, the changed records are read back changed.
	for i := 0; i < 2*goneRecent; i++ {
		g.put(fmt.Sprintf("x%d", i), goneRec(i))
	}
	for i := 0; i < n; i++ {
		want := goneRec(i)
		if i == 3 || i == n/2 || i == n-3 {
			want.removed[0] = -1
		}
		id := fmt.Sprintf("r%d", i)
		if e, ok, err := g.get(id); err != nil || !ok || e != want {
			t.Fatalf("%s: %+v %v %v, want %+v", id, e, ok, err, want)
		}
	}
	for _, id := range []string{fmt.Sprintf("r%d", n), "r-1", "", "x99"} {
		if _, ok, err := g.get(id); ok || err != nil {
			t.Errorf("%q: found (%v), never put", id, err)
		}
	}
}

// TestGoneStore_SpillsAndFinds keeps 8 records in memory and writes the
// others to the file in small pieces: every record is found, from memory,
// from what waits to be written, or from the file.
func TestGoneStore_SpillsAndFinds(t *testing.T) {
	defer func(n, w int) { goneRecent, goneWriteBytes = n, w }(goneRecent, goneWriteBytes)
	goneRecent, goneWriteBytes = 8, 256
	g := newGoneStore()
	defer g.close()
	checkGone(t, g, 1000)
	if g.noFile || g.size == 0 || len(g.recent) > 3*goneRecent {
		t.Errorf("%d bytes in the file (noFile %v), %d records in memory: want most in the file", g.size, g.noFile, len(g.recent))
	}
}

// failingFile fails every write after the first ok ones.
type failingFile struct {
	*os.File
	ok int
}

func (f *failingFile) WriteAt(p []byte, off int64) (int, error) {
	if f.ok == 0 {
		return 0, errors.New("no space left")
	}
	f.ok--
	return f.File.WriteAt(p, off)
}

// TestGoneStore_WithoutFile: a store that cannot make its file, or whose
// file stops taking writes, keeps the records in memory from then on, and
// still finds every one.
func TestGoneStore_WithoutFile(t *testing.T) {
	defer func(n, w int) { goneRecent, goneWriteBytes = n, w }(goneRecent, goneWriteBytes)
	goneRecent, goneWriteBytes = 8, 256
	t.Run("no file", func(t *testing.T) {
		t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
		g := newGoneStore()
		defer g.close()
		checkGone(t, g, 300)
		if !g.noFile || g.size != 0 {
			t.Errorf("noFile %v, %d bytes written: want no file", g.noFile, g.size)
		}
	})
	t.Run("writes fail", func(t *testing.T) {
		g := newGoneStore()
		defer g.close()
		// The file is made at the first record pushed out; from then on
		// two writes succeed.
		for i := 0; i < goneRecent+1; i++ {
			g.put(fmt.Sprintf("w%d", i), goneRec(i))
		}
		g.file = &failingFile{File: g.file.(*os.File), ok: 2}
		checkGone(t, g, 300)
		if !g.noFile || g.size == 0 {
			t.Errorf("noFile %v, %d bytes written: want two writes, then none", g.noFile, g.size)
		}
		for i := 0; i < goneRecent+1; i++ {
			if e, ok, err := g.get(fmt.Sprintf("w%d", i)); err != nil || !ok || e != goneRec(i) {
				t.Fatalf("w%d: %+v %v %v", i, e, ok, err)
			}
		}
	})
}

// TestGone_FileKeepsReports judges the simulator's logs of a loaded
// cluster (late Removed facts, and in the milestones logs adoptions that
// name attempts long finished) with every record of a finished attempt
// kept in memory and with none: the reports are the same.
func TestGone_FileKeepsReports(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates four logs of 1,200 handoffs")
	}
	for _, pol := range []string{"source-first", "destination-first"} {
		for _, ms := range []bool{false, true} {
			cfg := sim.Loaded16()
			if err := cfg.SetPolicy(pol); err != nil {
				t.Fatal(err)
			}
			records := obslog.All
			if ms {
				records = obslog.Of(obslog.Milestones()...) | obslog.Of(obslog.WorkerRestarted)
			}
			var buf bytes.Buffer
			w, err := obslog.NewWriter(&buf, cfg.LogHeader(records))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sim.Run(context.Background(), cfg, sim.Synthetic(1, 1200, sim.SyntheticGapUS), sim.Options{Log: w}); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			judge := func(recent int) (*Report, error) {
				defer func(n int) { goneRecent = n }(goneRecent)
				goneRecent = recent
				return Judge([]Input{{Name: "log", R: bytes.NewReader(buf.Bytes())}}, Options{})
			}
			kept, err1 := judge(1 << 20)
			spilled, err2 := judge(0)
			if fmt.Sprint(err1) != fmt.Sprint(err2) || !cmp.Equal(kept, spilled) {
				t.Errorf("%s milestones=%v: the records' file changed the report:\n%v %v\n%s", pol, ms, err1, err2, cmp.Diff(kept, spilled))
			}
			// Every log explained to its end, far enough that records
			// were read back.
			if kept == nil || kept.Verdict != Explained || kept.Attempts != 1200 {
				t.Errorf("%s milestones=%v: %v, want all 1,200 attempts explained", pol, ms, kept)
			}
		}
	}
}
