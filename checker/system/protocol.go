package system

import (
	"fmt"
	"slices"

	"github.com/handoffcheck/handoffcheck/machines"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// action is an action of either role in one id space: the source actions
// of the default spec first, then the destination ones. A table may use an
// action of the other role (a variant loaded at run time can); the model
// then judges where the command lands (RoleCommands).
type action uint8

// numActions is the size of the action vocabulary.
const numActions = machines.NumSourceActions + machines.NumDestinationActions

// sourceAction is the vocabulary id of a source action.
func sourceAction(a machines.SourceAction) action { return action(a) }

// destinationAction is the vocabulary id of a destination action.
func destinationAction(a machines.DestinationAction) action {
	return action(machines.NumSourceActions + int(a))
}

func (a action) String() string {
	if int(a) < machines.NumSourceActions {
		return machines.SourceAction(a).String()
	}
	return machines.DestinationAction(int(a) - machines.NumSourceActions).String()
}

// maxActions bounds the actions of one row. It is the spec's limit, so
// that a file with a longer row is refused at its file:line when it is
// read (spec.Validate), never first here.
const maxActions = spec.MaxActions

// transition is one fired row in the checker's terms.
type transition struct {
	To   uint8
	Row  uint16 // 1-based row number in the role's table
	N    uint8
	Acts [maxActions]action
}

// Protocol is a pair of role machines over the fixed event vocabulary of
// the default spec. Event ids are the generated machines' numbering
// (machines.SourceEvent, machines.DestinationEvent), which the checker's
// event constants use; a spec's events are matched to them by name. State
// numbers are the spec's own order (a variant may have other states); the
// generated machines' states are matched to them by name.
type Protocol struct {
	name string
	spec *spec.Spec
	// tables[role][policy][state][event]; Row 0 means not enabled.
	tables   [2][][][]transition
	terminal [2][]bool
	ended    [2][]model.Outcome // per terminal state, the outcome it stands for
	initial  [2]uint8
	states   [2][]string
}

// maxStates bounds the states of one role: they are packed in four bits.
const maxStates = 16

// A role's events are bits of a word (System.rows).
var _ [32 - machines.NumSourceEvents]struct{}
var _ [32 - machines.NumDestinationEvents]struct{}

// Name says where the protocol came from.
func (p *Protocol) Name() string { return p.name }

// Spec is the spec the protocol runs.
func (p *Protocol) Spec() *spec.Spec { return p.spec }

// step fires an event of a role.
func (p *Protocol) step(role spec.Role, pol spec.Policy, state, event uint8) (*transition, bool) {
	t := &p.tables[role][pol][state][event]
	return t, t.Row != 0
}

// isTerminal reports whether a role state is terminal.
func (p *Protocol) isTerminal(role spec.Role, state uint8) bool { return p.terminal[role][state] }

// Initial is a role's initial state.
func (p *Protocol) initialState(role spec.Role) uint8 { return p.initial[role] }

// StateName names a role state.
func (p *Protocol) StateName(role spec.Role, state uint8) string { return p.states[role][state] }

// stateIndex finds a role state by name, or -1.
func (p *Protocol) stateIndex(role spec.Role, name string) int {
	return slices.Index(p.states[role], name)
}

// numEvents is the size of each role's event vocabulary.
var numEvents = [2]int{machines.NumSourceEvents, machines.NumDestinationEvents}

// eventID is the id of a role's event, found by name in the vocabulary
// (the generated machines' numbering), or -1.
func eventID(r spec.Role, name string) int {
	for e := 0; e < numEvents[r]; e++ {
		if EventName(r, uint8(e)) == name {
			return e
		}
	}
	return -1
}

// machinePolicy is the generated machines' policy of the same name.
func machinePolicy(pol spec.Policy) machines.Policy {
	for p := machines.Policy(0); p < machines.NumPolicies; p++ {
		if p.String() == pol.String() {
			return p
		}
	}
	panic(fmt.Sprintf("checker: the generated machines have no policy %s", pol))
}

// stateID is the protocol's number of a role state the generated machines
// name; the machines and the default spec must know the same states.
func (p *Protocol) stateID(r spec.Role, name string) uint8 {
	i := p.stateIndex(r, name)
	if i < 0 {
		panic(fmt.Sprintf("checker: the generated %s machine has state %q, which the default spec does not: run make generate", r, name))
	}
	return uint8(i)
}

func newProtocol(name string, s *spec.Spec) *Protocol {
	p := &Protocol{name: name, spec: s}
	for _, r := range spec.Roles {
		t := s.Table(r)
		p.states[r] = make([]string, len(t.States))
		p.terminal[r] = make([]bool, len(t.States))
		p.ended[r] = make([]model.Outcome, len(t.States))
		for i, st := range t.States {
			p.states[r][i] = st.Name
			p.terminal[r][i] = st.Terminal
			switch st.Outcome {
			case spec.OutcomeSuccess:
				p.ended[r][i] = model.OutcomeOK
			case spec.OutcomeFailure:
				p.ended[r][i] = model.OutcomeFailed
			case spec.OutcomeRestart:
				p.ended[r][i] = model.OutcomeForgotten
			}
			if st.Initial {
				p.initial[r] = uint8(i)
			}
		}
		p.tables[r] = make([][][]transition, len(spec.Policies))
		for _, pol := range spec.Policies {
			p.tables[r][pol] = make([][]transition, len(t.States))
			for i := range t.States {
				p.tables[r][pol][i] = make([]transition, numEvents[r])
			}
		}
	}
	return p
}

// Generated is the protocol of the generated machines in machines/: every
// (policy, state, event) of both roles is read off their Transition method.
// Policies and states are matched by name; events keep the machines' ids.
func Generated() *Protocol {
	p := newProtocol("generated machines", spec.Default())
	var src [machines.NumSourceStates]uint8
	for s := range src {
		src[s] = p.stateID(spec.Source, machines.SourceState(s).String())
	}
	var dst [machines.NumDestinationStates]uint8
	for s := range dst {
		dst[s] = p.stateID(spec.Destination, machines.DestinationState(s).String())
	}
	for _, pol := range spec.Policies {
		mp := machinePolicy(pol)
		for s := 0; s < machines.NumSourceStates; s++ {
			for e := 0; e < machines.NumSourceEvents; e++ {
				t, ok := machines.SourceState(s).Transition(mp, machines.SourceEvent(e))
				if !ok {
					continue
				}
				ct := transition{To: src[t.To], Row: uint16(t.Row), N: uint8(t.Actions.Len())}
				for i := 0; i < t.Actions.Len(); i++ {
					ct.Acts[i] = sourceAction(t.Actions.At(i))
				}
				p.tables[spec.Source][pol][src[s]][e] = ct
			}
		}
		for s := 0; s < machines.NumDestinationStates; s++ {
			for e := 0; e < machines.NumDestinationEvents; e++ {
				t, ok := machines.DestinationState(s).Transition(mp, machines.DestinationEvent(e))
				if !ok {
					continue
				}
				ct := transition{To: dst[t.To], Row: uint16(t.Row), N: uint8(t.Actions.Len())}
				for i := 0; i < t.Actions.Len(); i++ {
					ct.Acts[i] = destinationAction(t.Actions.At(i))
				}
				p.tables[spec.Destination][pol][dst[s]][e] = ct
			}
		}
	}
	return p
}

// stepper runs a spec's tables by name; machines/interp implements it
// with looplab/fsm.
type stepper interface {
	Step(role spec.Role, pol spec.Policy, state, event string) (to string, actions []string, row int, err error)
}

// checkVocabulary refuses a spec the model cannot give meaning to: its
// events must be the default spec's events of each role, each declared
// once, where only an event added to the vocabulary later
// (spec.LaterEvents) may be left out; its actions must come from the
// default vocabulary (of either role), its states must fit in four bits,
// and a restart row may not act (the memory that would act is gone).
func checkVocabulary(s *spec.Spec) error {
	def := spec.Default()
	var errs []string
	for _, r := range spec.Roles {
		t, d := s.Table(r), def.Table(r)
		if len(t.States) > maxStates {
			errs = append(errs, fmt.Sprintf("%s table has %d states, at most %d are supported", r, len(t.States), maxStates))
		}
		for e := 0; e < numEvents[r]; e++ {
			name := EventName(r, uint8(e))
			switch n := countEvents(t, name); {
			case n == 0 && !spec.MayBeAbsent(r, name):
				errs = append(errs, fmt.Sprintf("%s table does not declare event %q, which the model knows (only an event added to the vocabulary later may be left out)", r, name))
			case n > 1:
				errs = append(errs, fmt.Sprintf("%s table declares event %q %d times", r, name, n))
			}
		}
		for _, ev := range t.Events {
			i := d.EventIndex(ev.Name)
			if i < 0 || eventID(r, ev.Name) < 0 {
				errs = append(errs, fmt.Sprintf("%s event %q is not in the vocabulary the model knows", r, ev.Name))
				continue
			}
			if d.Events[i].Origin != ev.Origin {
				errs = append(errs, fmt.Sprintf("%s event %q has origin %s, the model gives it origin %s", r, ev.Name, ev.Origin, d.Events[i].Origin))
			}
		}
		for _, a := range t.Actions {
			if actionID(a.Name) < 0 {
				errs = append(errs, fmt.Sprintf("%s action %q is not in the vocabulary the model knows", r, a.Name))
			}
		}
		for i, row := range t.Rows {
			if row.Event == "Restarted" && len(row.Actions) > 0 {
				errs = append(errs, fmt.Sprintf("%s: a restart row cannot act: the process that would act is gone", t.RowLabel(i)))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("checker: the spec uses what the model cannot run:\n  %s", joinLines(errs))
	}
	return nil
}

// countEvents is how often a table declares an event.
func countEvents(t *spec.Table, name string) int {
	n := 0
	for _, ev := range t.Events {
		if ev.Name == name {
			n++
		}
	}
	return n
}

func joinLines(s []string) string {
	out := ""
	for i, l := range s {
		if i > 0 {
			out += "\n  "
		}
		out += l
	}
	return out
}

// actionID finds an action by name in the vocabulary, source actions first.
func actionID(name string) int {
	for a := 0; a < numActions; a++ {
		if action(a).String() == name {
			return a
		}
	}
	return -1
}

// roleActionID finds an action of a role's row: in that role's own
// vocabulary first (AcceptRequest, SendCancelled and Complete exist in
// both), and only then in the other role's, whose commands the model will
// judge as misdirected (RoleCommands).
func roleActionID(r spec.Role, name string) int {
	lo, hi := 0, machines.NumSourceActions
	if r == spec.Destination {
		lo, hi = machines.NumSourceActions, numActions
	}
	for a := lo; a < hi; a++ {
		if action(a).String() == name {
			return a
		}
	}
	return actionID(name)
}

// FromStepper builds the protocol of a spec run by a table interpreter. It
// asks the interpreter once for every (policy, state, event) of each role,
// terminal states included (a variant's terminal state may react); the
// machines are pure and finite, so the answers are the machine.
func FromStepper(name string, s *spec.Spec, st stepper) (*Protocol, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if err := checkVocabulary(s); err != nil {
		return nil, err
	}
	p := newProtocol(name, s)
	for _, r := range spec.Roles {
		t := s.Table(r)
		for _, pol := range spec.Policies {
			for si, sn := range p.states[r] {
				for _, ev := range t.Events {
					to, acts, row, err := st.Step(r, pol, sn, ev.Name)
					if err != nil {
						continue // not enabled
					}
					ti := t.StateIndex(to)
					if ti < 0 {
						return nil, fmt.Errorf("checker: interpreter moved %s %s × %s to unknown state %q", r, sn, ev.Name, to)
					}
					if len(acts) > maxActions {
						return nil, fmt.Errorf("checker: %s row %d has %d actions, at most %d are supported", r, row, len(acts), maxActions)
					}
					ct := transition{To: uint8(ti), Row: uint16(row), N: uint8(len(acts))}
					for i, a := range acts {
						ct.Acts[i] = action(roleActionID(r, a))
					}
					p.tables[r][pol][si][eventID(r, ev.Name)] = ct
				}
			}
		}
	}
	return p, nil
}
