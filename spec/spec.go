package spec

import (
	"fmt"
	"slices"
)

// Role names the worker role a table describes. Each worker owns only its
// own role state (docs/lifecycle.md section 3), so every table is one role's.
type Role uint8

const (
	// Source is the prefill worker that computed the KV and must hold it.
	Source Role = iota
	// Destination is the decode worker that receives the KV.
	Destination
)

// Roles lists the roles in table order.
var Roles = []Role{Source, Destination}

func (r Role) String() string {
	switch r {
	case Source:
		return "source"
	case Destination:
		return "destination"
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// Policy is the backend ordering of the handoff (docs/lifecycle.md section 1).
type Policy uint8

const (
	// SourceFirst is vLLM's order: prefill runs and pins, then decode
	// reserves and pulls.
	SourceFirst Policy = iota
	// DestinationFirst is SGLang's order: decode reserves first, then
	// prefill is dispatched and pushes.
	DestinationFirst
)

// Policies lists every policy in a fixed order.
var Policies = []Policy{SourceFirst, DestinationFirst}

func (p Policy) String() string {
	switch p {
	case SourceFirst:
		return "source-first"
	case DestinationFirst:
		return "destination-first"
	}
	return fmt.Sprintf("Policy(%d)", uint8(p))
}

// ParsePolicy reads a policy by its String form.
func ParsePolicy(s string) (Policy, error) {
	for _, p := range Policies {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("spec: unknown policy %q (want source-first or destination-first)", s)
}

// Origin says where an event comes from. The origin decides what the
// environment may do with it: peer messages can be lost, duplicated and
// delivered late, timers can fire at any moment once armed, and both must
// therefore be handled in every non-terminal state.
type Origin uint8

const (
	// Local is a fact of the worker's own scheduler or transfer engine.
	Local Origin = iota
	// Peer is a message from the other role, carried by the lossy transport.
	Peer
	// Timer is a deadline of the worker's own.
	Timer
	// Client is a command on the request stream from the frontend or a router.
	Client
	// Restart is a process restart, of the worker itself or of its peer.
	Restart
)

// Origins lists every origin in a fixed order.
var Origins = []Origin{Local, Peer, Timer, Client, Restart}

func (o Origin) String() string {
	switch o {
	case Local:
		return "local"
	case Peer:
		return "peer"
	case Timer:
		return "timer"
	case Client:
		return "client"
	case Restart:
		return "restart"
	}
	return fmt.Sprintf("Origin(%d)", uint8(o))
}

// MustBeHandled reports whether an event of this origin can arrive in any
// state, so that every non-terminal state needs a row for it, even an
// explicit ignore: a late message is never "undefined".
func (o Origin) MustBeHandled() bool {
	return o == Peer || o == Timer || o == Restart
}

// State is one state of a role machine. A terminal state says how the
// role's part of the handoff ended, so that the checker can hold the
// terminal outcome each side reports to its router to it.
type State struct {
	Name     string
	Initial  bool
	Terminal bool
	// Outcome is set on terminal states only: OutcomeSuccess,
	// OutcomeFailure or OutcomeRestart.
	Outcome string
	Doc     string
}

// Terminal outcomes of a role.
const (
	// OutcomeSuccess: the role did its part (source released after the
	// reads, destination decoded).
	OutcomeSuccess = "success"
	// OutcomeFailure: cancelled, refused, failed or expired.
	OutcomeFailure = "failure"
	// OutcomeRestart: the process restarted and the record is gone.
	OutcomeRestart = "restart"
)

// Outcomes lists the terminal outcomes.
var Outcomes = []string{OutcomeSuccess, OutcomeFailure, OutcomeRestart}

// Event is one input of a role machine.
type Event struct {
	Name   string
	Origin Origin
	Doc    string
}

// Action is one output of a role machine: a command to the worker's own
// scheduler, a message to the peer, a timer, or a report to a router.
type Action struct {
	Name string
	Doc  string
}

// Row is one line of a transition table: in any of From, on Event, under any
// of Policies, go to To (empty means stay) and emit Actions in order.
type Row struct {
	From     []string
	Event    string
	Policies []Policy
	To       string
	Actions  []string
	Why      string
}

// Stays reports whether the row leaves the state unchanged.
func (r Row) Stays() bool { return r.To == "" }

// Ignores reports whether the row is an explicit ignore: no move, no action.
func (r Row) Ignores() bool { return r.To == "" && len(r.Actions) == 0 }

// Target is the state the row leads to from the given state.
func (r Row) Target(from string) string {
	if r.To == "" {
		return from
	}
	return r.To
}

// Table is the complete description of one role machine.
type Table struct {
	Role    Role
	States  []State
	Events  []Event
	Actions []Action
	Rows    []Row
}

// Spec is the pair of role machines that together make the handoff protocol.
type Spec struct {
	Name        string
	Source      Table
	Destination Table
}

// Table returns the table of a role.
func (s *Spec) Table(r Role) *Table {
	if r == Source {
		return &s.Source
	}
	return &s.Destination
}

// State finds a state by name.
func (t *Table) State(name string) (State, bool) {
	i := t.StateIndex(name)
	if i < 0 {
		return State{}, false
	}
	return t.States[i], true
}

// StateIndex is the position of a state, or -1.
func (t *Table) StateIndex(name string) int {
	return slices.IndexFunc(t.States, func(s State) bool { return s.Name == name })
}

// EventIndex is the position of an event, or -1.
func (t *Table) EventIndex(name string) int {
	return slices.IndexFunc(t.Events, func(e Event) bool { return e.Name == name })
}

// ActionIndex is the position of an action, or -1.
func (t *Table) ActionIndex(name string) int {
	return slices.IndexFunc(t.Actions, func(a Action) bool { return a.Name == name })
}

// Initial is the initial state's name (the first marked one).
func (t *Table) Initial() string {
	for _, s := range t.States {
		if s.Initial {
			return s.Name
		}
	}
	return ""
}

// Lookup finds the row that fires in a state on an event under a policy.
// It returns the row's index, or -1 when the event is not enabled there.
func (t *Table) Lookup(p Policy, state, event string) int {
	for i, r := range t.Rows {
		if r.Event != event || !slices.Contains(r.Policies, p) || !slices.Contains(r.From, state) {
			continue
		}
		return i
	}
	return -1
}

// Reachable lists, in table order, the states reachable from the initial
// state under a policy by following the rows.
func (t *Table) Reachable(p Policy) []string {
	seen := map[string]bool{}
	init := t.Initial()
	if init == "" {
		return nil
	}
	seen[init] = true
	work := []string{init}
	for len(work) > 0 {
		s := work[0]
		work = work[1:]
		for _, r := range t.Rows {
			if !slices.Contains(r.Policies, p) || !slices.Contains(r.From, s) {
				continue
			}
			to := r.Target(s)
			if !seen[to] {
				seen[to] = true
				work = append(work, to)
			}
		}
	}
	var out []string
	for _, s := range t.States {
		if seen[s.Name] {
			out = append(out, s.Name)
		}
	}
	return out
}

// RowLabel names a row in messages and docs: its number and first cell.
func (t *Table) RowLabel(i int) string {
	r := t.Rows[i]
	from := "?"
	if len(r.From) > 0 {
		from = r.From[0]
		if len(r.From) > 1 {
			from += fmt.Sprintf("+%d", len(r.From)-1)
		}
	}
	return fmt.Sprintf("%s row %d (%s × %s)", t.Role, i+1, from, r.Event)
}

// Clone returns a deep copy, so that variants and mutants can be derived
// from a spec without touching the original.
func (s *Spec) Clone() *Spec {
	c := &Spec{Name: s.Name}
	c.Source = s.Source.clone()
	c.Destination = s.Destination.clone()
	return c
}

func (t Table) clone() Table {
	c := Table{Role: t.Role}
	c.States = slices.Clone(t.States)
	c.Events = slices.Clone(t.Events)
	c.Actions = slices.Clone(t.Actions)
	c.Rows = make([]Row, len(t.Rows))
	for i, r := range t.Rows {
		r.From = slices.Clone(r.From)
		r.Policies = slices.Clone(r.Policies)
		r.Actions = slices.Clone(r.Actions)
		c.Rows[i] = r
	}
	return c
}
