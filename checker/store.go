package checker

import (
	"math/bits"
	"unsafe"
)

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
	// idWords is the mapping ids lies in, when it came from mapWords
	// (nil: ids is on the Go heap).
	idWords []uint64
	// sleep is each state's sleep set (an index into sleepSets) and
	// whether it waits in a frontier (sleep.go); nil without sleep sets.
	sleep     []uint16
	withSleep bool
	// mapped tables take their slots from mapWords where it can (see
	// offheap_unix.go) and must be freed; onMap says the slots came from it.
	mapped, onMap bool
	n             int
	// peeked sums the words fpSet.peekAhead read.
	peeked uint64
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
	t.ids, t.idWords = nil, nil
	if t.withIDs {
		if t.onMap {
			// Mapped with the fingerprints, for the same reasons: the
			// ids are a third of the table.
			if w := mapWords((capacity + 1) / 2); w != nil {
				t.idWords = w
				t.ids = unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(w))), capacity)
			}
		}
		if t.ids == nil {
			t.ids = make([]uint32, capacity)
		}
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
	old, oldIDs, oldIDWords, oldSleep, oldOnMap := t.fps, t.ids, t.idWords, t.sleep, t.onMap
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
	unmapWords(oldIDWords)
}

// free returns a mapped table's slots to the system; the table is empty
// afterwards.
func (t *fpTable) free() {
	if t.onMap {
		unmapWords(t.fps)
	}
	unmapWords(t.idWords)
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

// sleepRef names a slot of the table by its shard (high half) and index.
func (s *fpSet) sleepRef(fp uint64) uint64 {
	sh := shardOf(fp)
	slot, _ := s.shards[sh].find(fp)
	return uint64(sh)<<32 | uint64(slot)
}

// sleepAt is the sleep slot a sleepRef names.
func (s *fpSet) sleepAt(ref uint64) *uint16 { return &s.shards[ref>>32].sleep[uint32(ref)] }
