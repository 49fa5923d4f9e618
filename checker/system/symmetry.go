package system

import (
	"slices"

	"github.com/handoffcheck/handoffcheck/model"
)

// symmetry describes which handoffs and workers are interchangeable:
// same role and configuration for workers, same request for handoffs, and
// the same prefix hit of each handoff on each worker. Renaming
// interchangeable ones maps every behaviour to an equivalent behaviour, so
// the checker may keep one state per orbit (safety properties and the
// reachability of drained states are preserved: both are invariant under
// the renaming).
type symmetry struct {
	// perms renames workers; the first is the identity.
	perms [][model.MaxWorkers]int8
	// classes groups the positions of interchangeable handoffs.
	classes [][]int
}

func (s *symmetry) any() bool {
	if len(s.perms) > 1 {
		return true
	}
	for _, c := range s.classes {
		if len(c) > 1 {
			return true
		}
	}
	return false
}

// newSymmetry finds the interchangeable workers and handoffs of a world.
func newSymmetry(c *model.Config, workers, handoffs bool) symmetry {
	nW, nH := c.NumWorkers(), c.NumHandoffs()
	hit := func(w, h int) model.Tokens {
		if h < len(c.Workers[w].PrefixHit) {
			return c.Workers[w].PrefixHit[h]
		}
		return 0
	}
	sameWorker := func(a, b int) bool {
		wa, wb := c.Workers[a], c.Workers[b]
		if wa.Role != wb.Role || wa.Capacity != wb.Capacity || wa.Slots != wb.Slots || wa.Headroom != wb.Headroom ||
			wa.BackgroundBlocks != wb.BackgroundBlocks || wa.BackgroundSlots != wb.BackgroundSlots || wa.BackgroundAtStart != wb.BackgroundAtStart {
			return false
		}
		for h := 0; h < nH; h++ {
			if hit(a, h) != hit(b, h) {
				return false
			}
		}
		return true
	}
	sameHandoff := func(a, b int) bool {
		if c.Handoffs[a] != c.Handoffs[b] {
			return false
		}
		for w := 0; w < nW; w++ {
			if hit(w, a) != hit(w, b) {
				return false
			}
		}
		return true
	}
	var s symmetry
	var identity [model.MaxWorkers]int8
	for i := range identity {
		identity[i] = int8(i)
	}
	s.perms = [][model.MaxWorkers]int8{identity}
	if workers {
		for _, class := range classesOf(nW, sameWorker) {
			if len(class) < 2 {
				continue
			}
			var next [][model.MaxWorkers]int8
			for _, p := range s.perms {
				for _, order := range permutations(class) {
					q := p
					for i, from := range class {
						q[from] = int8(order[i])
					}
					next = append(next, q)
				}
			}
			s.perms = next
		}
	}
	if handoffs {
		s.classes = classesOf(nH, sameHandoff)
	}
	return s
}

// classesOf partitions 0..n-1 by an equivalence, in index order.
func classesOf(n int, same func(a, b int) bool) [][]int {
	var classes [][]int
	for i := 0; i < n; i++ {
		placed := false
		for j, cl := range classes {
			if same(cl[0], i) {
				classes[j] = append(classes[j], i)
				placed = true
				break
			}
		}
		if !placed {
			classes = append(classes, []int{i})
		}
	}
	return classes
}

// permutations lists every ordering of xs, the identity first.
func permutations(xs []int) [][]int {
	if len(xs) <= 1 {
		return [][]int{slices.Clone(xs)}
	}
	var out [][]int
	for i := range xs {
		rest := append(slices.Clone(xs[:i]), xs[i+1:]...)
		for _, p := range permutations(rest) {
			out = append(out, append([]int{xs[i]}, p...))
		}
	}
	return out
}

// sortHandoffs sorts the two-word handoff records within each class of
// interchangeable handoffs, in place.
func (s *symmetry) sortHandoffs(k *Key, base, nH int) { s.sortHandoffsNaming(k, base, nil) }

// sortHandoffsNaming sorts the handoff records and, when pos is given,
// moves it with them (pos[p]: which handoff is at position p), for
// sleep sets' renaming. Insertion sort over each class: classes are tiny.
func (s *symmetry) sortHandoffsNaming(k *Key, base int, pos *[model.MaxHandoffs]int8) {
	for _, cl := range s.classes {
		if len(cl) < 2 {
			continue
		}
		for i := 1; i < len(cl); i++ {
			for j := i; j > 0; j-- {
				a, b := base+2*cl[j-1], base+2*cl[j]
				if k[a] < k[b] || (k[a] == k[b] && k[a+1] <= k[b+1]) {
					break
				}
				k[a], k[b] = k[b], k[a]
				k[a+1], k[b+1] = k[b+1], k[a+1]
				if pos != nil {
					pos[cl[j-1]], pos[cl[j]] = pos[cl[j]], pos[cl[j-1]]
				}
			}
		}
	}
}
