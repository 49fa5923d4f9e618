package repro

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/conform"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// maxExtra bounds the steps a reproduction adds to the explanation:
// unlogged steps (a heartbeat, a delivery, a fault, a core falling
// behind) the logs need not show, anywhere along it or after it.
const maxExtra = 2

// maxSearchSteps bounds the steps the search for a deviation takes over
// all the tables it tries, so that a reproduction stays quick: a count,
// not a time, so that the same log always gives the same reproduction.
const maxSearchSteps = 600_000

// maxTables bounds the changed tables the search tries, for the same
// reason: building a table's protocol costs more than the steps of its
// search, which resumes where a changed row first fires.
const maxTables = 600

// rowRef names one row of the tables.
type rowRef struct {
	Role spec.Role
	Row  int // 0-based
}

// deviation is tables that differ from the ones judged against in one
// or two rows.
type deviation struct {
	Name string
	Spec *spec.Spec
	Rows []rowRef
}

// search says what the search for a deviation tried.
type search struct {
	// OneRow and TwoRows count the changed tables tried; Steps the
	// steps taken over all of them; Cut says the bound on the steps
	// stopped the search before it tried every candidate.
	OneRow, TwoRows, Steps int
	Cut                    bool
}

// findViolation looks for the step the rejected fact needed: the
// explanation's steps, with at most two unlogged steps more among them
// or after them, whose last breaks inv doing what the fact says. First
// under the tables judged against; then under tables with one row
// changed (the side that logged the fact does the fact's own operation
// in a row, also or instead of another action, or a row changed as
// `handoffcheck mutate` changes one: its next state, an action dropped
// or two swapped, its event ignored, a publication moved), trying the
// rows the explanation fired, latest first, then those that may fire in
// the states the side passes through; then two rows changed, the second
// a row that fires once the first is changed. A changed row counts only
// when it fires on the way. The first found in that fixed order is
// kept; the steps may spend one fault of each kind beyond the
// explanation's.
func findViolation(in RejectionInput, configJSON []byte, prefix []system.Move, inv string) (*violating, *deviation, search) {
	var st search
	t := in.Rejection.Trace
	wide, err := widen(configJSON)
	if err != nil {
		return nil, nil, st
	}
	cfg, err := system.ParseConfig(TraceFile+": config", wide)
	if err != nil {
		return nil, nil, st
	}
	newAlong := func(p *system.Protocol, changed []rowRef, firsts map[rowRef][]node) *along {
		c, err := checker.New(p, cfg, cfg.Runs[0])
		if err != nil {
			return nil
		}
		seq := 0
		return &along{c: c, prefix: prefix, inv: inv, want: target{t: t, changed: changed, detail: in.Rejection.Detail}, quiet: quietInvariant(inv),
			seen: map[alongKey]bool{}, steps: &st.Steps, firsts: firsts, onlyChanged: changed != nil, seq: &seq}
	}
	done := func(a *along, moves []system.Move, d *deviation) (*violating, *deviation, search) {
		v := &violating{checker: a.c, moves: minimizeMoves(a.c, moves, inv)}
		v.configJSON = tighten(v.checker.Protocol(), configJSON, wide, v.moves, inv)
		if cfg, err := system.ParseConfig(TraceFile+": config", v.configJSON); err == nil {
			if c, err := checker.New(v.checker.Protocol(), cfg, cfg.Runs[0]); err == nil {
				v.checker = c
			}
		}
		return v, d, st
	}
	cut := func() bool {
		st.Cut = st.Cut || st.Steps >= maxSearchSteps || st.OneRow+st.TwoRows >= maxTables
		return st.Cut
	}
	// The tables judged against, with the fewest steps beyond the
	// explanation's first: none, then one, then two. The last search
	// keeps where each row first fires.
	base := map[rowRef][]node{}
	for extra := 0; extra <= maxExtra; extra++ {
		var firsts map[rowRef][]node
		if extra == maxExtra {
			firsts = base
		}
		a := newAlong(in.Protocol, nil, firsts)
		if a == nil {
			return nil, nil, st
		}
		if moves := a.from(a.c.Initial(), 0, extra, false, rowSet{}, nil); moves != nil {
			return done(a, moves, nil)
		}
	}
	// A router's fact is no row's operation.
	if t.Router || cut() || len(in.Protocol.Spec().Source.Rows) > rowSetRows || len(in.Protocol.Spec().Destination.Rows) > rowSetRows {
		return nil, nil, st
	}
	role, side := spec.Source, 0
	if t.Side == model.DestinationSide {
		role, side = spec.Destination, 1
	}
	c, err := checker.New(in.Protocol, cfg, cfg.Runs[0])
	if err != nil {
		return nil, nil, st
	}
	rows, ok := candidateRows(c, in.Protocol, prefix, role)
	if !ok {
		return nil, nil, st
	}
	orig := in.Protocol.Spec()
	ops := operations[t.Kind][side]
	// Every change mutate makes is validated once, and only when the
	// fact's own operation in a row does not reproduce it.
	var byRow map[rowRef][]spec.Mutant
	lazyRows := func() map[rowRef][]spec.Mutant {
		if byRow == nil {
			byRow = mutantsByRow(orig)
		}
		return byRow
	}
	// A changed row that never fires changes nothing: the tables judged
	// against take the same steps until a changed row fires, so the
	// search of changed tables resumes where it first fires, and a row
	// that never fires along the explanation is left out.
	firstRows := slices.DeleteFunc(slices.Clone(rows), func(i int) bool { return len(base[rowRef{role, i}]) == 0 })
	type tried struct {
		d      deviation
		firsts map[rowRef][]node
	}
	var ones []tried
	ones1 := addedActions(orig, role, firstRows, ops)
	for k, more := 0, true; ; k++ {
		if k == len(ones1) && more {
			// The fact's own operation reproduces nothing: then every
			// change mutate makes to those rows.
			for _, i := range firstRows {
				ones1 = append(ones1, rowChanges(orig, lazyRows(), role, i)...)
			}
			more = false
		}
		if k == len(ones1) {
			break
		}
		m := ones1[k]
		if cut() {
			return nil, nil, st
		}
		d := deviation{Name: m.Name, Spec: m.Spec, Rows: changedRows(orig, m.Spec)}
		p, err := protocolOf(d)
		if err != nil {
			continue
		}
		st.OneRow++
		firsts := map[rowRef][]node{}
		a := newAlong(p, d.Rows, firsts)
		if a == nil {
			continue
		}
		if moves := a.resume(base, d.Rows); moves != nil {
			return done(a, moves, &d)
		}
		ones = append(ones, tried{d, firsts})
	}
	// Two rows: the first change leads the side where the tables judged
	// against never go along the explanation, and the second changes a
	// row that fires there (a wrong step, and what the side does after
	// it).
	for _, one := range ones {
		for _, r := range spec.Roles {
			var second []int
			for i := range orig.Table(r).Rows {
				if x := (rowRef{r, i}); len(one.firsts[x]) > 0 && len(base[x]) == 0 {
					second = append(second, i)
				}
			}
			var rops []string
			if r == role {
				rops = ops
			}
			for _, m := range candidates(orig, lazyRows(), r, second, rops) {
				if cut() {
					return nil, nil, st
				}
				d, ok := combine(orig, one.d, m)
				if !ok {
					continue
				}
				p, err := protocolOf(d)
				if err != nil {
					continue
				}
				st.TwoRows++
				a := newAlong(p, d.Rows, nil)
				if a == nil {
					continue
				}
				if moves := a.resume(one.firsts, d.Rows[len(one.d.Rows):]); moves != nil {
					return done(a, moves, &d)
				}
			}
		}
	}
	cut()
	return nil, nil, st
}

// candidateRows are the rows of role's table a change is tried in: the
// rows the explanation fired, latest first, then those that may fire in
// the states the side passes through, the state it ends in first.
func candidateRows(c *checker.Checker, p *system.Protocol, prefix []system.Move, role spec.Role) ([]int, bool) {
	var fired []int
	var visited []uint8
	s := c.Initial()
	for _, m := range prefix {
		visited = append(visited, s.Role(role, 0))
		r, err := c.Apply(&s, m)
		if err != nil {
			return nil, false
		}
		for _, f := range r.Fired {
			if f.Row > 0 && f.Handoff == 0 && f.Role == role { // rows count from 1
				fired = append(fired, f.Row-1)
			}
		}
	}
	slices.Reverse(fired)
	var rows []int
	for _, i := range fired {
		if !slices.Contains(rows, i) {
			rows = append(rows, i)
		}
	}
	states := []string{p.StateName(role, s.Role(role, 0))}
	for i := len(visited) - 1; i >= 0; i-- {
		if st := p.StateName(role, visited[i]); !slices.Contains(states, st) {
			states = append(states, st)
		}
	}
	for _, st := range states {
		for i, row := range p.Spec().Table(role).Rows {
			if slices.Contains(row.From, st) && !slices.Contains(rows, i) {
				rows = append(rows, i)
			}
		}
	}
	return rows, true
}

// candidates are the changes of one of role's rows tried, rows in the
// order given: the fact's own operations first (addedActions), then the
// changes `handoffcheck mutate` makes (rowChanges).
func candidates(sp *spec.Spec, byRow map[rowRef][]spec.Mutant, role spec.Role, rows []int, ops []string) []spec.Mutant {
	out := addedActions(sp, role, rows, ops)
	for _, i := range rows {
		out = append(out, rowChanges(sp, byRow, role, i)...)
	}
	return out
}

// mutantsByRow is every change `handoffcheck mutate` makes to the
// tables but a new next state, by the row it changes: those are most of
// them, and are made for the rows tried only (retargets).
func mutantsByRow(sp *spec.Spec) map[rowRef][]spec.Mutant {
	var ops []spec.Operator
	for _, op := range spec.Operators {
		if op != spec.Retarget {
			ops = append(ops, op)
		}
	}
	out := map[rowRef][]spec.Mutant{}
	for _, m := range spec.Mutants(sp, ops) {
		out[rowRef{m.Role, m.Row}] = append(out[rowRef{m.Role, m.Row}], m)
	}
	return out
}

// rowChanges are the changes mutate makes to one row, in its order of
// operators (a new next state after an ignored event, before a moved
// publication).
func rowChanges(sp *spec.Spec, byRow map[rowRef][]spec.Mutant, role spec.Role, i int) []spec.Mutant {
	var out, moved []spec.Mutant
	for _, m := range byRow[rowRef{role, i}] {
		if m.Operator == spec.MovePublish {
			moved = append(moved, m)
		} else {
			out = append(out, m)
		}
	}
	return append(append(out, retargets(sp, role, i)...), moved...)
}

// retargets are a row sent to each other state of its table, as mutate's
// retarget makes them, left to protocolOf to refuse where the tables no
// longer validate.
func retargets(sp *spec.Spec, role spec.Role, i int) []spec.Mutant {
	row := sp.Table(role).Rows[i]
	if row.Ignores() {
		return nil
	}
	var out []spec.Mutant
	for _, st := range sp.Table(role).States {
		if st.Name == row.To || (row.To == "" && len(row.From) == 1 && row.From[0] == st.Name) {
			continue
		}
		m := sp.Clone()
		m.Table(role).Rows[i].To = st.Name
		out = append(out, spec.Mutant{Name: fmt.Sprintf("%s row %d %s %s", role, i+1, spec.Retarget, "to "+st.Name), Operator: spec.Retarget, Role: role, Row: i, Spec: m})
	}
	return out
}

// protocolOf is the protocol of a deviation's tables. It reads them
// through rowStepper, which answers as the table interpreter does
// (machines/interp, which the reproduction's test runs them with)
// without driving a state machine library for every cell: the search
// builds thousands of these.
func protocolOf(d deviation) (*system.Protocol, error) {
	return system.FromStepper(d.Name, d.Spec, newRowStepper(d.Spec))
}

type cell struct {
	role         spec.Role
	pol          spec.Policy
	state, event string
}

type rowStep struct {
	to      string
	actions []string
	row     int
}

// rowStepper steps a validated spec by its rows: in a cell (role,
// policy, state, event) the one row that has it, its target and actions
// and its 1-based number; no row, no step.
type rowStepper map[cell]rowStep

func newRowStepper(sp *spec.Spec) rowStepper {
	st := rowStepper{}
	for _, r := range spec.Roles {
		for i, row := range sp.Table(r).Rows {
			for _, p := range row.Policies {
				for _, from := range row.From {
					st[cell{r, p, from, row.Event}] = rowStep{to: row.Target(from), actions: row.Actions, row: i + 1}
				}
			}
		}
	}
	return st
}

var errNoRow = errors.New("no row")

// Step is what system.FromStepper runs a table by.
func (st rowStepper) Step(role spec.Role, pol spec.Policy, state, event string) (string, []string, int, error) {
	f, ok := st[cell{role, pol, state, event}]
	if !ok {
		return "", nil, 0, errNoRow
	}
	return f.to, slices.Clone(f.actions), f.row, nil
}

// changedRows are the rows in which m differs from orig.
func changedRows(orig, m *spec.Spec) []rowRef {
	var out []rowRef
	for _, r := range spec.Roles {
		a, b := orig.Table(r).Rows, m.Table(r).Rows
		for i := range min(len(a), len(b)) {
			if !sameRow(a[i], b[i]) {
				out = append(out, rowRef{r, i})
			}
		}
	}
	return out
}

func sameRow(a, b spec.Row) bool {
	return a.Event == b.Event && a.To == b.To && slices.Equal(a.From, b.From) && slices.Equal(a.Actions, b.Actions) && slices.Equal(a.Policies, b.Policies)
}

// combine is one deviation's tables with the rows another change of the
// same tables changes, when they change different rows (protocolOf
// refuses the result when it does not validate).
func combine(orig *spec.Spec, one deviation, m spec.Mutant) (deviation, bool) {
	rows := changedRows(orig, m.Spec)
	sp := one.Spec.Clone()
	for _, r := range rows {
		if slices.Contains(one.Rows, r) {
			return deviation{}, false
		}
		sp.Table(r.Role).Rows[r.Row] = m.Spec.Table(r.Role).Rows[r.Row]
	}
	return deviation{Name: one.Name + "; and " + m.Name, Spec: sp, Rows: append(slices.Clone(one.Rows), rows...)}, true
}

// along searches for the explanation's steps with at most extra more
// among them or after them, whose last step, and only it, breaks inv
// doing what the rejected fact says.
type along struct {
	c      *checker.Checker
	prefix []system.Move
	inv    string
	want   target
	// quiet: inv is judged where nothing is left to do, so the step
	// that breaks it is whichever leaves nothing to do.
	quiet bool
	seen  map[alongKey]bool
	steps *int
	// firsts, when not nil, collects the steps at which a row fires for
	// the first time on the way (only once a changed row fired, with
	// onlyChanged): tables that change that row take the same steps up
	// to there, so their search resumes there.
	firsts      map[rowRef][]node
	onlyChanged bool
	seq         *int
}

// rowSet is the rows that fired on the way, a bit per row and role, for
// tables of up to rowSetRows rows (findViolation tries no change of
// larger ones: where a row first fires would not be known).
type rowSet [2][rowSetRows / 64]uint64

const rowSetRows = 256

func (r *rowSet) has(x rowRef) bool {
	return x.Row < rowSetRows && r[x.Role][x.Row/64]&(1<<(x.Row%64)) != 0
}

func (r *rowSet) add(x rowRef) {
	if x.Row < rowSetRows {
		r[x.Role][x.Row/64] |= 1 << (x.Row % 64)
	}
}

type alongKey struct {
	k         system.Key
	i, extra  int
	changedOn bool
	fired     rowSet
}

// node is a step of the search: from the state before it, the move, and
// what is left to take and to spend after it.
type node struct {
	seq       int
	s         system.State
	path      []system.Move
	m         system.Move
	ni, extra int
	changedOn bool
	fired     rowSet
}

// from continues from s, with the explanation's steps from i on to take
// and extra more to spend; changedOn says a changed row fired on the
// way, fired which rows did.
func (a *along) from(s system.State, i, extra int, changedOn bool, fired rowSet, path []system.Move) []system.Move {
	if *a.steps >= maxSearchSteps {
		return nil
	}
	key := alongKey{a.c.Key(&s), i, extra, changedOn, fired}
	if a.seen[key] {
		return nil
	}
	a.seen[key] = true
	if i < len(a.prefix) {
		if out := a.step(node{s: s, path: path, m: a.prefix[i], ni: i + 1, extra: extra, changedOn: changedOn, fired: fired}); out != nil {
			return out
		}
	}
	if extra > 0 {
		for _, m := range a.c.MovesInto(&s, nil) {
			if i < len(a.prefix) && m == a.prefix[i] {
				continue
			}
			if out := a.step(node{s: s, path: path, m: m, ni: i, extra: extra - 1, changedOn: changedOn, fired: fired}); out != nil {
				return out
			}
		}
	}
	return nil
}

// step takes a node's move and goes on from there.
func (a *along) step(n node) []system.Move {
	next := n.s
	var log []system.Firing
	cov := system.NewCoverage(a.c.Protocol().Spec())
	cov.Log = &log
	*a.steps++
	_, v, err := a.c.Step(&next, n.m, cov)
	if err != nil {
		return nil
	}
	on := n.changedOn || a.want.firesChanged(log)
	fired := n.fired
	for _, f := range log {
		if f.Row <= 0 || f.Handoff != 0 {
			continue
		}
		r := rowRef{f.Role, f.Row - 1}
		if !fired.has(r) {
			if a.firsts != nil && (on || !a.onlyChanged) {
				*a.seq++
				first := n
				first.seq, first.path = *a.seq, slices.Clone(n.path)
				a.firsts[r] = append(a.firsts[r], first)
			}
			fired.add(r)
		}
	}
	if v == nil {
		v = a.c.CheckState(&next)
	}
	if v == nil {
		_, v = a.c.Quiescence(&next)
	}
	p := append(slices.Clone(n.path), n.m)
	if v != nil {
		if v.Invariant == a.inv && a.want.sameShape(v) && a.want.reached(&n.s, &next, n.m, log, on, a.quiet) {
			return p
		}
		return nil
	}
	return a.from(next, n.ni, n.extra, on, fired, p)
}

// resume searches on from the steps at which a changed row first fires
// in the search of the tables it changes, in the order that search took
// them.
func (a *along) resume(firsts map[rowRef][]node, rows []rowRef) []system.Move {
	var ns []node
	for _, r := range rows {
		ns = append(ns, firsts[r]...)
	}
	slices.SortFunc(ns, func(x, y node) int { return x.seq - y.seq })
	for _, n := range ns {
		if *a.steps >= maxSearchSteps {
			return nil
		}
		if out := a.step(n); out != nil {
			return out
		}
	}
	return nil
}

// quietInvariant reports whether inv is judged only where nothing is
// left to do.
func quietInvariant(inv string) bool {
	return inv == model.NameQuiescence || inv == model.NameFaultFreeCompletion
}

// target is the step a reproduction looks for: one that does what the
// rejected fact says, under tables changed in the rows listed (none:
// unchanged).
type target struct {
	t       *conform.RejectionTrace
	changed []rowRef
	// detail is the rejection's detail: the invariant's own, or, for a
	// fact the tables take by a step that breaks one, a sentence that
	// names it and its detail.
	detail string
}

// sameShape reports whether a violation is of the rejection's shape:
// ExactlyOnceRelease covers every lease, reservation and booking, and a
// rejection names which one ended twice (or began again), so a
// violation of it is the rejection's when it names the same; the other
// invariants say one thing each.
func (x target) sameShape(v *model.Violation) bool {
	if v.Invariant != model.NameExactlyOnceRelease || x.detail == "" {
		return true
	}
	// A detail may name its handoff first ("handoff 0: ..."), which the
	// rejection, of one attempt, does not.
	d := v.Detail
	if rest, ok := strings.CutPrefix(d, "handoff "); ok {
		if _, after, found := strings.Cut(rest, ": "); found {
			d = after
		}
	}
	return d == x.detail || strings.Contains(x.detail, v.Invariant+": "+d)
}

// firesChanged reports whether a step fired a changed row.
func (x target) firesChanged(fired []system.Firing) bool {
	for _, f := range fired {
		if f.Handoff == 0 && slices.Contains(x.changed, rowRef{f.Role, f.Row - 1}) {
			return true
		}
	}
	return false
}

// reached reports whether a step that breaks the invariant is the one
// looked for: it makes a fact of the rejected kind observable by the
// process that logged it, or fires a changed row (an operation done a
// second time, a release twice, changes nothing a fact is read from,
// but it is the row's). Under changed tables a changed row must have
// fired on the way (else the tables judged against take the same
// steps), and an invariant judged where nothing is left to do is broken
// by whichever step leaves nothing.
func (x target) reached(before, after *system.State, m system.Move, fired []system.Firing, changedOn, quiet bool) bool {
	if len(x.changed) > 0 {
		if !changedOn {
			return false
		}
		if quiet || x.firesChanged(fired) {
			return true
		}
	}
	by := obslog.BySource
	switch {
	case x.t.Router:
		by = obslog.ByRouter
	case x.t.Side == model.DestinationSide:
		by = obslog.ByDestination
	}
	for _, l := range obslog.Observe(nil, 0, before, after, m, fired) {
		if l.Kind == x.t.Kind && l.By == by {
			return true
		}
	}
	return false
}

// String says what the search tried, for a README.
func (st search) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d tables with one row changed and %d with two", st.OneRow, st.TwoRows)
	if st.Cut {
		fmt.Fprintf(&b, ", where the search's bound (%d tables, %d steps) stopped it", maxTables, maxSearchSteps)
	}
	return b.String()
}
