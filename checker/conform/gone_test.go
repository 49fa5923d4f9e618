package conform

import (
	"fmt"
	"testing"
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
		return finished{p: int16(i % 7), d: int16(i%5 - 1), gen: [2]int32{int32(i), -int32(i)}, removed: [2]int32{int32(i % 3), -1}, line: int32(10 * i), file: uint16(i % 4)}
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
