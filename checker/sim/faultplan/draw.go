package faultplan

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/handoffcheck/handoffcheck/checker/sim/workload"
)

// MaxDrawFaults bounds the faults Draw draws.
const MaxDrawFaults = 1 << 20

// drawStream is the second word of the PCG state, fixed so that the seed
// alone chooses the stream ("faults" in ASCII).
const drawStream = 0x6661756c7473

// Draw draws a random plan of n faults, for runs that search for trouble
// without aiming at it: times uniform in 0 to horizonUS, kinds uniform
// among kinds (nil: every schedulable kind), requests uniform among
// 0..requests-1 and workers among 0..workers-1, a side uniform, and "to"
// uniform among either side, the source and the destination. It never
// sets "msg": the plan does not know the simulator's fact names.
//
// The draws are integers from math/rand/v2's PCG seeded with seed, so the
// same arguments give the same plan on every machine. Each fault's Line
// is the line Write puts it on.
func Draw(seed uint64, n, requests, workers int, kinds []string, horizonUS int64) (*Plan, error) {
	if kinds == nil {
		kinds = Kinds()
	}
	switch {
	case n < 0 || n > MaxDrawFaults:
		return nil, fmt.Errorf("%w: draw %d faults, want 0 to %d", ErrFaultPlan, n, MaxDrawFaults)
	case horizonUS < 0 || horizonUS > workload.MaxMicros:
		return nil, fmt.Errorf("%w: horizon %s ms, want 0 to %d", ErrFaultPlan, workload.FormatMillis(horizonUS), workload.MaxMillis)
	case requests < 0 || requests > MaxIndex+1:
		return nil, fmt.Errorf("%w: %d requests, want 0 to %d", ErrFaultPlan, requests, MaxIndex+1)
	case workers < 0 || workers > MaxIndex+1:
		return nil, fmt.Errorf("%w: %d workers, want 0 to %d", ErrFaultPlan, workers, MaxIndex+1)
	case len(kinds) == 0 && n > 0:
		return nil, fmt.Errorf("%w: no kinds to draw %d faults from", ErrFaultPlan, n)
	}
	rs := make([]*rule, len(kinds))
	for i, k := range kinds {
		r, ok := ruleOf(k)
		switch {
		case !ok:
			return nil, fmt.Errorf("%w: %s", ErrFaultPlan, unknownKind(k))
		case n == 0:
			// Nothing is drawn: the kind need not be drawable.
		case r.request == required && requests == 0:
			return nil, fmt.Errorf("%w: kind %q hits a request, and there are none", ErrFaultPlan, k)
		case r.worker == required && workers == 0:
			return nil, fmt.Errorf("%w: kind %q hits a worker, and there are none", ErrFaultPlan, k)
		}
		rs[i] = r
	}
	rng := rand.New(rand.NewPCG(seed, drawStream))
	at := make([]int64, n)
	for i := range at {
		at[i] = rng.Int64N(horizonUS + 1)
	}
	slices.Sort(at)
	plan := &Plan{}
	if n > 0 {
		plan.Faults = make([]Fault, n)
	}
	sides := []string{"source", "destination"}
	for i := range plan.Faults {
		r := rs[rng.Int64N(int64(len(rs)))]
		f := Fault{Line: i + 2, AtUS: at[i], Kind: r.kind, Request: -1, Worker: -1}
		if r.request == required {
			f.Request = int(rng.Int64N(int64(requests)))
		}
		if r.worker == required {
			f.Worker = int(rng.Int64N(int64(workers)))
		}
		if r.to == optional {
			f.To = []string{"", "source", "destination"}[rng.Int64N(3)]
		}
		if r.side == required {
			f.Side = sides[rng.Int64N(2)]
		}
		plan.Faults[i] = f
	}
	return plan, nil
}
