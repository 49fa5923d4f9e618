package sim

import "github.com/handoffcheck/handoffcheck/checker/cluster"

// prefillLoad is what a prefill router weighs: the compute it booked,
// then the requests the worker holds.
func (s *Sim) prefillLoad(w int) int64 {
	k := &s.workers[w]
	return int64(k.PrefillTokens)<<16 + int64(k.InFlight)
}

// decodeLoad is what a decode router weighs: the blocks it booked and the
// blocks the worker holds for requests, then its in-flight requests.
func (s *Sim) decodeLoad(w int) int64 {
	k := &s.workers[w]
	return (int64(k.BookedBlocks)+int64(k.KVUsed()))<<16 + int64(k.InFlight)
}

// choose applies a policy to the candidate workers lo..hi-1. cached, when
// set, says which workers the KV index shows holding the request's
// prefix (KVAware).
func (s *Sim) choose(pol cluster.Router, lo, hi int, next *int, load func(int) int64, cached func(int) bool) int {
	return cluster.Choose(pol, lo, hi, next, s.rng, load, cached)
}
