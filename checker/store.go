package checker

import "math/bits"

// The visited set is split into shards by the top bits of the
// fingerprint, so that parallel workers insert into disjoint shards
// without locks, each in a fixed order (deterministic results).
const shardBits = 6
const numShards = 1 << shardBits

func shardOf(fp uint64) int { return int(fp >> (64 - shardBits)) }

// fpTable is an open-addressing set of 64-bit fingerprints with linear
// probing over a capacity that is not a power of two (indexing by
// multiply-shift), so that growth by 1.5× keeps the load between 0.53 and
// 0.8 and the store near 8/0.8 = 10 to 15 bytes per state. Each slot also
// holds the state's id.
type fpTable struct {
	fps     []uint64
	ids     []uint32 // nil unless the store keeps ids (for the liveness graph)
	withIDs bool
	// sleep is each state's sleep set (an index into sleepSets) and
	// whether it waits in a frontier (sleep.go); nil without sleep sets.
	sleep     []uint16
	withSleep bool
	// mapped tables take their slots from mapWords where it can (see
	// offheap_unix.go) and must be freed; onMap says the slots came from it.
	mapped, onMap bool
	n             int
}

const maxLoadNum, maxLoadDen = 4, 5 // 0.8

func (t *fpTable) init(capacity int) {
	capacity = max(capacity, 16)
	t.fps, t.onMap = nil, false
	if t.mapped {
		t.fps = mapWords(capacity)
		t.onMap = t.fps != nil
	}
	if t.fps == nil {
		t.fps = make([]uint64, capacity)
	}
	if t.withIDs {
		t.ids = make([]uint32, capacity)
	}
	if t.withSleep {
		t.sleep = make([]uint16, capacity)
	}
	t.n = 0
}

func (t *fpTable) slot(fp uint64) int {
	hi, _ := bits.Mul64(fp<<shardBits|fp>>(64-shardBits), uint64(len(t.fps)))
	return int(hi)
}

// find returns the slot holding fp, or the empty slot where it belongs.
func (t *fpTable) find(fp uint64) (int, bool) {
	i := t.slot(fp)
	for {
		switch t.fps[i] {
		case fp:
			return i, true
		case 0:
			return i, false
		}
		i++
		if i == len(t.fps) {
			i = 0
		}
	}
}

// at returns the slot holding fp, if present.
func (t *fpTable) at(fp uint64) (int, bool) {
	if t.fps == nil {
		return 0, false
	}
	return t.find(fp)
}

// lookup returns the id of fp, if present.
func (t *fpTable) lookup(fp uint64) (uint32, bool) {
	i, ok := t.at(fp)
	if !ok {
		return 0, false
	}
	if t.ids == nil {
		return 0, true
	}
	return t.ids[i], true
}

// insert adds fp and returns its slot and whether it was new. The id of a
// new slot is set later with setID.
func (t *fpTable) insert(fp uint64) (int, bool) {
	if t.fps == nil {
		t.init(16)
	}
	i, ok := t.find(fp)
	if ok {
		return i, false
	}
	// Grow only for a new fingerprint: how many duplicates a level offers
	// depends on how its states were split among workers, and the table's
	// size (reported as bytes per state) must not.
	if (t.n+1)*maxLoadDen > len(t.fps)*maxLoadNum {
		t.grow()
		i, _ = t.find(fp)
	}
	t.fps[i] = fp
	t.n++
	return i, true
}

func (t *fpTable) grow() {
	old, oldIDs, oldSleep, oldOnMap := t.fps, t.ids, t.sleep, t.onMap
	t.init(len(old) + len(old)/2)
	for j, fp := range old {
		if fp == 0 {
			continue
		}
		i, _ := t.find(fp)
		t.fps[i] = fp
		if t.ids != nil {
			t.ids[i] = oldIDs[j]
		}
		if t.sleep != nil {
			t.sleep[i] = oldSleep[j]
		}
		t.n++
	}
	if oldOnMap {
		unmapWords(old)
	}
}

// free returns a mapped table's slots to the system; the table is empty
// afterwards.
func (t *fpTable) free() {
	if t.onMap {
		unmapWords(t.fps)
	}
	*t = fpTable{withIDs: t.withIDs, withSleep: t.withSleep, mapped: t.mapped}
}

func (t *fpTable) bytes() int64 {
	return int64(len(t.fps))*8 + int64(len(t.ids))*4 + int64(len(t.sleep))*2
}

// sleepOf returns the sleep slot of fp, if present.
func (t *fpTable) sleepOf(fp uint64) (uint16, bool) {
	i, ok := t.at(fp)
	if !ok {
		return 0, false
	}
	return t.sleep[i], true
}

// store is the visited set: fingerprints, full keys in exact mode, or
// bits in bitstate mode (see bitstate.go).
type store struct {
	exact bool
	words int
	fp    [numShards]fpTable
	keys  [numShards]map[Key]uint32
	// bitstate is set when the store keeps bits, in bits.
	bitstate bool
	bits     [numShards]bitSet
}

// newBitStore makes a bitstate visited set of size bytes.
func newBitStore(words int, size int64) *store {
	return &store{words: words, bitstate: true, bits: newBitSets(size)}
}

// newStore makes a visited set. ids are kept only when asked for: the
// liveness graph needs the id of every state a transition reaches, plain
// safety checking needs only to know whether a state was seen.
func newStore(exact bool, words int, ids, sleep bool) *store {
	s := &store{exact: exact, words: words}
	for i := range s.fp {
		s.fp[i].withIDs = ids
		s.fp[i].withSleep = sleep
		s.fp[i].mapped = true
	}
	if exact {
		for i := range s.keys {
			s.keys[i] = map[Key]uint32{}
		}
	}
	return s
}

// free returns the store's tables to the system.
func (s *store) free() {
	for i := range s.fp {
		s.fp[i].free()
	}
	for i := range s.bits {
		if s.bits[i].onMap {
			unmapWords(s.bits[i].words)
		}
		s.bits[i] = bitSet{}
	}
}

// lookup finds a state's id by fingerprint (and key, in exact mode).
func (s *store) lookup(fp uint64, k *Key) (uint32, bool) {
	sh := shardOf(fp)
	switch {
	case s.exact:
		id, ok := s.keys[sh][*k]
		return id, ok
	case s.bitstate:
		return 0, s.bits[sh].has(fp)
	}
	return s.fp[sh].lookup(fp)
}

// insertFP adds a fingerprint (or its bits) and reports whether it was new.
func (s *store) insertFP(fp uint64) bool {
	sh := shardOf(fp)
	if s.bitstate {
		return s.bits[sh].insert(fp)
	}
	_, fresh := s.fp[sh].insert(fp)
	return fresh
}

// fingerprintBytes is the memory of the fingerprint slots alone.
func (s *store) fingerprintBytes() int64 {
	var n int64
	for i := range s.fp {
		n += int64(len(s.fp[i].fps)) * 8
	}
	return n
}

// bytes estimates the store's memory.
func (s *store) bytes(states int) int64 {
	if s.exact {
		// a Go map entry: the key, the id, and about a third again in overhead
		return int64(states) * int64(8*KeyWords+4) * 4 / 3
	}
	var n int64
	for i := range s.fp {
		n += s.fp[i].bytes()
	}
	for i := range s.bits {
		n += int64(len(s.bits[i].words)) * 8
	}
	return n
}
