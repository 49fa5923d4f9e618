package spec

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrInvalid is wrapped by every validation failure.
var ErrInvalid = errors.New("spec: invalid")

// Limits of a table. The checker runs every table it accepts with
// fixed-size values, so these are enforced here, where a file's problems
// get their file:line, and not first when a run starts.
const (
	// MaxStates bounds the states of one role's table: 16. The checker
	// packs a handoff's role state in four bits.
	MaxStates = 16
	// MaxActions bounds the actions of one row: 8. The checker keeps a
	// fired row's actions in a fixed array, so that stepping never
	// allocates.
	MaxActions = 8
)

// restartedEvent is the event of a worker's own restart in either role.
const restartedEvent = "Restarted"

// Problem is one defect of a spec. Row is the row's index in its table, or
// -1 for a problem of the table itself or of one of its declarations.
type Problem struct {
	Role Role
	Row  int
	// Where names the row or table in words, e.g. "source row 12 (Pinned × ReaderCompleted)".
	Where string
	What  string
	// Decl and Index locate a problem of a declaration: Decl is DeclState,
	// DeclEvent or DeclAction and Index its position in the table's list.
	// Decl is empty for a problem of a row or of the table as a whole.
	Decl  string
	Index int
}

// Declaration kinds a Problem can point at; each is also the JSON key of
// its list in the table ("states", "events", "actions" without the s).
const (
	DeclState  = "state"
	DeclEvent  = "event"
	DeclAction = "action"
)

func (p Problem) String() string { return p.Where + ": " + p.What }

// ValidationError carries every problem Validate found, in table order.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "spec: %d problem(s)", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

func (e *ValidationError) Unwrap() error { return ErrInvalid }

// Validate checks both tables and reports all problems at once, each naming
// its row. A nil result means the spec is well formed: names are unique and
// known, no (state, event, policy) is claimed by two rows, every row says
// why, and every peer message, timer and restart is handled in every
// non-terminal state each policy can reach.
//
// A terminal state is where a side has reported its terminal outcome: it
// has finished, whatever it still does. Validate lets it keep rows, so
// that a variant can say what a side does when it keeps reacting after
// its outcome (a late cancel that finalizes a second time, a start that
// dispatches prefill after an early abort); the checker fires them and
// the invariants judge the reaction. Such a state needs no row for the
// events it ignores, and it takes no Restarted row: a restart forgets a
// finished record without a step. The built-in tables keep every terminal
// state silent: see ValidateBuiltin.
func (s *Spec) Validate() error { return s.validate(false) }

// ValidateBuiltin is Validate plus what the built-in tables (Default, and
// the machines rendered from it into machines/) promise: a terminal state
// takes no event at all.
func (s *Spec) ValidateBuiltin() error { return s.validate(true) }

func (s *Spec) validate(builtin bool) error {
	var ps []Problem
	if strings.TrimSpace(s.Name) == "" {
		ps = append(ps, Problem{Row: -1, Where: "spec", What: "name is empty"})
	}
	for _, r := range Roles {
		t := s.Table(r)
		if t.Role != r {
			ps = append(ps, Problem{Role: r, Row: -1, Where: r.String() + " table", What: fmt.Sprintf("role is %s, want %s", t.Role, r)})
		}
		ps = append(ps, validateTable(r, t, builtin)...)
	}
	if len(ps) == 0 {
		return nil
	}
	return &ValidationError{Problems: ps}
}

func validateTable(role Role, t *Table, builtin bool) []Problem {
	var ps []Problem
	where := role.String() + " table"
	add := func(row int, what string, args ...any) {
		w := where
		if row >= 0 {
			w = t.RowLabel(row)
		}
		ps = append(ps, Problem{Role: role, Row: row, Where: w, What: fmt.Sprintf(what, args...)})
	}
	// addDecl reports a problem of the index-th declaration of a kind, so
	// that a file's message can point at the declaration's own line.
	addDecl := func(kind string, index int, what string, args ...any) {
		ps = append(ps, Problem{Role: role, Row: -1, Where: where, What: fmt.Sprintf(what, args...), Decl: kind, Index: index})
	}

	checkNames := func(kind string, names []string, docs []string) {
		seen := map[string]bool{}
		for i, n := range names {
			switch {
			case !isIdent(n):
				addDecl(kind, i, "%s %d: name %q is not an identifier (letters and digits, starting with an upper-case letter)", kind, i+1, n)
			case seen[n]:
				addDecl(kind, i, "%s %q is declared twice", kind, n)
			}
			seen[n] = true
			if strings.TrimSpace(docs[i]) == "" {
				addDecl(kind, i, "%s %q has no doc", kind, n)
			}
		}
	}
	if len(t.States) > MaxStates {
		addDecl(DeclState, MaxStates, "has %d states, at most %d are supported (the checker packs a role's state in four bits)", len(t.States), MaxStates)
	}
	var names, docs []string
	for _, st := range t.States {
		names, docs = append(names, st.Name), append(docs, st.Doc)
	}
	checkNames(DeclState, names, docs)
	names, docs = nil, nil
	for i, ev := range t.Events {
		names, docs = append(names, ev.Name), append(docs, ev.Doc)
		if !slices.Contains(Origins, ev.Origin) {
			addDecl(DeclEvent, i, "event %q has unknown origin %d", ev.Name, ev.Origin)
		}
	}
	checkNames(DeclEvent, names, docs)
	names, docs = nil, nil
	for _, a := range t.Actions {
		names, docs = append(names, a.Name), append(docs, a.Doc)
	}
	checkNames(DeclAction, names, docs)

	initials, terminals := 0, 0
	for i, st := range t.States {
		switch {
		case st.Terminal && !slices.Contains(Outcomes, st.Outcome):
			addDecl(DeclState, i, "terminal state %q: outcome %q is not success, failure or restart", st.Name, st.Outcome)
		case !st.Terminal && st.Outcome != "":
			addDecl(DeclState, i, "state %q has an outcome but is not terminal", st.Name)
		}
		if st.Initial {
			initials++
			if st.Terminal {
				addDecl(DeclState, i, "initial state %q is terminal", st.Name)
			}
		}
		if st.Terminal {
			terminals++
		}
	}
	if initials != 1 {
		add(-1, "has %d initial states, want exactly 1", initials)
	}
	if terminals == 0 {
		add(-1, "has no terminal state")
	}

	type key struct {
		state, event string
		policy       Policy
	}
	claimed := map[key]int{}
	for i, r := range t.Rows {
		if len(r.From) == 0 {
			add(i, "no from-state")
		}
		for j, f := range r.From {
			st, ok := t.State(f)
			switch {
			case !ok:
				add(i, "unknown from-state %q", f)
			case st.Terminal && builtin:
				add(i, "from-state %q is terminal; a terminal state of the built-in tables takes no events", f)
			case st.Terminal && r.Event == restartedEvent:
				add(i, "from-state %q is terminal: a restart forgets a finished record without a step, so this row would never fire", f)
			}
			if slices.Index(r.From, f) != j {
				add(i, "from-state %q is listed twice", f)
			}
		}
		if t.EventIndex(r.Event) < 0 {
			add(i, "unknown event %q", r.Event)
		}
		if len(r.Policies) == 0 {
			add(i, "no policy")
		}
		for j, p := range r.Policies {
			if !slices.Contains(Policies, p) {
				add(i, "unknown policy %d", p)
			}
			if slices.Index(r.Policies, p) != j {
				add(i, "policy %s is listed twice", p)
			}
		}
		if r.To != "" {
			if _, ok := t.State(r.To); !ok {
				add(i, "unknown to-state %q", r.To)
			}
		}
		if len(r.Actions) > MaxActions {
			add(i, "has %d actions, at most %d are supported (the checker keeps a fired row's actions in a fixed array)", len(r.Actions), MaxActions)
		}
		for j, a := range r.Actions {
			if t.ActionIndex(a) < 0 {
				add(i, "unknown action %q (not in the %s vocabulary)", a, role)
			}
			if slices.Index(r.Actions, a) != j {
				add(i, "action %q is listed twice", a)
			}
		}
		if strings.TrimSpace(r.Why) == "" {
			add(i, "no why: every row must say why it exists")
		}
		for _, f := range r.From {
			for _, p := range r.Policies {
				k := key{f, r.Event, p}
				if prev, dup := claimed[k]; dup {
					add(i, "%s × %s under %s is also claimed by row %d", f, r.Event, p, prev+1)
					continue
				}
				claimed[k] = i
			}
		}
	}

	// A late message or a timer is never "undefined": demand a row for each
	// in every non-terminal state the policy can reach.
	for _, p := range Policies {
		for _, sn := range t.Reachable(p) {
			st, _ := t.State(sn)
			if st.Terminal {
				continue
			}
			for _, ev := range t.Events {
				if !ev.Origin.MustBeHandled() {
					continue
				}
				if _, ok := claimed[key{sn, ev.Name, p}]; !ok {
					add(-1, "%s event %s is not handled in state %s under %s (add a row, even an explicit ignore)", ev.Origin, ev.Name, sn, p)
				}
			}
		}
	}
	return ps
}

func isIdent(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
