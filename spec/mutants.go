package spec

import (
	"fmt"
	"slices"
	"strings"
)

// Operator names a way of breaking one row of a table.
type Operator string

// The mutation operators. Each makes one small, plausible mistake a person
// could make when writing a table; a checker worth trusting notices it.
const (
	// DropAction removes one action from a row (a forgotten release, fence,
	// report or message).
	DropAction Operator = "drop-action"
	// SwapActions exchanges two adjacent actions of a row where the order
	// matters physically: a fence and a release, or an activation and its
	// Stored publication. (A row's actions are one atomic step of one
	// worker, so other orders are equivalent by construction.)
	SwapActions Operator = "swap-actions"
	// Ignore makes a row an explicit ignore: no move, no action (an event
	// wrongly judged late or irrelevant).
	Ignore Operator = "ignore"
	// Retarget sends a row to another state of the table (a wrong next state).
	Retarget Operator = "retarget"
	// MovePublish moves a row's KV-index publication (an action named
	// Publish...) one step early or late: into a row that leads into the
	// state the row starts from, or into one that leaves the state it ends
	// in (under a policy of both). The accounting table says when each
	// side's KV becomes visible (the source's at compute, the
	// destination's at receive completion); this is that timing got wrong.
	MovePublish Operator = "move-publish"
)

// Operators lists every operator in a fixed order.
var Operators = []Operator{DropAction, SwapActions, Ignore, Retarget, MovePublish}

// Mutant is a spec with one row broken by one operator.
type Mutant struct {
	Name     string // e.g. "source row 15 drop-action ReleaseSource"
	Operator Operator
	Role     Role
	Row      int // 0-based row index in the role's table
	Spec     *Spec
}

// Mutants breaks a spec in every way the operators allow, one row at a
// time, in table order, keeping only mutants that still validate (a broken
// table the validator refuses needs no checker). The explicit ignores of
// the original are not mutated: they already do nothing.
func Mutants(s *Spec, ops []Operator) []Mutant {
	var out []Mutant
	add := func(op Operator, r Role, i int, what string, edit func(t *Table)) {
		m := s.Clone()
		edit(m.Table(r))
		if m.Validate() != nil {
			return
		}
		out = append(out, Mutant{Name: fmt.Sprintf("%s row %d %s %s", r, i+1, op, what), Operator: op, Role: r, Row: i, Spec: m})
	}
	for _, r := range Roles {
		t := s.Table(r)
		for i, row := range t.Rows {
			if row.Ignores() {
				continue
			}
			for _, op := range ops {
				switch op {
				case DropAction:
					for j, a := range row.Actions {
						add(op, r, i, a, func(t *Table) {
							t.Rows[i].Actions = slices.Delete(t.Rows[i].Actions, j, j+1)
						})
					}
				case SwapActions:
					for j := 0; j+1 < len(row.Actions); j++ {
						if !orderMatters(row.Actions[j], row.Actions[j+1]) {
							continue
						}
						add(op, r, i, row.Actions[j]+"<->"+row.Actions[j+1], func(t *Table) {
							a := t.Rows[i].Actions
							a[j], a[j+1] = a[j+1], a[j]
						})
					}
				case Ignore:
					add(op, r, i, row.Event, func(t *Table) {
						t.Rows[i].To, t.Rows[i].Actions = "", nil
					})
				case MovePublish:
					for j, a := range row.Actions {
						if !strings.HasPrefix(a, "Publish") {
							continue
						}
						for k := range t.Rows {
							if !movesPublishTo(t, i, k) || slices.Contains(t.Rows[k].Actions, a) {
								continue
							}
							add(op, r, i, fmt.Sprintf("%s to row %d", a, k+1), func(t *Table) {
								t.Rows[i].Actions = slices.Delete(slices.Clone(t.Rows[i].Actions), j, j+1)
								t.Rows[k].Actions = append(slices.Clone(t.Rows[k].Actions), a)
							})
						}
					}
				case Retarget:
					for _, st := range t.States {
						if st.Name == row.To || (row.To == "" && len(row.From) == 1 && row.From[0] == st.Name) {
							continue
						}
						add(op, r, i, "to "+st.Name, func(t *Table) {
							t.Rows[i].To = st.Name
						})
					}
				}
			}
		}
	}
	return out
}

// movesPublishTo reports whether row k of t is one step before or after
// row i under a policy of both: it ends where row i starts, or starts
// where row i ends. Rows that ignore their event, and rows of the
// worker's own restart (the process that would act is gone), take no
// publication.
func movesPublishTo(t *Table, i, k int) bool {
	ri, rk := &t.Rows[i], &t.Rows[k]
	if k == i || rk.Ignores() || !slices.ContainsFunc(ri.Policies, func(p Policy) bool { return slices.Contains(rk.Policies, p) }) {
		return false
	}
	if rk.Event == restartedEvent {
		return false
	}
	for _, f := range rk.From {
		if slices.Contains(ri.From, rk.Target(f)) && rk.Target(f) != f {
			return true // one step early: row k leads into row i's state
		}
	}
	for _, f := range ri.From {
		if slices.Contains(rk.From, ri.Target(f)) {
			return true // one step late: row k leaves the state row i ends in
		}
	}
	return false
}

// orderMatters reports whether two adjacent actions do something different
// in the other order: a registration fenced before or after its memory is
// released, pages activated before or after their KV is published.
func orderMatters(a, b string) bool {
	pair := func(x, y string) bool { return (a == x && b == y) || (a == y && b == x) }
	return pair("FenceSource", "ReleaseSource") || pair("FenceDestination", "ReleaseDestination") ||
		pair("ActivateDestination", "PublishStored") || pair("PinSource", "ReportComputeDone") ||
		pair("RegisterDestination", "StartPull")
}
