package system

import (
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// State is one state of the composed system: the physical world, each
// handoff's source and destination machine state, and the environment's
// remaining fault budget.
type State struct {
	W   model.World
	Src [model.MaxHandoffs]uint8
	Dst [model.MaxHandoffs]uint8
	B   Remaining
}

// Role is the machine state of a handoff's role.
func (s *State) Role(r spec.Role, h int) uint8 {
	if r == spec.Source {
		return s.Src[h]
	}
	return s.Dst[h]
}

func (s *State) rolePtr(r spec.Role, h int) *uint8 {
	if r == spec.Source {
		return &s.Src[h]
	}
	return &s.Dst[h]
}

// Records tells the model's invariants which role records are terminal.
func (c *System) Records(s *State) model.Records {
	var rec model.Records
	for h := 0; h < c.nH; h++ {
		rec.Terminal[h][model.SourceSide] = c.terminals[spec.Source]>>s.Src[h]&1 != 0
		rec.Terminal[h][model.DestinationSide] = c.terminals[spec.Destination]>>s.Dst[h]&1 != 0
		rec.Ended[h][model.SourceSide] = c.proto.ended[spec.Source][s.Src[h]]
		rec.Ended[h][model.DestinationSide] = c.proto.ended[spec.Destination][s.Dst[h]]
	}
	return rec
}

// keyWords bounds a packed state: the budget, one word per worker, two per
// handoff.
const keyWords = 1 + model.MaxWorkers + model.HandoffWords*model.MaxHandoffs

// Key is a canonical packed state. Two states with the same key behave the
// same; under symmetry reduction, states that differ only by a renaming of
// interchangeable handoffs or workers share one key.
type Key [keyWords]uint64

// pack writes the state's key with handoffs in index order.
func (c *System) pack(s *State, k *Key) {
	k[0] = uint64(s.B)
	for w := 0; w < c.nW; w++ {
		k[1+w] = s.W.PackWorker(w)
	}
	base := 1 + c.nW
	for h := 0; h < c.nH; h++ {
		k[base+2*h], k[base+2*h+1] = s.W.PackHandoffWords(h, uint64(s.Src[h])|uint64(s.Dst[h])<<4)
	}
}

// CanonicalFrom is Key for a successor s of state parent, whose
// packing is pk (the key it was unpacked from is its packing: the
// explorer's case), by a move on handoff moved (-1: none). A handoff the
// move left as it was has the parent's words, without packing it again.
// Most moves change only their own handoff, which is packed without
// asking; another is compared with the parent's record first, which
// costs a fraction of packing it.
func (c *System) CanonicalFrom(s, parent *State, pk, k *Key, moved int) {
	k[0] = uint64(s.B)
	for w := 0; w < c.nW; w++ {
		k[1+w] = s.W.PackWorker(w)
	}
	base := 1 + c.nW
	for h := 0; h < c.nH; h++ {
		i := base + 2*h
		if h != moved && s.Src[h] == parent.Src[h] && s.Dst[h] == parent.Dst[h] && model.SameHandoff(&s.W.H[h], &parent.W.H[h]) {
			k[i], k[i+1] = pk[i], pk[i+1]
			continue
		}
		k[i], k[i+1] = s.W.PackHandoffWords(h, uint64(s.Src[h])|uint64(s.Dst[h])<<4)
	}
	clear(k[base+model.HandoffWords*c.nH:])
	c.canonicalize(k)
}

// canonicalize turns a packing into the canonical key: canonical after
// the packing.
func (c *System) canonicalize(k *Key) {
	switch {
	case !c.sym.any():
	case len(c.sym.perms) == 1:
		c.sym.sortHandoffsNaming(k, 1+c.nW, nil)
	default:
		c.renamePacked(k)
	}
}

// naming is how canonical renames a state: handoff h goes to position
// Hp[h], worker w to Wp[w] (sleep sets rename their moves with it).
type naming struct {
	Hp [model.MaxHandoffs]int8
	Wp [model.MaxWorkers]int8
}

// canonical writes the state's canonical key (Key).
func (c *System) canonical(s *State, k *Key) { c.canonicalNaming(s, k, nil) }

// canonicalNaming is canonical, and when nm is given it also says how the
// state was renamed: the renaming of the key it writes.
func (c *System) canonicalNaming(s *State, k *Key, nm *naming) {
	if nm == nil {
		c.pack(s, k)
		c.canonicalize(k)
		return
	}
	c.pack(s, k)
	// pos[p] is the handoff at position p, tracked only for nm.
	var pos, bestPos [model.MaxHandoffs]int8
	var posp *[model.MaxHandoffs]int8
	if nm != nil {
		for h := range pos {
			pos[h] = int8(h)
		}
		for w := range nm.Wp {
			nm.Wp[w] = int8(w)
		}
		posp = &pos
	}
	if !c.sym.any() {
		nm.place(&pos)
		return
	}
	base := 1 + c.nW
	if len(c.sym.perms) == 1 {
		c.sym.sortHandoffsNaming(k, base, posp)
		nm.place(&pos)
		return
	}
	plain := *k
	var cand Key
	for i := range c.sym.perms {
		perm := &c.sym.perms[i]
		cand[0] = plain[0]
		for w := 0; w < c.nW; w++ {
			cand[1+int(perm[w])] = plain[1+w]
		}
		if i > 0 && workersAfter(&cand, k, c.nW) {
			// The worker words come before the handoffs' in the key: a
			// renaming whose workers already sort after the best so far
			// cannot give a smaller key, whatever its handoffs.
			continue
		}
		for h := 0; h < c.nH; h++ {
			ws := [model.HandoffWords]uint64{plain[base+2*h], plain[base+2*h+1]}
			if i > 0 {
				model.RemapHandoff(&ws, perm)
			}
			cand[base+2*h], cand[base+2*h+1] = ws[0], ws[1]
		}
		if nm != nil {
			for h := range pos {
				pos[h] = int8(h)
			}
		}
		c.sym.sortHandoffsNaming(&cand, base, posp)
		if i == 0 || less(&cand, k) {
			*k = cand
			if nm != nil {
				bestPos, nm.Wp = pos, *perm
			}
		}
	}
	nm.place(&bestPos)
}

// renamePacked is canonicalize for a symmetry that renames workers: the
// key canonicalNaming gives, the least over every renaming, with fewer
// copies. The handoffs of the packing in k are sorted there: that is the identity's key, and every other
// renaming is made from it (renaming the workers of sorted handoffs and
// sorting again gives what renaming the unsorted ones would). The best
// key so far is a pointer, not a copy; k gets a renaming's words only when
// one is less. Words are copied and compared one at a time and only as
// many as the state has: a copy of the whole key reads back, with wide
// loads, words just written one by one, which the processor cannot
// forward from its stores.
func (c *System) renamePacked(k *Key) {
	base := 1 + c.nW
	n := base + model.HandoffWords*c.nH
	c.sym.sortHandoffsNaming(k, base, nil)
	var bufs [2]Key
	best, cand := k, &bufs[0]
	for i := 1; i < len(c.sym.perms); i++ {
		perm := &c.sym.perms[i]
		cand[0] = k[0]
		for w := 0; w < c.nW; w++ {
			cand[1+int(perm[w])] = k[1+w]
		}
		if workersAfter(cand, best, c.nW) {
			// The worker words come before the handoffs' in the key: a
			// renaming whose workers already sort after the best so far
			// cannot give a smaller key, whatever its handoffs.
			continue
		}
		for h := 0; h < c.nH; h++ {
			ws := [model.HandoffWords]uint64{k[base+2*h], k[base+2*h+1]}
			model.RemapHandoff(&ws, perm)
			cand[base+2*h], cand[base+2*h+1] = ws[0], ws[1]
		}
		c.sym.sortHandoffsNaming(cand, base, nil)
		if lessIn(cand, best, n) {
			if best == k {
				best, cand = cand, &bufs[1]
			} else {
				best, cand = cand, best
			}
		}
	}
	if best != k {
		for j := 0; j < n; j++ {
			k[j] = best[j]
		}
	}
	// The words past the state's are zero, as in every key.
	clear(k[n:])
}

// lessIn is less over the first n words.
func lessIn(a, b *Key, n int) bool {
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// place sets hp from the handoff at each position; nothing without nm.
func (nm *naming) place(pos *[model.MaxHandoffs]int8) {
	if nm == nil {
		return
	}
	for p := range pos {
		nm.Hp[pos[p]] = int8(p)
	}
}

// workersAfter reports whether a's worker words sort after b's (the
// words before them are the same in both).
func workersAfter(a, b *Key, nW int) bool {
	for i := 1; i <= nW; i++ {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return false
}

func less(a, b *Key) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// UnpackTo rebuilds the state a key stands for into a state the caller
// holds: the explorer unpacks every state it expands, and a state
// returned by value would be copied on its way out.
func (c *System) UnpackTo(k *Key, s *State) {
	s.B = Remaining(k[0])
	base := 1 + c.nW
	var hw [model.MaxHandoffs][model.HandoffWords]uint64
	for h := 0; h < c.nH; h++ {
		hw[h] = [model.HandoffWords]uint64{k[base+2*h], k[base+2*h+1]}
	}
	var extra [model.MaxHandoffs]uint64
	model.UnpackTo(&s.W, c.world, hw[:c.nH], k[1:base], extra[:c.nH])
	s.Src, s.Dst = [model.MaxHandoffs]uint8{}, [model.MaxHandoffs]uint8{}
	for h := 0; h < c.nH; h++ {
		s.Src[h] = uint8(extra[h] & 15)
		s.Dst[h] = uint8(extra[h] >> 4)
	}
}
