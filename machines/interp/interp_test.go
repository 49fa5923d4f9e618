package interp_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/handoffcheck/handoffcheck/machines"
	"github.com/handoffcheck/handoffcheck/machines/interp"
	"github.com/handoffcheck/handoffcheck/spec"
)

// cell is one question a machine answers: a role's event in a state under
// a policy.
type cell struct {
	Role   spec.Role
	Policy spec.Policy
	State  string
	Event  string
}

// outcome is a machine's answer in names, so that the generated machines
// and the interpreter can be compared directly.
type outcome struct {
	Enabled bool
	To      string
	Actions []string
	Row     int
}

// answer pairs a cell with its outcome; a grid of answers diffs readably.
type answer struct {
	Cell    cell
	Outcome outcome
}

// cells lists every (role, policy, state, event) of a spec in table order.
func cells(s *spec.Spec) []cell {
	var out []cell
	for _, r := range spec.Roles {
		t := s.Table(r)
		for _, p := range spec.Policies {
			for _, st := range t.States {
				for _, ev := range t.Events {
					out = append(out, cell{r, p, st.Name, ev.Name})
				}
			}
		}
	}
	return out
}

// generatedAt asks the generated machines. Their constants are numbered in
// the order of spec.Default()'s slices (the generated guard func _ pins it).
func generatedAt(t *testing.T, c cell) outcome {
	t.Helper()
	def := spec.Default().Table(c.Role)
	si, ei := def.StateIndex(c.State), def.EventIndex(c.Event)
	if si < 0 || ei < 0 {
		t.Fatalf("%v is not in the default vocabulary", c)
	}
	pol := machines.Policy(c.Policy)
	var o outcome
	switch c.Role {
	case spec.Source:
		tr, ok := machines.SourceState(si).Transition(pol, machines.SourceEvent(ei))
		if !ok {
			return outcome{}
		}
		o = outcome{Enabled: true, To: tr.To.String(), Row: tr.Row}
		for i := range tr.Actions.Len() {
			o.Actions = append(o.Actions, tr.Actions.At(i).String())
		}
	case spec.Destination:
		tr, ok := machines.DestinationState(si).Transition(pol, machines.DestinationEvent(ei))
		if !ok {
			return outcome{}
		}
		o = outcome{Enabled: true, To: tr.To.String(), Row: tr.Row}
		for i := range tr.Actions.Len() {
			o.Actions = append(o.Actions, tr.Actions.At(i).String())
		}
	}
	return o
}

// interpAt asks the interpreter; any error but ErrNotEnabled fails the test.
func interpAt(t *testing.T, it *interp.Interp, c cell) outcome {
	t.Helper()
	to, acts, row, err := it.Step(c.Role, c.Policy, c.State, c.Event)
	if err != nil {
		if !errors.Is(err, interp.ErrNotEnabled) {
			t.Fatalf("Step(%v): %v, want nil or ErrNotEnabled", c, err)
		}
		return outcome{}
	}
	return outcome{Enabled: true, To: to, Actions: acts, Row: row}
}

func grid(t *testing.T, cs []cell, at func(cell) outcome) []answer {
	t.Helper()
	out := make([]answer, len(cs))
	for i, c := range cs {
		out[i] = answer{c, at(c)}
	}
	return out
}

// equateEmpty treats a nil and an empty action list alike: an ignore row
// may carry either.
var equateEmpty = cmpopts.EquateEmpty()

func mustNew(t *testing.T, s *spec.Spec) *interp.Interp {
	t.Helper()
	it, err := interp.New(s)
	if err != nil {
		t.Fatal(err)
	}
	return it
}

// TestInterp_VocabularyMatchesGenerated pins the premise of the
// differential test: constant i of each generated type is entry i of the
// default spec's slice of the same kind.
func TestInterp_VocabularyMatchesGenerated(t *testing.T) {
	def := spec.Default()
	var got, want []string
	for i := range machines.NumSourceStates {
		got = append(got, "source state "+machines.SourceState(i).String())
	}
	for i := range machines.NumSourceEvents {
		got = append(got, "source event "+machines.SourceEvent(i).String())
	}
	for i := range machines.NumSourceActions {
		got = append(got, "source action "+machines.SourceAction(i).String())
	}
	for i := range machines.NumDestinationStates {
		got = append(got, "destination state "+machines.DestinationState(i).String())
	}
	for i := range machines.NumDestinationEvents {
		got = append(got, "destination event "+machines.DestinationEvent(i).String())
	}
	for i := range machines.NumDestinationActions {
		got = append(got, "destination action "+machines.DestinationAction(i).String())
	}
	for _, r := range spec.Roles {
		tb := def.Table(r)
		for _, st := range tb.States {
			want = append(want, r.String()+" state "+st.Name)
		}
		for _, ev := range tb.Events {
			want = append(want, r.String()+" event "+ev.Name)
		}
		for _, a := range tb.Actions {
			want = append(want, r.String()+" action "+a.Name)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("generated vocabulary differs from spec.Default() (-spec +generated):\n%s", diff)
	}
	for _, p := range spec.Policies {
		if got, want := machines.Policy(p).String(), p.String(); got != want {
			t.Errorf("machines.Policy(%d) = %q, spec says %q", p, got, want)
		}
	}
}

// TestInterp_AgreesWithGenerated is the differential test of
// The table interpreter and the generated code agree on
// enabledness, target, actions in order and row number for every
// (state, event, policy) of both roles.
func TestInterp_AgreesWithGenerated(t *testing.T) {
	def := spec.Default()
	it := mustNew(t, def)
	for _, r := range spec.Roles {
		for _, p := range spec.Policies {
			t.Run(r.String()+"/"+p.String(), func(t *testing.T) {
				var cs []cell
				for _, c := range cells(def) {
					if c.Role == r && c.Policy == p {
						cs = append(cs, c)
					}
				}
				gen := grid(t, cs, func(c cell) outcome { return generatedAt(t, c) })
				got := grid(t, cs, func(c cell) outcome { return interpAt(t, it, c) })
				if diff := cmp.Diff(gen, got, equateEmpty); diff != "" {
					t.Errorf("interpreter differs from the generated machines (-generated +interp):\n%s", diff)
				}
				// Guard against agreeing on nothing: every row of this
				// policy must have fired somewhere.
				fired := map[int]bool{}
				for _, a := range got {
					if a.Outcome.Enabled {
						fired[a.Outcome.Row] = true
					}
				}
				for i, row := range def.Table(r).Rows {
					if slices.Contains(row.Policies, p) && !fired[i+1] {
						t.Errorf("%s never fired under %s", def.Table(r).RowLabel(i), p)
					}
				}
			})
		}
	}
}

// TestInterp_ReadsTheSpec changes one row of a copy of the default spec and
// expects the interpreter to differ from the generated machines exactly at
// the cells that row decides, and there to answer what the changed row
// says. An interpreter that secretly consulted the generated code, or
// ignored part of a row, fails here.
func TestInterp_ReadsTheSpec(t *testing.T) {
	type mutation struct {
		name   string
		role   spec.Role
		find   cell // a cell the mutated row decides in the default spec
		mutate func(*spec.Row)
		want   []cell // the cells that must change
	}
	src, dst := spec.Source, spec.Destination
	sf, df := spec.SourceFirst, spec.DestinationFirst
	cases := []mutation{
		{
			name:   "to-state",
			role:   src,
			find:   cell{src, sf, "Pinned", "ReaderCompleted"},
			mutate: func(r *spec.Row) { r.To = "Aborted" },
			want:   []cell{{src, sf, "Pinned", "ReaderCompleted"}},
		},
		{
			name:   "action-order",
			role:   src,
			find:   cell{src, sf, "Pinned", "LeaseExpired"},
			mutate: func(r *spec.Row) { slices.Reverse(r.Actions) },
			want: []cell{
				{src, sf, "Pinned", "LeaseExpired"},
				{src, sf, "Sending", "LeaseExpired"},
				{src, sf, "Pushed", "LeaseExpired"},
				{src, df, "Pinned", "LeaseExpired"},
				{src, df, "Sending", "LeaseExpired"},
				{src, df, "Pushed", "LeaseExpired"},
			},
		},
		{
			name:   "added-policy",
			role:   src,
			find:   cell{src, sf, "Pinned", "LeaseRenewed"},
			mutate: func(r *spec.Row) { r.Policies = append(r.Policies, df) },
			want:   []cell{{src, df, "Pinned", "LeaseRenewed"}},
		},
		{
			name: "dropped-action",
			role: dst,
			find: cell{dst, df, "Activating", "ActivationApplied"},
			mutate: func(r *spec.Row) {
				r.Actions = slices.DeleteFunc(r.Actions, func(a string) bool { return a == "PublishStored" })
			},
			want: []cell{{dst, df, "Activating", "ActivationApplied"}},
		},
		{
			// A variant's terminal state may react: the interpreter
			// answers the row there like anywhere else.
			name:   "terminal-state-reacts",
			role:   dst,
			find:   cell{dst, sf, "Active", "ClientCancelled"},
			mutate: func(r *spec.Row) { r.From = append(r.From, "Done") },
			want:   []cell{{dst, sf, "Done", "ClientCancelled"}, {dst, df, "Done", "ClientCancelled"}},
		},
		{
			name:   "stay-becomes-move",
			role:   dst,
			find:   cell{dst, sf, "Reserving", "HeartbeatDue"},
			mutate: func(r *spec.Row) { r.To = "Draining" },
			want:   []cell{{dst, sf, "Reserving", "HeartbeatDue"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mut := spec.Default().Clone()
			tb := mut.Table(tc.role)
			ri := tb.Lookup(tc.find.Policy, tc.find.State, tc.find.Event)
			if ri < 0 {
				t.Fatalf("no row decides %v in the default spec", tc.find)
			}
			before := tb.Rows[ri]
			before.Actions = slices.Clone(before.Actions)
			tc.mutate(&tb.Rows[ri])
			if diff := cmp.Diff(before, tb.Rows[ri]); diff == "" {
				t.Fatal("the mutation left the row unchanged")
			}
			it := mustNew(t, mut)

			var changed []cell
			for _, c := range cells(mut) {
				gen, got := generatedAt(t, c), interpAt(t, it, c)
				if cmp.Equal(gen, got, equateEmpty) {
					continue
				}
				changed = append(changed, c)
				row := tb.Rows[ri]
				want := outcome{Enabled: true, To: row.Target(c.State), Actions: row.Actions, Row: ri + 1}
				if diff := cmp.Diff(want, got, equateEmpty); diff != "" {
					t.Errorf("at %v the interpreter does not answer what %s says (-row +interp):\n%s", c, tb.RowLabel(ri), diff)
				}
			}
			if diff := cmp.Diff(tc.want, changed); diff != "" {
				t.Errorf("cells where the mutant differs from the generated machines (-want +got):\n%s", diff)
			}
		})
	}
}

// TestInterp_StepIgnoresHistory asks every cell in table order, in reverse
// and shuffled (fixed seed). The FSMs underneath keep a current state, so
// an answer that leaked from the previous call would show up here.
func TestInterp_StepIgnoresHistory(t *testing.T) {
	def := spec.Default()
	it := mustNew(t, def)
	cs := cells(def)
	want := map[cell]outcome{}
	for _, c := range cs {
		want[c] = interpAt(t, it, c)
	}
	orders := map[string][]cell{
		"reverse":  slices.Clone(cs),
		"shuffled": slices.Clone(cs),
	}
	slices.Reverse(orders["reverse"])
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(cs), func(i, j int) {
		orders["shuffled"][i], orders["shuffled"][j] = orders["shuffled"][j], orders["shuffled"][i]
	})
	for _, name := range []string{"reverse", "shuffled"} {
		t.Run(name, func(t *testing.T) {
			for _, c := range orders[name] {
				if diff := cmp.Diff(want[c], interpAt(t, it, c), equateEmpty); diff != "" {
					t.Errorf("%v answered differently in %s order:\n%s", c, name, diff)
				}
			}
		})
	}
}

// TestInterp_OwnsItsData checks that neither the caller's spec nor a
// returned action slice can change later answers.
func TestInterp_OwnsItsData(t *testing.T) {
	s := spec.Default().Clone()
	it := mustNew(t, s)
	c := cell{spec.Source, spec.SourceFirst, "Computing", "PrefillPinned"}
	want := interpAt(t, it, c)

	t.Run("spec-edited-after-new", func(t *testing.T) {
		ri := s.Source.Lookup(c.Policy, c.State, c.Event)
		s.Source.Rows[ri].To = "Aborted"
		s.Source.Rows[ri].Actions[0] = "Complete"
		if diff := cmp.Diff(want, interpAt(t, it, c)); diff != "" {
			t.Errorf("editing the spec after New changed the answer:\n%s", diff)
		}
	})
	t.Run("returned-actions-edited", func(t *testing.T) {
		_, acts, _, err := it.Step(c.Role, c.Policy, c.State, c.Event)
		if err != nil {
			t.Fatal(err)
		}
		acts[0] = "Complete"
		if diff := cmp.Diff(want, interpAt(t, it, c)); diff != "" {
			t.Errorf("editing a returned action list changed the answer:\n%s", diff)
		}
	})
}

// TestInterp_Errors checks that a refused step is a *StepError naming the
// question, wrapping the right sentinel, and returning no partial answer.
func TestInterp_Errors(t *testing.T) {
	it := mustNew(t, spec.Default())
	src, dst := spec.Source, spec.Destination
	sf, df := spec.SourceFirst, spec.DestinationFirst
	cases := []struct {
		name    string
		c       cell
		want    error
		wantMsg string
	}{
		{"not-enabled", cell{src, sf, "Idle", "TransferDone"}, interp.ErrNotEnabled,
			"interp: event not enabled: source Idle × TransferDone under source-first"},
		{"not-enabled-under-this-policy", cell{src, sf, "AwaitingDestination", "BootstrapExpired"}, interp.ErrNotEnabled,
			"interp: event not enabled: source AwaitingDestination × BootstrapExpired under source-first"},
		{"terminal-state", cell{dst, df, "Done", "Restarted"}, interp.ErrNotEnabled,
			"interp: event not enabled: destination Done × Restarted under destination-first"},
		{"unknown-state", cell{src, sf, "Nowhere", "RequestArrived"}, interp.ErrUnknownName,
			`interp: unknown name: source Nowhere × RequestArrived under source-first: the source table declares no state "Nowhere"`},
		{"unknown-event", cell{dst, df, "Idle", "Teleport"}, interp.ErrUnknownName,
			`the destination table declares no event "Teleport"`},
		{"other-role-event", cell{src, sf, "Idle", "DestinationRouted"}, interp.ErrUnknownName,
			`the source table declares no event "DestinationRouted"`},
		{"other-role-state", cell{dst, sf, "Computing", "DestinationRouted"}, interp.ErrUnknownName,
			`the destination table declares no state "Computing"`},
		{"unknown-policy", cell{src, spec.Policy(7), "Idle", "RequestArrived"}, interp.ErrUnknownName,
			"no policy 7"},
		{"unknown-role", cell{spec.Role(9), sf, "Idle", "RequestArrived"}, interp.ErrUnknownName,
			"no role 9"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			to, acts, row, err := it.Step(tc.c.Role, tc.c.Policy, tc.c.State, tc.c.Event)
			if err == nil {
				t.Fatalf("Step(%v) = %q, %v, row %d; want an error", tc.c, to, acts, row)
			}
			if to != "" || acts != nil || row != 0 {
				t.Errorf("Step(%v) returned a partial answer %q, %v, row %d with its error", tc.c, to, acts, row)
			}
			var se *interp.StepError
			if !errors.As(err, &se) {
				t.Fatalf("error %v (%T) is not a *interp.StepError", err, err)
			}
			if se.Role != tc.c.Role || se.Policy != tc.c.Policy || se.State != tc.c.State || se.Event != tc.c.Event {
				t.Errorf("StepError names %v %v %q %q, want %v", se.Role, se.Policy, se.State, se.Event, tc.c)
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("error %q does not wrap %q", err, tc.want)
			}
			for _, other := range []error{interp.ErrNotEnabled, interp.ErrUnknownName} {
				if other != tc.want && errors.Is(err, other) {
					t.Errorf("error %q also wraps %q", err, other)
				}
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "interp: ") || !strings.Contains(msg, tc.wantMsg) {
				t.Errorf("error = %q, want it prefixed \"interp: \" and containing %q", msg, tc.wantMsg)
			}
		})
	}
}

// TestInterp_NewRefusesInvalidSpec checks that a spec with a defect is
// refused up front with the validation problems, rather than interpreted.
func TestInterp_NewRefusesInvalidSpec(t *testing.T) {
	s := spec.Default().Clone()
	s.Destination.Rows[0].Actions = append(s.Destination.Rows[0].Actions, "StartPush")
	it, err := interp.New(s)
	if err == nil {
		t.Fatal("New accepted a destination row that emits a source action")
	}
	if it != nil {
		t.Error("New returned an interpreter with its error")
	}
	var ve *spec.ValidationError
	if !errors.Is(err, spec.ErrInvalid) || !errors.As(err, &ve) {
		t.Fatalf("error %v does not carry the *spec.ValidationError", err)
	}
	if !strings.HasPrefix(err.Error(), "interp: ") || !strings.Contains(err.Error(), `unknown action "StartPush"`) {
		t.Errorf("error = %q, want it prefixed \"interp: \" and naming the unknown action", err)
	}
}
