package conform

import (
	"fmt"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// A step of the tables that would log a fact where the logs have it, but
// breaks a step or state invariant, is refused (the search leaves it
// out); when the explanations that go on without it reach that fact only
// to break Quiescence, the rejection names the refused step's invariant,
// the one check names for that step (dead): check judges a step's step
// and state invariants, and Quiescence only once nothing more can
// happen.

// refused notes that the step m of the tables, from node n (state st)
// to next, breaks step or state invariant v: the facts it would log
// where the logs have them, after those n owes, are facts a step of the
// tables logs there that check refuses for v (stepBroke). The first step
// found for a fact is kept, so the note is as deterministic as the
// search.
func (j *judge) refused(a *attempt, n *node, st, next *system.State, m system.Move, v *model.Violation) {
	j.refusedLabels = obslog.Observe(j.refusedLabels[:0], 0, st, next, m, j.stepper.Firings())
	for s := range a.slots {
		p := a.slots[s].proc
		mine := func(l *obslog.Label) bool {
			if l.By == obslog.ByRouter {
				return j.h.Processes[p].Role == obslog.RoleRouter && j.h.Processes[p].Records.Has(l.Kind)
			}
			return j.logger(a, l) == p
		}
		facts := a.slots[s].facts
		at := int(n.pos[s])
		for _, l := range n.owed[:n.owedN] {
			if !mine(&l) {
				continue
			}
			if at >= len(facts) || !matches(facts[at], &l) {
				at = -1
				break
			}
			at++
		}
		for i := 0; at >= 0 && i < len(j.refusedLabels); i++ {
			l := &j.refusedLabels[i]
			if !j.mustLog(a, l) || !mine(l) {
				continue
			}
			if at >= len(facts) || !matches(facts[at], l) {
				break
			}
			if a.stepBroke == nil {
				a.stepBroke = map[*obslog.Fact]*model.Violation{}
			}
			if a.stepBroke[facts[at]] == nil {
				a.stepBroke[facts[at]] = v
			}
			at++
		}
	}
}

// stepFirst is the violation a rejection at fact f names, given first,
// the one f's physical effect breaks in the explanations that reach it:
// where that is Quiescence (a finished side still holding, a release it
// never logs) and a step of the tables logs f right there but breaks a
// step or state invariant, that step's, as check names it for the step.
func stepFirst(a *attempt, f *obslog.Fact, first *model.Violation) *model.Violation {
	v := a.stepBroke[f]
	if first == nil || first.Invariant != model.NameQuiescence || v == nil {
		return first
	}
	return &model.Violation{Invariant: v.Invariant, Handoff: v.Handoff, Worker: v.Worker, Check: v.Check,
		Detail: fmt.Sprintf("%s; the step of the tables that logs this fact here breaks it, and the explanations without that step reach the fact only to break Quiescence: %s", v.Detail, first.Detail)}
}
