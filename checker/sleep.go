package checker

import (
	"sync"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// Sleep sets (docs/scale.md, "Sleep sets").
//
// Persistent sets (por.go) cut states; sleep sets cut the transitions
// that lead back to states already reached through a commuting order.
// Where a state s takes t after u, and u and t are independent at s
// (they commute and neither disables the other), s.shards.u is s.u.t, which
// the search reaches from s.u: so u is put to sleep in s.shards, and passed
// on to s.shards's successors through every move independent of it.
//
// A search that stores its states is sound with sleep sets only if each
// state is expanded with the intersection of the sets of every path that
// reaches it (Godefroid's algorithm with state matching). The explorer
// keeps, beside each fingerprint, the set the state was (or will be)
// expanded with and whether it is still waiting in a frontier:
//
//   - reached again while it waits, its set is intersected; its
//     expansion, later, reads the smaller set;
//   - reached again after its expansion through a path whose set lacks
//     moves that were asleep then, the set is intersected and the state
//     goes on the next frontier once more (a wake entry), to take just
//     the moves that woke up, with the new set for their successors.
//
// Independence is judged from the same footprints as persistent sets:
// two moves of different handoffs that both may be part of a persistent
// set, and whose workers (the ones they touch or wait on) are disjoint.
// TestSleep_IndependentMovesCommute checks it on every state of small
// configurations: both orders reach the same state, and neither move
// disables the other.

// sleepSet is a set of moves named by their slots: 32 slots for each
// handoff, handoff h's in bits 32h to 32h+31.
type sleepSet [2]uint64

// slotsPerHandoff is each handoff's share of a sleepSet: its lane of
// slots (system.System.Sleep).
const slotsPerHandoff = 32

func (z *sleepSet) has(slot int) bool { return z[slot>>6]&(1<<(slot&63)) != 0 }
func (z *sleepSet) add(slot int)      { z[slot>>6] |= 1 << (slot & 63) }
func (z sleepSet) empty() bool        { return z[0]|z[1] == 0 }
func (z sleepSet) and(o sleepSet) sleepSet {
	return sleepSet{z[0] & o[0], z[1] & o[1]}
}

// within reports whether z is a subset of o.
func (z sleepSet) within(o sleepSet) bool { return z[0]&^o[0]|z[1]&^o[1] == 0 }

// lane is handoff h's 32 slots.
func (z *sleepSet) lane(h int) uint32 { return uint32(z[h>>1] >> (32 * (h & 1))) }

// renamed is z in the numbering of t's canonical form
// (system.System.RenameSleep).
func (z sleepSet) renamed(c *Checker, t *system.State) sleepSet {
	var lanes [model.MaxHandoffs]uint32
	for h := range lanes {
		lanes[h] = z.lane(h)
	}
	c.RenameSleep(t, &lanes)
	var out sleepSet
	for h, l := range lanes {
		out[h>>1] |= uint64(l) << (32 * (h & 1))
	}
	return out
}

// sleepIndexBits is the width of a set's index in the visited set's
// slots: the top bit of the 16 says the state waits in a frontier.
const (
	sleepPending   = 1 << 15
	sleepIndexMask = sleepPending - 1
)

// sleepSets interns the sets the search meets, so that each visited
// state keeps two bytes for its set. A search that meets more distinct
// sets than an index holds starts again without sleep sets (full).
type sleepSets struct {
	// tab is the table whose slots keep the sets.
	tab   *fpSet
	mu    sync.Mutex
	index map[sleepSet]uint16
	sets  []sleepSet // fixed length: read without the lock
	n     int
	full  bool
}

func newSleepSets(tab *fpSet) *sleepSets {
	return &sleepSets{tab: tab, index: map[sleepSet]uint16{{}: 0}, sets: make([]sleepSet, sleepSetsNamed), n: 1}
}

// sleepSetsNamed is how many sets an index names; a variable so that a
// test can see a search run out of them.
var sleepSetsNamed = sleepIndexMask + 1

// id interns z. An index written into a slot after id returns is read
// only by goroutines ordered after that write (a later phase, or the
// same shard's goroutine), so sets needs no lock to be read.
func (t *sleepSets) id(z sleepSet) uint16 {
	if z.empty() {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if i, ok := t.index[z]; ok {
		return i
	}
	if t.n == len(t.sets) {
		// No index left: the empty set is always sound (the state takes
		// every move); the search starts again without sleep sets.
		t.full = true
		return 0
	}
	i := uint16(t.n)
	t.sets[i] = z
	t.index[z] = i
	t.n++
	return i
}

func (t *sleepSets) get(v uint16) sleepSet { return t.sets[v&sleepIndexMask] }

// sleepMoves is what sleep sets need of a state's moves: each move's
// slot, whether it may sleep, and the workers it touches or waits on.
type sleepMoves struct {
	slot [maxMoves]int8
	ws   [maxMoves]uint8
}

// sleepInfo fills sm for the moves of s.
func (c *Checker) sleepInfo(s *system.State, ms *system.MoveSet, sm *sleepMoves) {
	for i := 0; i < ms.N; i++ {
		m := ms.M[i]
		sm.slot[i] = -1
		sl, ws := c.Sleep(s, m)
		if sl < 0 {
			continue
		}
		sm.slot[i] = int8(int(m.H)*slotsPerHandoff + sl)
		sm.ws[i] = ws
	}
}

// independent reports whether moves i and j of a state commute there and
// neither disables the other.
func (sm *sleepMoves) independent(ms *system.MoveSet, i, j int) bool {
	return sm.slot[i] >= 0 && sm.slot[j] >= 0 && ms.M[i].H != ms.M[j].H && sm.ws[i]&sm.ws[j] == 0
}

// sleepFull marks a frontier entry expanded for the first time (every
// move of its set that is awake); any other value is a wake entry's
// earlier set, by index.
const sleepFull = ^uint64(0)

// sleepDroppedDisk and sleepDroppedFull say why a search started again
// without sleep sets.
const (
	sleepDroppedDisk = "the fingerprints had to move to disk, where sleep sets are not kept"
	sleepDroppedFull = "it met more distinct sleep sets than a state's two bytes can name"
)

// sleepsOn reports whether a search with these limits uses sleep sets:
// a reduced search whose visited set is a fingerprint table (it moves
// to disk only by starting again without them), and that writes and
// reads no checkpoint (neither keeps the sets).
func (e *exploration) sleepsOn(lim Limits) bool {
	return e.por && lim.Sleep && !lim.Exact && lim.Bitstate == 0 && !lim.Liveness &&
		lim.Checkpoint == "" && lim.Resume == ""
}

// states is the number of distinct states: the ids less the wake
// entries, which list a state again.
func (e *exploration) states() int { return e.links.n - e.woken }

// entry is a frontier entry: the key, and with sleep sets the extra word.
func (e *exploration) entry(k []uint64, extra uint64) []uint64 {
	if e.sleep == nil {
		return k
	}
	buf := e.entryBuf[:0]
	buf = append(buf, k...)
	e.entryBuf = append(buf, extra)
	return e.entryBuf
}

// sleepAction is a known state reached with a set that does not hold
// its own: the commit cuts its set, and wakes it if it was expanded.
type sleepAction struct {
	fp   uint64
	z    sleepSet
	pid  uint32
	move uint8
}

// successorSleep is the set that the successor t of s by move mi is
// reached with: the moves asleep in s or taken from s before mi that are
// independent of mi, named as t's canonical form names them.
func (c *Checker) successorSleep(s, t *system.State, ms *system.MoveSet, sm *sleepMoves, mi int, z, taken sleepSet) sleepSet {
	var out sleepSet
	if sm.slot[mi] < 0 || z.empty() && taken.empty() {
		return out
	}
	for j := 0; j < ms.N; j++ {
		sl := int(sm.slot[j])
		if sl >= 0 && (z.has(sl) || taken.has(sl)) && sm.independent(ms, j, mi) {
			out.add(sl)
		}
	}
	if !out.empty() && c.Symmetric() {
		out = out.renamed(c, t)
	}
	return out
}

// commitSleep is the commit's part for sleep sets, after the batch's new
// states have their ids. The states expanded in the batch stop waiting;
// then each known state reached with a set that does not hold its own
// has its set cut to the intersection, and one that was expanded goes
// on the next frontier again, with the set it was expanded with, to take
// the moves that woke up. In chunk order, so in (parent, move) order:
// the same for any number of workers.
func (e *exploration) commitSleep(outs []workerOut, next *keyQueue) {
	for w := range outs {
		o := &outs[w]
		for ai, a := range o.actions {
			v := e.sleep.tab.sleepAt(e.sleep.tab.sleepRef(a.fp))
			cur := *v
			old := e.sleep.get(cur)
			z := old.and(a.z)
			if z == old {
				continue
			}
			*v = cur&sleepPending | e.sleep.id(z)
			if cur&sleepPending != 0 {
				// Still waiting: its expansion reads the smaller set.
				continue
			}
			*v |= sleepPending
			e.links.append(a.pid, a.move)
			e.woken++
			next.push(e.entry(o.wakeKeys[ai*e.words:(ai+1)*e.words], uint64(cur&sleepIndexMask)))
		}
	}
}

// endWaits marks the states a batch expanded as no longer waiting in a
// frontier, before the commit inserts anything (the slots found when
// they were expanded stay put until then).
func (e *exploration) endWaits(outs []workerOut) {
	for w := range outs {
		for _, ref := range outs[w].expanded {
			*e.sleep.tab.sleepAt(ref) &^= sleepPending
		}
	}
}

// insertSleep adds a candidate with its sleep set: a new state waits in
// the next frontier with the set; one already there (first reached
// earlier in this level) keeps the intersection.
func (e *exploration) insertSleep(cd *candidate, z sleepSet) {
	t := &e.sleep.tab.shards[shardOf(cd.fp)]
	slot, fresh := t.insert(cd.fp)
	cd.isNew = fresh
	if fresh {
		t.sleep[slot] = sleepPending | e.sleep.id(z)
		return
	}
	cur := t.sleep[slot]
	old := e.sleep.get(cur)
	if z := old.and(z); z != old {
		t.sleep[slot] = cur&sleepPending | e.sleep.id(z)
	}
}
