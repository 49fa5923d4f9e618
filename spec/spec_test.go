package spec

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDefault_Validates(t *testing.T) {
	if err := Default().ValidateBuiltin(); err != nil {
		t.Fatal(err)
	}
}

// mustLookup is the index of the row that decides a cell of a table.
func mustLookup(t *testing.T, tb *Table, p Policy, state, event string) int {
	t.Helper()
	i := tb.Lookup(p, state, event)
	if i < 0 {
		t.Fatalf("no %s row decides %s × %s under %s", tb.Role, state, event, p)
	}
	return i
}

// TestValidate_ReportsEveryProblem plants six independent defects in one
// spec and expects all of them in a single ValidationError, in table
// order, each naming its row (Validate reports every problem at
// once, naming the row), and nothing else.
func TestValidate_ReportsEveryProblem(t *testing.T) {
	s := Default().Clone()
	src, dst := &s.Source, &s.Destination

	unknownEvent := mustLookup(t, src, DestinationFirst, "AwaitingDestination", "LocalAbort")
	src.Rows[unknownEvent].Event = "Teleport"

	noWhy := mustLookup(t, dst, SourceFirst, "Active", "DecodeFinished")
	dst.Rows[noWhy].Why = "  "

	// Row dup already decides Idle × DestinationReserved under
	// source-first; extending it to destination-first collides with the
	// row that moves Idle to Primed.
	dup := mustLookup(t, src, SourceFirst, "Idle", "DestinationReserved")
	owner := mustLookup(t, src, DestinationFirst, "Idle", "DestinationReserved")
	src.Rows[dup].Policies = []Policy{SourceFirst, DestinationFirst}

	// Active is reachable under both policies; dropping it from the
	// ignore row leaves a late ReceiveCompleted undefined there.
	unhandled := mustLookup(t, dst, SourceFirst, "Active", "ReceiveCompleted")
	from := dst.Rows[unhandled].From
	if from[len(from)-1] != "Active" {
		t.Fatalf("%s: want Active last in %v", dst.RowLabel(unhandled), from)
	}
	dst.Rows[unhandled].From = from[:len(from)-1]

	// A terminal state may react, but not to its own restart.
	terminal := mustLookup(t, src, SourceFirst, "Pinned", "Restarted")
	src.Rows[terminal].From = append(src.Rows[terminal].From, "Released")

	// StartPush is a source action: the destination vocabulary lacks it.
	unknownAction := mustLookup(t, dst, SourceFirst, "Reserving", "DestinationReserved")
	dst.Rows[unknownAction].Actions = append(dst.Rows[unknownAction].Actions, "StartPush")

	row := func(r Role, i int, cell string) string { return fmt.Sprintf("%s row %d (%s)", r, i+1, cell) }
	prob := func(r Role, i int, where, what string) Problem {
		return Problem{Role: r, Row: i, Where: where, What: what}
	}
	want := []Problem{
		prob(Source, dup, row(Source, dup, "Idle × DestinationReserved"),
			fmt.Sprintf("Idle × DestinationReserved under destination-first is also claimed by row %d", owner+1)),
		prob(Source, unknownEvent, row(Source, unknownEvent, "AwaitingDestination × Teleport"),
			`unknown event "Teleport"`),
		prob(Source, terminal, row(Source, terminal, "Idle+10 × Restarted"),
			`from-state "Released" is terminal: a restart forgets a finished record without a step, so this row would never fire`),
		prob(Destination, unknownAction, row(Destination, unknownAction, "Reserving × DestinationReserved"),
			`unknown action "StartPush" (not in the destination vocabulary)`),
		prob(Destination, noWhy, row(Destination, noWhy, "Active × DecodeFinished"),
			"no why: every row must say why it exists"),
		prob(Destination, -1, "destination table",
			"peer event ReceiveCompleted is not handled in state Active under source-first (add a row, even an explicit ignore)"),
		prob(Destination, -1, "destination table",
			"peer event ReceiveCompleted is not handled in state Active under destination-first (add a row, even an explicit ignore)"),
	}
	// The six defects sit in distinct rows, so problems of one row cannot
	// hide another's.
	seen := map[string]bool{}
	for _, p := range want {
		if p.Row >= 0 && seen[p.Where] {
			t.Fatalf("two defects share %s", p.Where)
		}
		seen[p.Where] = true
	}

	err := s.Validate()
	if err == nil {
		t.Fatal("Validate accepted a spec with six defects")
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("error %v does not wrap ErrInvalid", err)
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v (%T) is not a *ValidationError", err, err)
	}
	if diff := cmp.Diff(want, ve.Problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, fmt.Sprintf("spec: %d problem(s)\n", len(want))) {
		t.Errorf("message does not open with the count:\n%s", msg)
	}
	for _, p := range want {
		if !strings.Contains(msg, "\n  "+p.Where+": "+p.What) {
			t.Errorf("message does not carry %q:\n%s", p, msg)
		}
	}
}

// TestJSON_RoundTrip checks that the JSON form loses nothing: Format then
// Parse gives back the same spec, and formatting that gives the same bytes.
func TestJSON_RoundTrip(t *testing.T) {
	mutant := Default().Clone()
	// A moving row turned into a stay row with a new action list, to cover
	// the omitted "to" and a changed "actions" on the way out and in.
	i := mustLookup(t, &mutant.Destination, SourceFirst, "Reserving", "HeartbeatDue")
	mutant.Destination.Rows[i].Actions = []string{"SendLeaseRenewed", "ArmReservationTimer"}
	mutant.Name = "mutant"
	for _, tc := range []struct {
		name string
		s    *Spec
	}{
		{"default", Default()},
		{"mutant", mutant},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := tc.s.Format()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(data), "{\n  \"schema\": \""+SchemaV1+"\",\n") || !strings.HasSuffix(string(data), "}\n") {
				t.Errorf("Format does not give an indented object that opens with the schema and ends in a newline:\n%.200s", data)
			}
			back, err := Parse(tc.name+".json", data)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.s, back); diff != "" {
				t.Errorf("Parse(Format(s)) differs from s (-s +parsed):\n%s", diff)
			}
			again, err := back.Format()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(strings.Split(string(data), "\n"), strings.Split(string(again), "\n")); diff != "" {
				t.Errorf("Format is not stable across a round trip (-first +second):\n%s", diff)
			}
		})
	}
}

// jsonLines is the default spec's JSON form, split in lines: the base the
// Parse error cases edit.
func jsonLines(t *testing.T) []string {
	t.Helper()
	data, err := Default().Format()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(data), "\n")
}

// onlyLine is the 0-based index of the one line in [from, to) holding sub.
func onlyLine(t *testing.T, lines []string, from, to int, sub string) int {
	t.Helper()
	found := -1
	for i := from; i < to && i < len(lines); i++ {
		if strings.Contains(lines[i], sub) {
			if found >= 0 {
				t.Fatalf("%q is on lines %d and %d", sub, found+1, i+1)
			}
			found = i
		}
	}
	if found < 0 {
		t.Fatalf("%q is on no line %d..%d", sub, from+1, to)
	}
	return found
}

// rowSpan is the 0-based index of the line opening a row (its "{") and of
// its why line, found by the row's why, which the caller picks unique.
func rowSpan(t *testing.T, lines []string, why string) (open, whyLine int) {
	t.Helper()
	whyLine = onlyLine(t, lines, 0, len(lines), `"why": `+strconv.Quote(why))
	for open = whyLine; open >= 0 && strings.TrimSpace(lines[open]) != "{"; open-- {
	}
	if open < 0 {
		t.Fatalf("no row opens above line %d", whyLine+1)
	}
	return open, whyLine
}

// TestParse_ErrorsNameFileAndLine edits the formatted default spec in one
// place per case and expects the error to name the file and the line of
// the defect (for a row: the line that opens it), and to say what is wrong.
func TestParse_ErrorsNameFileAndLine(t *testing.T) {
	def := Default()
	type located struct {
		line int // 1-based
		what string
	}
	// Each case edits a fresh copy of the lines and says where the errors
	// must point, by the line numbers of the unedited text.
	cases := []struct {
		name string
		edit func(t *testing.T, lines []string) ([]string, []located)
	}{
		{"malformed-json", func(t *testing.T, lines []string) ([]string, []located) {
			i := mustLookup(t, &def.Destination, DestinationFirst, "Reserved", "ClientCancelled")
			open, why := rowSpan(t, lines, def.Destination.Rows[i].Why)
			ev := onlyLine(t, lines, open, why, `"event": "ClientCancelled"`)
			lines[ev] = strings.Replace(lines[ev], `"event": `, `"event" `, 1)
			return lines, []located{{ev + 1, "malformed JSON"}}
		}},
		{"unknown-field-in-row", func(t *testing.T, lines []string) ([]string, []located) {
			i := mustLookup(t, &def.Destination, SourceFirst, "Draining", "TransferFailed")
			open, _ := rowSpan(t, lines, def.Destination.Rows[i].Why)
			lines = append(lines[:open+1], append([]string{`        "colour": "red",`}, lines[open+1:]...)...)
			return lines, []located{{open + 1, fmt.Sprintf(`destination row %d: unknown field "colour"`, i+1)}}
		}},
		{"bad-policy", func(t *testing.T, lines []string) ([]string, []located) {
			i := mustLookup(t, &def.Source, DestinationFirst, "Computing", "PrefillPinned")
			open, why := rowSpan(t, lines, def.Source.Rows[i].Why)
			p := onlyLine(t, lines, open, why, `"destination-first"`)
			lines[p] = strings.Replace(lines[p], "destination-first", "sglang-first", 1)
			return lines, []located{{open + 1, fmt.Sprintf(`source row %d: policy "sglang-first" is not source-first or destination-first`, i+1)}}
		}},
		{"wrong-schema", func(t *testing.T, lines []string) ([]string, []located) {
			s := onlyLine(t, lines, 0, len(lines), `"schema": `)
			lines[s] = strings.Replace(lines[s], SchemaV1, "handoffcheck.spec/v2", 1)
			return lines, []located{{s + 1, `schema is "handoffcheck.spec/v2", want "` + SchemaV1 + `"`}}
		}},
		{"validation-problems-at-their-rows", func(t *testing.T, lines []string) ([]string, []located) {
			si := mustLookup(t, &def.Source, SourceFirst, "Pinned", "LeaseRenewed")
			sOpen, sWhy := rowSpan(t, lines, def.Source.Rows[si].Why)
			di := mustLookup(t, &def.Destination, DestinationFirst, "Activating", "ActivationApplied")
			dOpen, dWhy := rowSpan(t, lines, def.Destination.Rows[di].Why)
			lines[sWhy] = `        "why": ""`
			act := onlyLine(t, lines, dOpen, dWhy, `"PublishStored"`)
			lines[act] = strings.Replace(lines[act], "PublishStored", "StartPush", 1)
			return lines, []located{
				{sOpen + 1, fmt.Sprintf("source row %d (Pinned × LeaseRenewed): no why", si+1)},
				{dOpen + 1, fmt.Sprintf(`destination row %d (Activating × ActivationApplied): unknown action "StartPush"`, di+1)},
			}
		}},
		{"unknown-origin", func(t *testing.T, lines []string) ([]string, []located) {
			// The destination's PeerRestarted, not the first event with
			// the same origin, is the one at fault.
			dstTable := onlyLine(t, lines, 0, len(lines), `"destination": {`)
			name := onlyLine(t, lines, dstTable, len(lines), `"name": "PeerRestarted"`)
			o := onlyLine(t, lines, name, name+2, `"origin": `)
			lines[o] = strings.Replace(lines[o], `"restart"`, `"mail"`, 1)
			return lines, []located{{o + 1, `destination event "PeerRestarted": origin "mail" is not one of`}}
		}},
		{"unknown-top-level-field", func(t *testing.T, lines []string) ([]string, []located) {
			n := onlyLine(t, lines, 0, 4, `"name": `)
			lines = append(lines[:n+1], append([]string{`  "colour": "red",`}, lines[n+1:]...)...)
			return lines, []located{{n + 2, `unknown field "colour"`}}
		}},
		{"truncated", func(t *testing.T, lines []string) ([]string, []located) {
			return lines[:100], []located{{100, "the JSON ends early"}}
		}},
		{"empty", func(t *testing.T, lines []string) ([]string, []located) {
			return nil, []located{{1, "empty input"}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lines, want := tc.edit(t, jsonLines(t))
			s, err := Parse("spec.json", []byte(strings.Join(lines, "\n")))
			if err == nil {
				t.Fatal("Parse accepted the broken spec")
			}
			if s != nil {
				t.Error("Parse returned a spec with its error")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error does not wrap ErrInvalid: %v", err)
			}
			got := strings.Split(err.Error(), "\n")
			for _, w := range want {
				prefix := fmt.Sprintf("spec.json:%d: ", w.line)
				if !slices.ContainsFunc(got, func(l string) bool { return strings.HasPrefix(l, prefix) && strings.Contains(l, w.what) }) {
					t.Errorf("no error line starts with %q and says %q; got:\n%s", prefix, w.what, err)
				}
			}
		})
	}
}
