package checker

import "github.com/handoffcheck/handoffcheck/checker/system"

// visited is the search's visited set. Each way of keeping it is a type:
//
//   - fpSet: 64-bit fingerprints in open-addressing tables (the default;
//     with ids for the liveness graph, with a sleep set per state);
//   - exactSet: full keys, no collisions;
//   - bitstateSet: a few bits of a large array per state (bitstate.go);
//   - diskStore: fingerprints on a sorted file, with a window of the
//     latest in memory (diskset.go).
//
// The explorer reaches the set only through these methods: where a mode
// differs (a key to compare, ids to keep, new states known only after a
// merge), the set says so, and no flag names the mode. Sleep sets, which
// annotate a fingerprint table's slots, and checkpoints, which write a
// set's words, name the type they work on.
type visited interface {
	// lookup finds a state by its fingerprint (and its key, for a set
	// that compares keys) and gives its id where ids are kept.
	lookup(fp uint64, k *system.Key) (uint32, bool)
	// has is lookup without the id: where ids lie apart from the
	// fingerprints, reading one is a second miss of the cache.
	has(fp uint64, k *system.Key) bool
	// insert adds a state and reports whether it was new, and the slot
	// it is in where the set has slots: setID, given the slot back, finds
	// the state there without a second probe unless the table grew since.
	// Calls for different shards may run in parallel.
	insert(fp uint64, key []uint64) (fresh bool, slot uint32)
	// admit is told of each state insert found new, in (parent, move)
	// order, and reports whether it is a new state now; false when only
	// settle can tell (a state new to a window may be on file).
	admit(cd *candidate, key []uint64) bool
	// settle gives the states admit held back, those that were new, their
	// ids (links) and their places on next: at the end of a level, and
	// after a batch when the set needs to.
	settle(links *linkLog, next *keyQueue, levelEnd bool) error
	// byKey says a fingerprint alone does not identify a state: a search
	// compares keys (and the liveness graph keeps them).
	byKey() bool
	// keepsIDs says setID records ids, which lookup then gives. slot is
	// what insert said of the state.
	keepsIDs() bool
	setID(fp uint64, key []uint64, slot uint32, id uint32)
	// growth is what the set may allocate while a level is expanded.
	growth(states int) int64
	// bytes is the set's memory with states in it; fingerprintBytes the
	// part taken by 64-bit fingerprints.
	bytes(states int) int64
	fingerprintBytes() int64
	// free gives back what the set holds outside the Go heap.
	free()
}

// newVisited makes the visited set a search's limits ask for. ids are kept
// only when asked for: the liveness graph needs the id of every state a
// transition reaches, plain safety checking needs only to know whether a
// state was seen.
func newVisited(lim Limits, words int, ids, sleep bool) visited {
	switch {
	case lim.Bitstate > 0:
		return newBitstateSet(lim.Bitstate)
	case lim.Exact:
		return newExactSet(words)
	}
	return newFPSet(ids, sleep)
}

// fpSet keeps 64-bit fingerprints, a table per shard.
type fpSet struct {
	shards [numShards]fpTable
	ids    bool
}

func newFPSet(ids, sleep bool) *fpSet {
	s := &fpSet{ids: ids}
	for i := range s.shards {
		s.shards[i].withIDs = ids
		s.shards[i].withSleep = sleep
		s.shards[i].mapped = true
	}
	return s
}

func (s *fpSet) lookup(fp uint64, _ *system.Key) (uint32, bool) {
	return s.shards[shardOf(fp)].lookup(fp)
}

func (s *fpSet) has(fp uint64, _ *system.Key) bool {
	_, ok := s.shards[shardOf(fp)].at(fp)
	return ok
}

func (s *fpSet) insert(fp uint64, _ []uint64) (bool, uint32) {
	slot, fresh := s.shards[shardOf(fp)].insert(fp)
	return fresh, uint32(slot)
}

func (s *fpSet) admit(*candidate, []uint64) bool        { return true }
func (s *fpSet) settle(*linkLog, *keyQueue, bool) error { return nil }
func (s *fpSet) byKey() bool                            { return false }
func (s *fpSet) keepsIDs() bool                         { return s.ids }
func (s *fpSet) growth(states int) int64                { return s.bytes(states) / 2 }

// touch reads, for each of x's successors, the word of the worker's cache
// (when recent) and the table slot its lookup reads first, and returns
// them summed. The loads are independent and nothing branches on them, so
// they are all under way at once; the lookups that follow, which branch
// on each word they read, would otherwise wait for one miss of the cache
// after another.
func (s *fpSet) touch(x *expander, recent bool) uint64 {
	var sum uint64
	if recent && x.recent.fps != nil {
		for j := 0; j < x.n; j++ {
			sum += x.recent.fps[x.succ[j].fp&(recentSize-1)]
		}
	}
	for j := 0; j < x.n; j++ {
		fp := x.succ[j].fp
		if t := &s.shards[shardOf(fp)]; len(t.fps) > 0 {
			sum += t.fps[t.slot(fp)]
		}
	}
	return sum
}

// peekAhead reads the table slot a probe of fp reads first, so that an
// insertion of fp soon after finds it in the cache. The word read is kept
// in the table (peeked), so that the read is not left out; only the
// goroutine inserting into that shard reads and writes it.
func (s *fpSet) peekAhead(fp uint64) {
	if t := &s.shards[shardOf(fp)]; len(t.fps) > 0 {
		t.peeked += t.fps[t.slot(fp)]
	}
}

// setID writes the id in the slot insert gave, which still holds the
// state unless the shard grew since (a fingerprint is in one slot at
// most, so a slot that holds it is its slot). Probing again for each new
// state was a second miss of the cache on a table far larger than it.
func (s *fpSet) setID(fp uint64, _ []uint64, slot uint32, id uint32) {
	t := &s.shards[shardOf(fp)]
	i := int(slot)
	if i >= len(t.fps) || t.fps[i] != fp {
		i, _ = t.find(fp)
	}
	t.ids[i] = id
}

func (s *fpSet) bytes(int) int64 {
	var n int64
	for i := range s.shards {
		n += s.shards[i].bytes()
	}
	return n
}

func (s *fpSet) fingerprintBytes() int64 {
	var n int64
	for i := range s.shards {
		n += int64(len(s.shards[i].fps)) * 8
	}
	return n
}

// slots is how many slots the tables hold.
func (s *fpSet) slots() int {
	n := 0
	for i := range s.shards {
		n += len(s.shards[i].fps)
	}
	return n
}

func (s *fpSet) free() {
	for i := range s.shards {
		s.shards[i].free()
	}
}

// sleepOf returns the sleep slot of fp, if present.
func (s *fpSet) sleepOf(fp uint64) (uint16, bool) { return s.shards[shardOf(fp)].sleepOf(fp) }

// exactSet keeps full keys, a map per shard, with each state's id.
type exactSet struct {
	words     int
	keyShards [numShards]map[system.Key]uint32
}

func newExactSet(words int) *exactSet {
	s := &exactSet{words: words}
	for i := range s.keyShards {
		s.keyShards[i] = map[system.Key]uint32{}
	}
	return s
}

func (s *exactSet) lookup(fp uint64, k *system.Key) (uint32, bool) {
	id, ok := s.keyShards[shardOf(fp)][*k]
	return id, ok
}

func (s *exactSet) has(fp uint64, k *system.Key) bool {
	_, ok := s.lookup(fp, k)
	return ok
}

func (s *exactSet) insert(fp uint64, key []uint64) (bool, uint32) {
	var k system.Key
	copy(k[:s.words], key)
	m := s.keyShards[shardOf(fp)]
	if _, ok := m[k]; ok {
		return false, 0
	}
	m[k] = ^uint32(0)
	return true, 0
}

func (s *exactSet) setID(fp uint64, key []uint64, _ uint32, id uint32) {
	var k system.Key
	copy(k[:s.words], key)
	s.keyShards[shardOf(fp)][k] = id
}

func (s *exactSet) admit(*candidate, []uint64) bool        { return true }
func (s *exactSet) settle(*linkLog, *keyQueue, bool) error { return nil }
func (s *exactSet) byKey() bool                            { return true }
func (s *exactSet) keepsIDs() bool                         { return true }
func (s *exactSet) growth(states int) int64                { return s.bytes(states) / 2 }
func (s *exactSet) fingerprintBytes() int64                { return 0 }
func (s *exactSet) free()                                  {}

// bytes estimates a Go map entry: the key, the id, and about a third
// again in overhead.
func (s *exactSet) bytes(states int) int64 {
	return int64(states) * int64(8*keyWords+4) * 4 / 3
}

// bitstateSet keeps a few bits per state (bitstate.go).
type bitstateSet struct {
	bitShards [numShards]bitSet
}

// newBitstateSet makes a bitstate visited set of size bytes.
func newBitstateSet(size int64) *bitstateSet { return &bitstateSet{bitShards: newBitSets(size)} }

func (s *bitstateSet) lookup(fp uint64, _ *system.Key) (uint32, bool) {
	return 0, s.bitShards[shardOf(fp)].has(fp)
}

func (s *bitstateSet) has(fp uint64, k *system.Key) bool {
	_, ok := s.lookup(fp, k)
	return ok
}

func (s *bitstateSet) insert(fp uint64, _ []uint64) (bool, uint32) {
	return s.bitShards[shardOf(fp)].insert(fp), 0
}

func (s *bitstateSet) admit(*candidate, []uint64) bool        { return true }
func (s *bitstateSet) settle(*linkLog, *keyQueue, bool) error { return nil }
func (s *bitstateSet) byKey() bool                            { return false }
func (s *bitstateSet) keepsIDs() bool                         { return false }
func (s *bitstateSet) setID(uint64, []uint64, uint32, uint32) {}
func (s *bitstateSet) fingerprintBytes() int64                { return 0 }

// growth is nothing: a bit array never grows.
func (s *bitstateSet) growth(int) int64 { return 0 }

func (s *bitstateSet) bytes(int) int64 {
	var n int64
	for i := range s.bitShards {
		n += int64(len(s.bitShards[i].words)) * 8
	}
	return n
}

func (s *bitstateSet) free() {
	for i := range s.bitShards {
		if s.bitShards[i].onMap {
			unmapWords(s.bitShards[i].words)
		}
		s.bitShards[i] = bitSet{}
	}
}

// diskStore keeps the fingerprints on a sorted file and those first
// reached since the last merge in a window (diskset.go). A state new to
// the window waits on the unchecked queue until a merge tells whether the
// file held it.
type diskStore struct {
	inMemory  *fpSet
	onFile    *diskSet
	unchecked *keyQueue
	words     int
}

func (s *diskStore) lookup(fp uint64, k *system.Key) (uint32, bool) { return s.inMemory.lookup(fp, k) }
func (s *diskStore) has(fp uint64, k *system.Key) bool              { return s.inMemory.has(fp, k) }
func (s *diskStore) insert(fp uint64, key []uint64) (bool, uint32)  { return s.inMemory.insert(fp, key) }
func (s *diskStore) byKey() bool                                    { return false }
func (s *diskStore) keepsIDs() bool                                 { return false }
func (s *diskStore) setID(uint64, []uint64, uint32, uint32)         {}
func (s *diskStore) bytes(states int) int64                         { return s.inMemory.bytes(states) }
func (s *diskStore) fingerprintBytes() int64                        { return s.inMemory.fingerprintBytes() }

// admit queues a state new to the window: whether it is new at all is
// known once the window is merged with the file (settle).
func (s *diskStore) admit(cd *candidate, key []uint64) bool {
	var rec [keyWords + 2]uint64
	rec[0], rec[1] = cd.fp, uint64(cd.pid)|uint64(cd.move)<<32
	copy(rec[2:], key)
	s.unchecked.push(rec[:s.words+2])
	return false
}

// settle merges the window when it is full, and at the end of a level:
// the level's last window's new states are the next frontier's last.
func (s *diskStore) settle(links *linkLog, next *keyQueue, levelEnd bool) error {
	if !levelEnd && s.windowSize() < s.onFile.window {
		return nil
	}
	return s.flush(links, next)
}

// growth is what a merge allocates: the window never grows, but a merge
// reads and writes through two buffers and marks each of the window's
// fingerprints, and the states new to the window queue in memory up to
// spillLimit.
func (s *diskStore) growth(int) int64 {
	return 2*mergeBuffer + int64(s.onFile.window) + int64(spillLimit)
}

// merges is how many merges the file took since the move to disk.
func (s *diskStore) merges() int { return s.onFile.merges - 1 }

func (s *diskStore) free() {
	s.inMemory.free()
	s.unchecked.close()
}

// fingerprint hashes the first n words of a key with a fixed 64-bit mix
// (no per-process seed: fingerprints, and so state counts and traces, are
// the same on every run).
func fingerprint(k *system.Key, n int) uint64 {
	h := uint64(0x9E3779B97F4A7C15)
	for i := 0; i < n; i++ {
		h ^= k[i]
		h *= 0xbf58476d1ce4e5b9
		h ^= h >> 31
		h *= 0x94d049bb133111eb
		h ^= h >> 29
	}
	h ^= h >> 32
	if h == 0 {
		h = 1 // 0 marks an empty slot in the fingerprint store
	}
	return h
}

// keyWords bounds a packed state's words (system.Key).
const keyWords = len(system.Key{})
