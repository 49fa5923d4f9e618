package checker

import (
	"math/rand/v2"
	"testing"
)

// TestFPSet_SetIDAfterGrowth holds setID to the slot insert gave even when
// the shard grew in between: the states are all inserted first, as a
// batch's commit inserts them, so the tables grow many times over, and
// only then given their ids. Each state's lookup must give its own id.
func TestFPSet_SetIDAfterGrowth(t *testing.T) {
	s := newFPSet(true, false)
	defer s.free()
	r := rand.New(rand.NewPCG(3, 4))
	const n = 20000
	fps := make([]uint64, 0, n)
	slots := make([]uint32, 0, n)
	for len(fps) < n {
		fp := r.Uint64() | 1
		fresh, slot := s.insert(fp, nil)
		if !fresh {
			continue
		}
		fps = append(fps, fp)
		slots = append(slots, slot)
	}
	for i, fp := range fps {
		s.setID(fp, nil, slots[i], uint32(i))
	}
	for i, fp := range fps {
		if id, ok := s.lookup(fp, nil); !ok || id != uint32(i) {
			t.Fatalf("state %d: lookup gives id %d (found %v)", i, id, ok)
		}
	}
	// A state inserted again is not new and keeps its id.
	if fresh, _ := s.insert(fps[0], nil); fresh {
		t.Fatalf("a state inserted twice was new the second time")
	}
	if id, _ := s.lookup(fps[0], nil); id != 0 {
		t.Fatalf("a state inserted twice has id %d, want 0", id)
	}
}
