package checker

import (
	"fmt"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// exercise is whether one invariant was exercised in a run: its trigger
// fired (model.Trigger), or it judges unconditionally. An invariant whose
// trigger never fired held vacuously: nothing it judges happened.
type exercise struct {
	Name string
	// Unconditional says what the invariant judges every time; Exercised
	// and Why are then unused.
	Unconditional string
	Exercised     bool
	// Why says what did not happen when it was not exercised.
	Why string
}

// exercises is, for each built-in invariant named, whether a run that
// fired these triggers under this configuration exercised it. Other names
// (properties from a file, which report their own vacuity) are left out. The invariant a run
// found violated (violated, or "") was exercised, whatever fired: where
// its antecedent holding is itself the violation, nothing else may have.
func exercises(names []string, fired model.Triggers, cfg *model.Config, violated string) []exercise {
	out := make([]exercise, 0, len(names))
	for _, name := range names {
		inv, ok := model.LookupInvariant(name)
		if !ok {
			continue
		}
		if inv.Trigger.Unconditional != "" {
			out = append(out, exercise{Name: name, Unconditional: inv.Trigger.Unconditional})
			continue
		}
		ok, why := inv.Exercised(fired, cfg)
		if name == violated {
			ok, why = true, ""
		}
		out = append(out, exercise{Name: name, Exercised: ok, Why: why})
	}
	return out
}

// vacuityText is a run's line on vacuity: the invariants whose trigger
// never fired, with what did not happen, after lead (which says whether
// that makes them vacuous or the run did not reach everything), or that
// every trigger fired.
func vacuityText(ex []exercise, lead string) string {
	var parts []string
	for _, x := range ex {
		if x.Unconditional == "" && !x.Exercised {
			parts = append(parts, fmt.Sprintf("%s (%s)", x.Name, x.Why))
		}
	}
	if len(parts) == 0 {
		return "  every invariant's trigger fired\n"
	}
	return "  " + lead + ": " + strings.Join(parts, ", ") + "\n"
}

// vacuityLead is how a search's report introduces the invariants whose
// trigger never fired: vacuous only where the search saw every state it
// started from.
func (r *Result) vacuityLead(fromTrace bool) string {
	switch {
	case !r.Complete:
		return "not exercised before the bound"
	case r.Bitstate != nil:
		return "not exercised in the states the bit array kept"
	case fromTrace:
		return "not exercised from the trace's state on"
	}
	return "vacuous here"
}

// jsonExercise is one invariant's vacuity in a JSON report: exercised
// true or false (with why not), or unconditional (with what it judges).
type jsonExercise struct {
	Invariant     string `json:"invariant"`
	Exercised     *bool  `json:"exercised,omitempty"`
	Why           string `json:"why,omitempty"`
	Unconditional string `json:"unconditional,omitempty"`
}

func jsonExercises(ex []exercise) []jsonExercise {
	out := make([]jsonExercise, 0, len(ex))
	for _, x := range ex {
		j := jsonExercise{Invariant: x.Name, Unconditional: x.Unconditional}
		if x.Unconditional == "" {
			ok := x.Exercised
			j.Exercised, j.Why = &ok, x.Why
		}
		out = append(out, j)
	}
	return out
}

// walkInvariants are the invariants a walk judges: every safety
// invariant on every step and state, Quiescence and FaultFreeCompletion
// where nothing is enabled (Checker.Apply).
var walkInvariants = append(append([]string(nil), model.SafetyInvariants...), model.NameQuiescence, model.NameFaultFreeCompletion)

// quiescenceFired is the triggers judging a quiescent state fires:
// Quiescence's always, FaultFreeCompletion's when the environment spent
// none of its budget (System.Quiescence).
func (c *Checker) quiescenceFired(s *system.State) model.Triggers {
	if s.B == c.Budget() {
		return model.TrigQuiescent | model.TrigFaultFreeQuiescent
	}
	return model.TrigQuiescent
}
