package interp

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/handoffcheck/handoffcheck/spec"
	"github.com/looplab/fsm"
)

// ErrNotEnabled is wrapped by a StepError for an event that has no row in
// the state under the policy.
var ErrNotEnabled = errors.New("interp: event not enabled")

// ErrUnknownName is wrapped by a StepError for a role, policy, state or
// event the spec does not declare. It is kept apart from ErrNotEnabled so
// that a caller asking about a name from another vocabulary (say a
// destination event of a source) learns it asked a wrong question, not
// that the protocol refuses the event.
var ErrUnknownName = errors.New("interp: unknown name")

// StepError reports a Step that fired no row. Err is ErrNotEnabled or
// ErrUnknownName; Detail says which name was unknown, if any.
type StepError struct {
	Role   spec.Role
	Policy spec.Policy
	State  string
	Event  string
	Err    error
	Detail string
}

func (e *StepError) Error() string {
	msg := fmt.Sprintf("%v: %s %s × %s under %s", e.Err, e.Role, e.State, e.Event, e.Policy)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Unwrap lets errors.Is match ErrNotEnabled or ErrUnknownName.
func (e *StepError) Unwrap() error { return e.Err }

// fired is what the interpreter keeps of a row beside the FSM.
type fired struct {
	to      string // the row's target from this state, to cross-check the FSM
	actions []string
	row     int // 1-based
}

type cellKey struct {
	role   spec.Role
	policy spec.Policy
	state  string
	event  string
}

// Interp interprets one spec. It is deterministic and holds no state
// between calls: every Step places the FSM in the asked state first.
//
// An Interp is not safe for concurrent use: the FSMs it drives hold a
// current state, so Step must be called from one goroutine at a time.
// Build one Interp per goroutine if several must step at once.
type Interp struct {
	// machines[role][policy] is the FSM of a role's table under a policy.
	machines [2][]*fsm.FSM
	rows     map[cellKey]fired
	states   [2]map[string]bool
	events   [2]map[string]bool
}

// New validates a spec and builds its interpreter. Everything the
// interpreter needs is copied out of s, so later changes to s do not reach
// it.
func New(s *spec.Spec) (*Interp, error) {
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("interp: %w", err)
	}
	it := &Interp{rows: map[cellKey]fired{}}
	for _, r := range spec.Roles {
		t := s.Table(r)
		it.states[r] = map[string]bool{}
		for _, st := range t.States {
			it.states[r][st.Name] = true
		}
		it.events[r] = map[string]bool{}
		for _, ev := range t.Events {
			it.events[r][ev.Name] = true
		}
		it.machines[r] = make([]*fsm.FSM, len(spec.Policies))
		for _, p := range spec.Policies {
			var descs fsm.Events
			for i, row := range t.Rows {
				if !slices.Contains(row.Policies, p) {
					continue
				}
				if row.Stays() {
					// A self-loop per from-state: looplab has one
					// destination per event description.
					for _, from := range row.From {
						descs = append(descs, fsm.EventDesc{Name: row.Event, Src: []string{from}, Dst: from})
					}
				} else {
					descs = append(descs, fsm.EventDesc{Name: row.Event, Src: slices.Clone(row.From), Dst: row.To})
				}
				for _, from := range row.From {
					it.rows[cellKey{r, p, from, row.Event}] = fired{
						to:      row.Target(from),
						actions: slices.Clone(row.Actions),
						row:     i + 1,
					}
				}
			}
			it.machines[r][p] = fsm.NewFSM(t.Initial(), descs, nil)
		}
	}
	return it, nil
}

// Step fires an event of a role in a state under a policy. It returns the
// next state, the actions in row order (a fresh slice the caller may keep)
// and the 1-based number of the row in the role's table. A *StepError
// wrapping ErrNotEnabled reports an event without a row there, and one
// wrapping ErrUnknownName a name the spec does not declare.
//
// Step is what system.FromStepper runs a table by.
func (it *Interp) Step(role spec.Role, pol spec.Policy, state, event string) (to string, actions []string, row int, err error) {
	fail := func(sentinel error, detail string) (string, []string, int, error) {
		return "", nil, 0, &StepError{Role: role, Policy: pol, State: state, Event: event, Err: sentinel, Detail: detail}
	}
	switch {
	case !slices.Contains(spec.Roles, role):
		return fail(ErrUnknownName, fmt.Sprintf("no role %d", uint8(role)))
	case !slices.Contains(spec.Policies, pol):
		return fail(ErrUnknownName, fmt.Sprintf("no policy %d", uint8(pol)))
	case !it.states[role][state]:
		return fail(ErrUnknownName, fmt.Sprintf("the %s table declares no state %q", role, state))
	case !it.events[role][event]:
		return fail(ErrUnknownName, fmt.Sprintf("the %s table declares no event %q", role, event))
	}

	m := it.machines[role][pol]
	m.SetState(state)
	if ferr := m.Event(context.Background(), event); ferr != nil {
		var stay fsm.NoTransitionError
		if !errors.As(ferr, &stay) || stay.Err != nil {
			// InvalidEventError (the event has rows, none from this
			// state) and UnknownEventError (no row of this policy uses
			// the event) both mean the table has no row here.
			if _, ok := it.rows[cellKey{role, pol, state, event}]; ok {
				panic(fmt.Sprintf("interp: the fsm refuses %s %s × %s under %s, which has a row: %v", role, state, event, pol, ferr))
			}
			return fail(ErrNotEnabled, "")
		}
	}
	to = m.Current()
	f, ok := it.rows[cellKey{role, pol, state, event}]
	if !ok || f.to != to {
		// Both come from the same validated rows; a split means New
		// built them apart.
		panic(fmt.Sprintf("interp: the fsm moves %s %s × %s under %s to %q, the rows say %+v (found %t)", role, state, event, pol, to, f, ok))
	}
	return to, slices.Clone(f.actions), f.row, nil
}
