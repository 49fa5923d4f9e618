package checker

import (
	"testing"
	"unsafe"
)

// The fingerprint tables come from the system on Linux, small and large
// alike: a small table is n words mapped as they are, a large one starts
// and ends on huge-page boundaries. Each is zeroed and writable to its
// last word, and goes back to the system whole. (mapWords answers nil only
// when the system refuses the mapping; the caller then allocates on the
// heap, and nothing else would tell the two apart.)
func TestOffHeap_MapWords(t *testing.T) {
	for _, n := range []int{1, 1000, hugePage/8 - 1, hugePage / 8, 2*hugePage/8 + 5} {
		w := mapWords(n)
		if w == nil {
			t.Fatalf("mapWords(%d): nil, want a mapping", n)
		}
		if len(w) != n || cap(w) < n {
			t.Fatalf("mapWords(%d): len %d cap %d", n, len(w), cap(w))
		}
		if n*8 >= hugePage {
			if p := uintptr(unsafe.Pointer(unsafe.SliceData(w))); p%hugePage != 0 || (cap(w)*8)%hugePage != 0 {
				t.Errorf("mapWords(%d): starts at %#x, %d bytes mapped: want huge-page boundaries", n, p, cap(w)*8)
			}
		}
		for i := range w {
			if w[i] != 0 {
				t.Fatalf("mapWords(%d): word %d is %d, want zero", n, i, w[i])
			}
		}
		w[0], w[n-1] = 1, 1
		unmapWords(w)
	}
	if mapWords(0) != nil {
		t.Error("mapWords(0): want nil")
	}
}
