package sim

import (
	"context"
	"fmt"
	"sync"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/machines/interp"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// The untimed checker lets any timer fire at any moment, so a table that
// drops or ignores a peer notification is often equivalent there: the
// peer's own deadline cleans up. On a cluster the peer then holds its
// blocks for a whole lease. mutate --timed runs every mutant the checker
// lets survive through TimedScenarios under both policies, and kills it
// when a run breaks a timed property or any invariant.

// TimedScenarios are the fault scenarios mutate --timed runs each
// surviving mutant through.
var TimedScenarios = []string{"fault-sweep", "deadline-sweep", "reorder-sweep", "late-sweep", "restart-sweep", "waiting-faults", "waiting-deadline", "long-wait", "slow-transfer", "failure-matrix", "duplicate-stale-late", "stranded-source", "destination-gate", "queue-then-push"}

// timedRuns are the policy and engine pairs each scenario runs under:
// the checker's four runs.
var timedRuns = []struct {
	policy string
	engine model.Engine
}{{"source-first", model.VLLM}, {"destination-first", model.SGLang}, {"source-first", model.TRTLLM}, {"destination-first", model.TRTLLM}}

// TimedResult is one mutant on the clock.
type TimedResult struct {
	Mutant    spec.Mutant
	Killed    bool
	Scenario  string
	Policy    string
	Invariant string
	Detail    string
}

// MutateTimed runs each mutant through the timed scenarios, workers at a
// time, and reports, in the mutants' order, which a run kills.
func MutateTimed(ctx context.Context, mutants []spec.Mutant, workers int) ([]TimedResult, error) {
	out := make([]TimedResult, len(mutants))
	errs := make([]error, len(mutants))
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < max(workers, 1); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i], errs[i] = timedOne(ctx, mutants[i])
			}
		}()
	}
	for i := range mutants {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, ctx.Err()
}

func timedOne(ctx context.Context, m spec.Mutant) (TimedResult, error) {
	res := TimedResult{Mutant: m}
	it, err := interp.New(m.Spec)
	if err != nil {
		return res, fmt.Errorf("mutant %s: %w", m.Name, err)
	}
	p, err := system.FromStepper(m.Name, m.Spec, it)
	if err != nil {
		return res, fmt.Errorf("mutant %s: %w", m.Name, err)
	}
	for _, name := range TimedScenarios {
		sc, err := LookupScenario(name)
		if err != nil {
			return res, err
		}
		for _, run := range timedRuns {
			cfg, reqs, faults, err := sc.Setup(run.policy)
			if err != nil {
				return res, err
			}
			cfg.Engine = run.engine
			pol := run.policy + " on " + run.engine.String()
			r, err := Run(ctx, cfg, &SliceSource{Reqs: reqs}, Options{Faults: faults, Protocol: p, FaultFree: sc.FaultFree})
			if err != nil {
				return res, fmt.Errorf("mutant %s, scenario %s %s: %w", m.Name, name, pol, err)
			}
			if r.Violation != nil {
				res.Killed, res.Scenario, res.Policy = true, name, pol
				res.Invariant, res.Detail = r.Violation.Invariant, r.Violation.Detail
				return res, nil
			}
		}
	}
	return res, nil
}
