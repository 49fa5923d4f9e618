package checker

import (
	"math"
	"math/bits"
)

// Bitstate search keeps, instead of each state's fingerprint, a few bits
// of a large bit array per state (a Bloom filter, as the classic supertrace
// mode does): a state is taken as visited when all of its bits are set.
// It reaches far more states in the same memory than a fingerprint table,
// at the price of omissions: a new state whose bits happen to be set
// already is never explored. Every state it does explore is checked as in
// any search, so a violation it reports is real; a pass is a partial
// search, whose coverage the report estimates.

// bitHashes is how many bits each state sets.
const bitHashes = 3

// bitSet is one shard's region of the bit array.
type bitSet struct {
	words []uint64
	onMap bool  // the words came from mapWords
	set   int64 // bits set, for the fill ratio
	// missed sums, over the states found new, the chance that a state
	// arriving at that fill was wrongly taken as visited, p/(1-p): the
	// expected number of states omitted per state explored.
	missed float64
}

// positions gives the bits of fp in a region of n bits.
func bitPositions(fp uint64, n uint64) [bitHashes]uint64 {
	var p [bitHashes]uint64
	h := fp
	for i := range p {
		// A fresh mix per position: the positions of one state are
		// independent, and the shard's bits of fp bias none of them.
		h += 0x9E3779B97F4A7C15
		x := h
		x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
		x = (x ^ x>>27) * 0x94d049bb133111eb
		x ^= x >> 31
		p[i], _ = bits.Mul64(x, n)
	}
	return p
}

func (b *bitSet) has(fp uint64) bool {
	n := uint64(len(b.words)) * 64
	for _, p := range bitPositions(fp, n) {
		if b.words[p/64]&(1<<(p%64)) == 0 {
			return false
		}
	}
	return true
}

// insert sets fp's bits and reports whether any was clear: the state is new.
func (b *bitSet) insert(fp uint64) bool {
	n := uint64(len(b.words)) * 64
	fresh := false
	for _, p := range bitPositions(fp, n) {
		w, m := &b.words[p/64], uint64(1)<<(p%64)
		if *w&m == 0 {
			*w |= m
			b.set++
			fresh = true
		}
	}
	if fresh {
		if q := b.omission(); q < 1 {
			b.missed += q / (1 - q)
		} else {
			b.missed = math.Inf(1)
		}
	}
	return fresh
}

// omission is the chance that a new state arriving now finds all of its
// bits set: the fill ratio to the power of the hashes.
func (b *bitSet) omission() float64 {
	return math.Pow(float64(b.set)/float64(len(b.words)*64), bitHashes)
}

// bitstateReport is what a bitstate search reports of its bit array.
type bitstateReport struct {
	Bytes  int64 // the bit array's size
	Hashes int   // bits set per state
	// Fill is the fraction of bits set at the end; Omission the chance
	// that a new state arriving at the end would have been taken as
	// visited (Fill to the power of Hashes).
	Fill, Omission float64
	// Coverage estimates the fraction of the reachable states that the
	// search explored: explored over explored plus the expected
	// omissions. It cannot count the successors of omitted states, which
	// were never generated, so it is high once the array fills: close
	// while under half the bits are set (TestBitstate_SmallArray...).
	Coverage float64
}

// newBitSets splits size bytes of bits among the shards, at least one
// word each.
func newBitSets(size int64) [numShards]bitSet {
	var b [numShards]bitSet
	words := max(int(size/8/numShards), 1)
	for i := range b {
		b[i].words = mapWords(words)
		b[i].onMap = b[i].words != nil
		if b[i].words == nil {
			b[i].words = make([]uint64, words)
		}
	}
	return b
}

// bitstateReport sums the shards' figures.
func (s *bitstateSet) report(states int) *bitstateReport {
	r := &bitstateReport{Hashes: bitHashes}
	var set, total int64
	missed := 0.0
	for i := range s.bitShards {
		set += s.bitShards[i].set
		total += int64(len(s.bitShards[i].words)) * 64
		missed += s.bitShards[i].missed
	}
	r.Bytes = total / 8
	r.Fill = float64(set) / float64(total)
	r.Omission = math.Pow(r.Fill, bitHashes)
	r.Coverage = float64(states) / (float64(states) + missed)
	return r
}
