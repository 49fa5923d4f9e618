package repro

import (
	"context"
	"fmt"

	"github.com/handoffcheck/handoffcheck/checker/sim"
	"github.com/handoffcheck/handoffcheck/checker/system"
)

// Timed is a reproduction on the clock: the first of the timed scenarios
// (the ones mutate --timed runs every surviving mutant through) whose run
// under the counterexample's policy and engine breaks the same invariant.
// A counterexample fixes one order of messages, timers and faults; a
// scenario is a workload and a fault plan on a cluster, where the
// simulator's clock decides the order: it shows the bug at scale, not
// the same steps.
type Timed struct {
	// Scenario and Policy name the run (timeline --scenario --policy);
	// empty when no scenario broke the invariant.
	Scenario, Policy string
	Detail           string
	AtMS             float64
	Request          int
	// Requests, Succeeded, Failed and Cancelled are the run's counts up
	// to the violation, which stops it.
	Requests, Succeeded, Failed, Cancelled int
	// Tried lists the scenarios run before it (all of them when none
	// broke the invariant); Other the invariants they broke instead.
	Tried []string
	Other []string
	// Why says why no scenario was run.
	Why string
}

// FindTimed runs the timed scenarios under the run's policy with the
// protocol, until one breaks the invariant.
func FindTimed(ctx context.Context, proto *system.Protocol, run system.Run, invariant string) (*Timed, error) {
	pol := run.Policy.String()
	t := &Timed{}
	for _, name := range sim.TimedScenarios {
		sc, err := sim.LookupScenario(name)
		if err != nil {
			return nil, err
		}
		cfg, reqs, faults, err := sc.Setup(pol)
		if err != nil {
			return nil, err
		}
		if cfg.Engine != run.Engine {
			// The scenarios run source-first on vLLM and destination-first
			// on SGLang, as timeline does.
			t.Why = fmt.Sprintf("the timed scenarios run %s on %s (timeline's pairing); this run is %s on %s", pol, cfg.Engine, pol, run.Engine)
			return t, nil
		}
		r, err := sim.Run(ctx, cfg, &sim.SliceSource{Reqs: reqs}, sim.Options{Faults: faults, Protocol: proto, FaultFree: sc.FaultFree})
		if err != nil {
			return nil, fmt.Errorf("repro: scenario %s: %w", name, err)
		}
		if ctx.Err() != nil {
			t.Why = "interrupted"
			return t, nil
		}
		if v := r.Violation; v != nil && v.Invariant == invariant {
			s := r.Summary
			t.Scenario, t.Policy, t.Detail, t.AtMS, t.Request = name, pol, v.Detail, float64(v.AtUS)/1000, v.Request
			t.Requests, t.Succeeded, t.Failed, t.Cancelled = s.Requests, s.Succeeded, s.Failed, s.Cancelled
			return t, nil
		} else if v != nil {
			t.Other = append(t.Other, name+": "+v.Invariant)
		}
		t.Tried = append(t.Tried, name)
	}
	return t, nil
}
