package spec

import (
	"fmt"
	"slices"
	"strings"
)

// ValidateVariant is Validate plus what a spec loaded at run time must
// satisfy before the checker can give it meaning:
//
//   - its events are the built-in events of each role, with their
//     built-in origins (the model knows what each event means and when it
//     can happen); only an event added to the vocabulary later
//     (LaterEvents) may be left out, and then it never fires;
//   - its actions come from the built-in vocabulary of either role (a
//     command given to the wrong role is the model's to judge);
//   - a restart row does not act (the process that would act is gone);
//   - every state can be reached from the initial state under at least one
//     policy: a state no row leads to is dead text that a reader takes for
//     behaviour, and is refused.
//
// Parse applies it, so that every spec file a command reads is refused at
// its file:line before anything runs it. Mutants apply only Validate: a
// mutation that cuts a state off is a behaviour the checker must judge.
func (s *Spec) ValidateVariant() error {
	var ps []Problem
	if err := s.Validate(); err != nil {
		ve, ok := err.(*ValidationError)
		if !ok {
			return err
		}
		ps = ve.Problems
	}
	def := Default()
	known := knownActions(def)
	for _, r := range Roles {
		ps = append(ps, variantProblems(r, s.Table(r), def.Table(r), known)...)
	}
	if len(ps) == 0 {
		return nil
	}
	return &ValidationError{Problems: ps}
}

func variantProblems(role Role, t, def *Table, vocabulary []string) []Problem {
	var ps []Problem
	where := role.String() + " table"
	addDecl := func(kind string, index int, what string, args ...any) {
		ps = append(ps, Problem{Role: role, Row: -1, Where: where, What: fmt.Sprintf(what, args...), Decl: kind, Index: index})
	}

	for i, ev := range t.Events {
		j := def.EventIndex(ev.Name)
		switch {
		case j < 0:
			addDecl(DeclEvent, i, "event %q is not a %s event the model knows (want one of %s)", ev.Name, role, eventNames(def))
		case def.Events[j].Origin != ev.Origin:
			addDecl(DeclEvent, i, "event %q has origin %s, the model gives it origin %s", ev.Name, ev.Origin, def.Events[j].Origin)
		}
	}
	var missing []string
	for _, ev := range def.Events {
		if t.EventIndex(ev.Name) < 0 && !MayBeAbsent(role, ev.Name) {
			missing = append(missing, ev.Name)
		}
	}
	if len(missing) > 0 {
		ps = append(ps, Problem{Role: role, Row: -1, Where: where,
			What: fmt.Sprintf("does not declare the %s event(s) %s: the model can deliver every event it knows, so each needs its rows (only an event added to the vocabulary later may be left out)", role, strings.Join(missing, ", "))})
	}

	for i, a := range t.Actions {
		if !slices.Contains(vocabulary, a.Name) {
			addDecl(DeclAction, i, "action %q is not in the vocabulary the model knows (the built-in actions of either role)", a.Name)
		}
	}
	for i, row := range t.Rows {
		// The worker's own restart: a peer's restart (PeerRestarted) is a
		// fact the surviving worker acts on.
		if row.Event == restartedEvent && len(row.Actions) > 0 {
			ps = append(ps, Problem{Role: role, Row: i, Where: t.RowLabel(i),
				What: "a restart row cannot act: the process that would act is gone"})
		}
	}

	// Reachability means something only from exactly one initial state;
	// Validate already refused any other count.
	init := ""
	initials := 0
	for _, st := range t.States {
		if st.Initial {
			init, initials = st.Name, initials+1
		}
	}
	if initials != 1 {
		return ps
	}
	reached := map[string]bool{}
	for _, p := range Policies {
		for _, sn := range t.Reachable(p) {
			reached[sn] = true
		}
	}
	for i, st := range t.States {
		if !reached[st.Name] {
			addDecl(DeclState, i, "state %q is refused: no row leads to it from the initial state %s under any policy (remove it, or add the row that reaches it)", st.Name, init)
		}
	}
	return ps
}

func eventNames(t *Table) string {
	var names []string
	for _, ev := range t.Events {
		names = append(names, ev.Name)
	}
	return strings.Join(names, ", ")
}

// knownActions is the action vocabulary the model knows: the built-in
// actions of both roles.
func knownActions(def *Spec) []string {
	var names []string
	for _, r := range Roles {
		for _, a := range def.Table(r).Actions {
			names = append(names, a.Name)
		}
	}
	return names
}
