package cluster

import (
	"math/rand/v2"
	"strings"
)

// Router is a router's selection policy (docs/lifecycle.md section 5,
// router-modes): the lifecycle must hold whichever worker is chosen.
type Router uint8

const (
	// LeastLoaded picks the worker with the least load: a prefill
	// worker's compute load (active_prefill_tokens), a decode worker's
	// booked and held blocks; ties go to the lower index.
	LeastLoaded Router = iota
	// RoundRobin picks the workers in turn.
	RoundRobin
	// Random picks a worker uniformly with the run's seed.
	Random
	// PowerOfTwo draws two workers with the run's seed and picks the
	// less loaded.
	PowerOfTwo
	// KVAware picks a decode worker whose published KV index (KVIndex)
	// advertises the request's prefix group, the least loaded of those,
	// else the least loaded of all.
	KVAware
	numRouters
)

var routerNames = [numRouters]string{"least-loaded", "round-robin", "random", "power-of-two", "kv-aware"}

func (r Router) String() string { return routerNames[r] }

func parseRouter(s string, def Router) (Router, bool) {
	if s == "" {
		return def, true
	}
	for i, n := range routerNames {
		if n == s {
			return Router(i), true
		}
	}
	return 0, false
}

func routerList() string { return strings.Join(routerNames[:], ", ") }

// Choose applies a router policy to the candidate workers lo..hi-1 with
// the given loads: the one selection rule of every adapter. next is the
// round-robin cursor, rng the run's seeded draws; cached, when set, says
// which workers advertise the request's prefix (KVAware: KVIndex.Holds).
func Choose(pol Router, lo, hi int, next *int, rng *rand.Rand, load func(int) int64, cached func(int) bool) int {
	n := hi - lo
	least := func(ok func(int) bool) int {
		best := -1
		for w := lo; w < hi; w++ {
			if ok != nil && !ok(w) {
				continue
			}
			if best < 0 || load(w) < load(best) {
				best = w
			}
		}
		return best
	}
	switch pol {
	case RoundRobin:
		w := lo + *next%n
		*next++
		return w
	case Random:
		return lo + rng.IntN(n)
	case PowerOfTwo:
		a, b := lo+rng.IntN(n), lo+rng.IntN(n)
		if load(b) < load(a) {
			return b
		}
		return a
	case KVAware:
		if cached != nil {
			if w := least(cached); w >= 0 {
				return w
			}
		}
	}
	return least(nil)
}
