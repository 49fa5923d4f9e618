package conform

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/sim"
)

// TestGoneStore_SpillsAndFinds keeps few records in memory: every record
// put is found again, as it was last put, whether it is in memory or in
// the file, and ids never put are not found.
func TestGoneStore_SpillsAndFinds(t *testing.T) {
	defer func(n int) { goneRecent = n }(goneRecent)
	goneRecent = 8
	g := newGoneStore()
	defer g.close()
	rec := func(i int) finished {
		return finished{p: int16(i % 7), d: int16(i%5 - 1), gen: [2]int32{int32(i), -int32(i)}, removed: [2]int32{int32(i % 3), -1}, line: int32(10 * i), file: uint16(i % 4),
			dec: finishedDecoder{proc: int16(i%3 - 1), gen: uint32(1<<31 - i%2), prompt: int32(i), hit: int32(-i)}}
	}
	const n = 1000
	for i := 0; i < n; i++ {
		if err := g.put(fmt.Sprintf("r%d", i), rec(i)); err != nil {
			t.Fatal(err)
		}
	}
	if g.n != n-goneRecent || len(g.recent) != goneRecent {
		t.Fatalf("%d records in the file and %d in memory, want %d and %d", g.n, len(g.recent), n-goneRecent, goneRecent)
	}
	// A record read back and changed is found changed, after it went to
	// the file again.
	for _, i := range []int{3, 500, 997} {
		id := fmt.Sprintf("r%d", i)
		e, ok, err := g.get(id)
		if err != nil || !ok || e != rec(i) {
			t.Fatalf("%s: %+v %v %v, want %+v", id, e, ok, err, rec(i))
		}
		e.removed[0] = -1
		if err := g.put(id, e); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2*goneRecent; i++ {
		if err := g.put(fmt.Sprintf("x%d", i), rec(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		want := rec(i)
		if i == 3 || i == 500 || i == 997 {
			want.removed[0] = -1
		}
		id := fmt.Sprintf("r%d", i)
		if e, ok, err := g.get(id); err != nil || !ok || e != want {
			t.Fatalf("%s: %+v %v %v, want %+v", id, e, ok, err, want)
		}
	}
	for _, id := range []string{"r1000", "r-1", "", "x99"} {
		if _, ok, err := g.get(id); ok || err != nil {
			t.Errorf("%q: found (%v), never put", id, err)
		}
	}
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
			// Far enough that records were read back: the source-first
			// milestones log is rejected at its 772nd attempt.
			if kept == nil || kept.Attempts < 700 {
				t.Errorf("%s milestones=%v: %v attempts judged, want at least 700", pol, ms, kept)
			}
		}
	}
}
