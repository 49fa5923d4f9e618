package spec

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// Default hands every caller a spec of its own: editing one, down to a
// row's policy list (which the table literals share), leaves the next
// call's untouched.
func TestDefault_ReturnsDeepCopy(t *testing.T) {
	want, err := Default().Format()
	if err != nil {
		t.Fatal(err)
	}
	s := Default()
	for _, r := range Roles {
		tb := s.Table(r)
		for i := range tb.Rows {
			for j := range tb.Rows[i].Policies {
				tb.Rows[i].Policies[j] = Policy(9)
			}
			for j := range tb.Rows[i].From {
				tb.Rows[i].From[j] = "Edited"
			}
			for j := range tb.Rows[i].Actions {
				tb.Rows[i].Actions[j] = "Edited"
			}
		}
		tb.States[0].Name = "Edited"
		tb.Events[0].Name = "Edited"
		tb.Actions[0].Name = "Edited"
	}
	got, err := Default().Format()
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatal("editing one Default() changed what the next call returns")
	}
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
}

// parseLines formats a spec and parses it back as spec.json, returning
// the formatted lines and the error lines of the refusal.
func parseLines(t *testing.T, s *Spec) (lines, errLines []string) {
	t.Helper()
	data, err := s.Format()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse("spec.json", data)
	if err == nil {
		t.Fatalf("Parse accepted the spec: %+v", got.Name)
	}
	if got != nil || !errors.Is(err, ErrInvalid) {
		t.Fatalf("Parse returned %v with %v, want no spec and an error wrapping ErrInvalid", got != nil, err)
	}
	return strings.Split(string(data), "\n"), strings.Split(err.Error(), "\n")
}

// wantAt fails unless an error line sits at line (1-based) and says what.
func wantAt(t *testing.T, errLines []string, line int, what string) {
	t.Helper()
	prefix := fmt.Sprintf("spec.json:%d: ", line)
	if !slices.ContainsFunc(errLines, func(l string) bool { return strings.HasPrefix(l, prefix) && strings.Contains(l, what) }) {
		t.Errorf("no error line starts with %q and says %q; got:\n%s", prefix, what, strings.Join(errLines, "\n"))
	}
}

// declLine is the 1-based line opening the declaration whose name is name
// in the role's table (the "{" above its "name").
func declLine(t *testing.T, lines []string, role Role, list, name string) int {
	t.Helper()
	table := onlyLine(t, lines, 0, len(lines), fmt.Sprintf(`"%s": {`, role))
	tableEnd := table + 1
	for tableEnd < len(lines) && !strings.HasPrefix(lines[tableEnd], "  }") {
		tableEnd++
	}
	open := slices.Index(lines[table:tableEnd], fmt.Sprintf(`    "%s": [`, list)) + table
	end := open
	for end < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[end]), "]") {
		end++
	}
	n := onlyLine(t, lines, open, end, fmt.Sprintf(`"name": %q`, name))
	return n // the "{" is on line n (0-based), so this is its 1-based number
}

// The checker's limits (four bits per role state, a fixed action array per
// row) are the spec's: Validate refuses what the checker could not run,
// and Parse says where.
func TestValidate_Limits(t *testing.T) {
	t.Run("actions-per-row", func(t *testing.T) {
		s := Default()
		i := mustLookup(t, &s.Source, SourceFirst, "Computing", "PrefillPinned")
		row := &s.Source.Rows[i]
		for _, a := range s.Source.Actions {
			if len(row.Actions) == MaxActions+1 {
				break
			}
			if !slices.Contains(row.Actions, a.Name) {
				row.Actions = append(row.Actions, a.Name)
			}
		}
		err := s.Validate()
		var ve *ValidationError
		if !errors.As(err, &ve) || !slices.ContainsFunc(ve.Problems, func(p Problem) bool {
			return p.Row == i && strings.Contains(p.What, fmt.Sprintf("has %d actions, at most %d", MaxActions+1, MaxActions))
		}) {
			t.Fatalf("Validate: %v, want the %d-action row refused", err, MaxActions+1)
		}
		lines, errLines := parseLines(t, s)
		open, _ := rowSpan(t, lines, row.Why)
		wantAt(t, errLines, open+1, fmt.Sprintf("source row %d (Computing × PrefillPinned): has 9 actions, at most 8 are supported", i+1))
	})
	t.Run("states-per-role", func(t *testing.T) {
		s := Default()
		for n := len(s.Destination.States); n <= MaxStates; n++ {
			name := fmt.Sprintf("Extra%d", n)
			s.Destination.States = append(s.Destination.States, State{Name: name, Terminal: true, Outcome: OutcomeFailure, Doc: "padding"})
			// Reachable, so that only the limit is at fault.
			s.Destination.Rows = append(s.Destination.Rows, Row{From: []string{"Reserving"}, Event: "LocalAbort", Policies: []Policy{Policy(n % 2)}, To: name, Why: "padding"})
		}
		err := s.Validate()
		var ve *ValidationError
		if !errors.As(err, &ve) || !slices.ContainsFunc(ve.Problems, func(p Problem) bool {
			return p.Decl == DeclState && p.Index == MaxStates && strings.Contains(p.What, "has 17 states, at most 16")
		}) {
			t.Fatalf("Validate: %v, want the 17th state refused", err)
		}
		lines, errLines := parseLines(t, s)
		wantAt(t, errLines, declLine(t, lines, Destination, "states", fmt.Sprintf("Extra%d", MaxStates)), "destination table: has 17 states, at most 16 are supported")
	})
}

// A variant's vocabulary problems carry the file:line of the declaration
// or row they are about, like every other spec error.
func TestParse_VocabularyAtTheirLines(t *testing.T) {
	s := Default()
	s.Name = "variant"
	// An event the model does not know, in place of one it does.
	ev := s.Source.EventIndex("LeaseRenewed")
	s.Source.Events[ev].Name = "Teleported"
	for i := range s.Source.Rows {
		if s.Source.Rows[i].Event == "LeaseRenewed" {
			s.Source.Rows[i].Event = "Teleported"
		}
	}
	// A known event with the wrong origin.
	s.Destination.Events[s.Destination.EventIndex("DecodeFinished")].Origin = Peer
	// An action declared but foreign to the model.
	s.Destination.Actions = append(s.Destination.Actions, Action{Name: "Levitate", Doc: "not a thing"})
	// A restart row that acts.
	ri := mustLookup(t, &s.Destination, SourceFirst, "Reserving", "Restarted")
	s.Destination.Rows[ri].Actions = []string{"SendCancelled"}
	s.Destination.Rows[ri].Why = "a restart that still acts"

	lines, errLines := parseLines(t, s)
	wantAt(t, errLines, declLine(t, lines, Source, "events", "Teleported"), `source table: event "Teleported" is not a source event the model knows`)
	wantAt(t, errLines, onlyLine(t, lines, 0, 4, `"source": {`)+1, "does not declare the source event(s) LeaseRenewed")
	wantAt(t, errLines, declLine(t, lines, Destination, "events", "DecodeFinished"), `event "DecodeFinished" has origin peer, the model gives it origin local`)
	wantAt(t, errLines, declLine(t, lines, Destination, "actions", "Levitate"), `action "Levitate" is not in the vocabulary the model knows`)
	open, _ := rowSpan(t, lines, s.Destination.Rows[ri].Why)
	wantAt(t, errLines, open+1, "a restart row cannot act")
}

// A state no row leads to under any policy is refused at its
// declaration; one reachable under a single policy is fine.
func TestParse_UnreachableStateRefused(t *testing.T) {
	def := Default()
	onlyOne := false
	for _, st := range def.Source.States {
		sf, df := slices.Contains(def.Source.Reachable(SourceFirst), st.Name), slices.Contains(def.Source.Reachable(DestinationFirst), st.Name)
		onlyOne = onlyOne || sf != df
	}
	if !onlyOne {
		t.Fatal("the default source table has no state reachable under one policy only; the case below needs one")
	}
	if err := def.ValidateVariant(); err != nil {
		t.Fatalf("the built-in spec is refused: %v", err)
	}

	s := Default()
	s.Source.States = append(s.Source.States, State{Name: "Limbo", Doc: "no row leads here"})
	// Limbo handles what it must, so that only its reachability is at fault.
	for i := range s.Source.Rows {
		row := &s.Source.Rows[i]
		if slices.Contains(row.From, "Computing") {
			if ev := s.Source.Events[s.Source.EventIndex(row.Event)]; ev.Origin.MustBeHandled() {
				row.From = append(row.From, "Limbo")
			}
		}
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("Validate refuses the padded spec: %v", err)
	}
	lines, errLines := parseLines(t, s)
	wantAt(t, errLines, declLine(t, lines, Source, "states", "Limbo"), `state "Limbo" is refused: no row leads to it from the initial state Idle under any policy`)
	if len(errLines) != 2 {
		t.Errorf("want one problem, got:\n%s", strings.Join(errLines, "\n"))
	}
}

// A key given twice in one object is refused at the second one: JSON
// readers keep the last silently, so the first would be ignored.
func TestParse_DuplicateKeyRefused(t *testing.T) {
	lines := jsonLines(t)
	def := Default()
	i := mustLookup(t, &def.Source, SourceFirst, "Pinned", "LeaseRenewed")
	_, why := rowSpan(t, lines, def.Source.Rows[i].Why)
	lines = slices.Insert(lines, why, `        "event": "LeaseRenewed",`)
	_, err := Parse("spec.json", []byte(strings.Join(lines, "\n")))
	if err == nil || !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), fmt.Sprintf("spec.json:%d: ", why+1)) ||
		!strings.Contains(err.Error(), `key "event" appears twice in source.rows[`) {
		t.Fatalf("got %v, want a refusal of the second \"event\" at line %d", err, why+1)
	}
}

// A variant's terminal state may keep reacting: a file whose Done takes a
// late ClientCancelled loads, with the row as written, and only the
// built-in check refuses it. A terminal state needs no row for the events
// it ignores, peer messages and timers included.
func TestParse_TerminalStateReacts(t *testing.T) {
	s := Default()
	s.Name = "reacting"
	s.Destination.Rows = append(s.Destination.Rows, Row{From: []string{"Done"}, Event: "ClientCancelled", Policies: []Policy{SourceFirst},
		To: "Aborted", Actions: []string{"ReportDecodeFailed", "Complete"}, Why: "a late cancel finalizes again"})
	data, err := s.Format()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse("reacting.json", data)
	if err != nil {
		t.Fatalf("a variant whose terminal state reacts is refused: %v", err)
	}
	i := got.Destination.Lookup(SourceFirst, "Done", "ClientCancelled")
	if i != len(got.Destination.Rows)-1 || got.Destination.Rows[i].To != "Aborted" {
		t.Fatalf("Done × ClientCancelled is decided by row %d, want the added row %d", i+1, len(got.Destination.Rows))
	}
	err = got.ValidateBuiltin()
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Row != i ||
		ve.Problems[0].What != `from-state "Done" is terminal; a terminal state of the built-in tables takes no events` {
		t.Fatalf("ValidateBuiltin: %v, want the one terminal row refused", err)
	}
}

// Every entry of LaterEvents names an event of its role's built-in table,
// once; a file may leave exactly those out, and any other missing event
// is refused at its table's line.
func TestParse_LaterEventsMayBeAbsent(t *testing.T) {
	def := Default()
	seen := map[LaterEvent]bool{}
	for _, le := range LaterEvents {
		if def.Table(le.Role).EventIndex(le.Name) < 0 || seen[le] {
			t.Errorf("LaterEvents entry %+v: not a built-in %s event, or listed twice", le, le.Role)
		}
		seen[le] = true
	}
	// The built-in tables as they were exported before any of the later
	// events existed: a real file, not a construction, because a table
	// that drops an event's rows today may leave states unreachable.
	const older = "../testdata/specs/handoff-before-deferred.json"
	data, err := os.ReadFile(older)
	if err != nil {
		t.Fatal(err)
	}
	old, err := Parse(older, data)
	if err != nil {
		t.Fatalf("a file without the events added later is refused: %v", err)
	}
	for _, le := range LaterEvents {
		if old.Table(le.Role).EventIndex(le.Name) >= 0 {
			t.Fatalf("%s declares %s %s: it is not a file from before the later events", older, le.Role, le.Name)
		}
	}
	s := Default()
	s.Name = "older"
	s.Source.Events = slices.DeleteFunc(s.Source.Events, func(ev Event) bool { return ev.Name == "LeaseRenewed" })
	s.Source.Rows = slices.DeleteFunc(s.Source.Rows, func(r Row) bool { return r.Event == "LeaseRenewed" })
	lines, errLines := parseLines(t, s)
	wantAt(t, errLines, onlyLine(t, lines, 0, 4, `"source": {`)+1,
		"does not declare the source event(s) LeaseRenewed: the model can deliver every event it knows, so each needs its rows (only an event added to the vocabulary later may be left out)")
	if len(errLines) != 2 {
		t.Errorf("want one problem, got:\n%s", strings.Join(errLines, "\n"))
	}
}
