// Package relabel renames a world's workers field by field, for the tests
// that hold symmetry reduction to its definition: it works on the world's
// fields, not on packed words, so that it does not share a slip with the
// renaming the canonical form applies (model.RemapHandoff).
package relabel

import "github.com/handoffcheck/handoffcheck/model"

// Workers returns the world with worker w renamed perm[w]: the workers'
// counters move to their new places, and each handoff's prefill and
// decode worker and the workers whose prefix is gone are renamed.
func Workers(w *model.World, perm *[model.MaxWorkers]int8) model.World {
	r := *w
	for i := 0; i < w.NumWorkers(); i++ {
		r.W[perm[i]] = w.W[i]
	}
	for h := range r.H {
		x := &r.H[h]
		if x.Prefill >= 0 {
			x.Prefill = perm[x.Prefill]
		}
		if x.Decode >= 0 {
			x.Decode = perm[x.Decode]
		}
		gone := x.PrefixGone
		x.PrefixGone = 0
		for i := 0; i < w.NumWorkers(); i++ {
			if gone&(1<<i) != 0 {
				x.PrefixGone |= 1 << perm[i]
			}
		}
	}
	return r
}
