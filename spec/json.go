package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/handoffcheck/handoffcheck/spec/jsonfile"
)

// SchemaV1 names the JSON form of a spec. Readers refuse other schemas so a
// future change of meaning cannot be read silently with the old one.
const SchemaV1 = "handoffcheck.spec/v1"

type fileSpec struct {
	Schema      string    `json:"schema"`
	Name        string    `json:"name"`
	Source      fileTable `json:"source"`
	Destination fileTable `json:"destination"`
}

type fileTable struct {
	States  []fileState       `json:"states"`
	Events  []json.RawMessage `json:"events"`
	Actions []fileAction      `json:"actions"`
	Rows    []json.RawMessage `json:"rows"`
}

type fileState struct {
	Name     string `json:"name"`
	Initial  bool   `json:"initial,omitempty"`
	Terminal bool   `json:"terminal,omitempty"`
	Outcome  string `json:"outcome,omitempty"`
	Doc      string `json:"doc"`
}

type fileEvent struct {
	Name   string `json:"name"`
	Origin string `json:"origin"`
	Doc    string `json:"doc"`
}

type fileAction struct {
	Name string `json:"name"`
	Doc  string `json:"doc"`
}

type fileRow struct {
	From     []string `json:"from"`
	Event    string   `json:"event"`
	Policies []string `json:"policies"`
	To       string   `json:"to,omitempty"`
	Actions  []string `json:"actions,omitempty"`
	Why      string   `json:"why"`
}

// MarshalJSON writes the versioned JSON form. Output is deterministic: it
// follows table order and never iterates a map.
func (s *Spec) MarshalJSON() ([]byte, error) {
	f := fileSpec{Schema: SchemaV1, Name: s.Name}
	for _, r := range Roles {
		t := s.Table(r)
		ft := fileTable{}
		for _, st := range t.States {
			ft.States = append(ft.States, fileState(st))
		}
		for _, ev := range t.Events {
			raw, err := json.Marshal(fileEvent{Name: ev.Name, Origin: ev.Origin.String(), Doc: ev.Doc})
			if err != nil {
				return nil, err
			}
			ft.Events = append(ft.Events, raw)
		}
		for _, a := range t.Actions {
			ft.Actions = append(ft.Actions, fileAction(a))
		}
		for _, row := range t.Rows {
			fr := fileRow{From: row.From, Event: row.Event, To: row.To, Actions: row.Actions, Why: row.Why}
			for _, p := range row.Policies {
				fr.Policies = append(fr.Policies, p.String())
			}
			raw, err := json.Marshal(fr)
			if err != nil {
				return nil, err
			}
			ft.Rows = append(ft.Rows, raw)
		}
		if r == Source {
			f.Source = ft
		} else {
			f.Destination = ft
		}
	}
	return json.Marshal(f)
}

// Format is the JSON form indented for people and diffs, ending in a newline.
func (s *Spec) Format() ([]byte, error) {
	raw, err := s.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// Parse reads a spec from its JSON form and checks it with
// ValidateVariant. Every error names the file and line and says what was
// expected; all problems are reported at once, each at the line of the
// row, declaration or key it is about. A key given twice in one object is
// refused.
func Parse(file string, data []byte) (*Spec, error) {
	var f fileSpec
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, jsonfile.DecodeError(file, data, err, ErrInvalid, fmt.Sprintf("a spec object with schema %q", SchemaV1))
	}
	if dec.More() {
		return nil, fmt.Errorf("%s:%d: %w: trailing data after the spec object", file, jsonfile.Line(data, int(dec.InputOffset())), ErrInvalid)
	}
	pos, err := jsonfile.Scan(file, data, ErrInvalid)
	if err != nil {
		return nil, err
	}
	if f.Schema != SchemaV1 {
		return nil, fmt.Errorf("%s:%d: %w: schema is %q, want %q", file, pos.Line("schema"), ErrInvalid, f.Schema, SchemaV1)
	}
	s := &Spec{Name: f.Name}
	var errs []string
	for _, r := range Roles {
		ft := f.Source
		if r == Destination {
			ft = f.Destination
		}
		key := r.String()
		t := s.Table(r)
		t.Role = r
		for _, st := range ft.States {
			t.States = append(t.States, State(st))
		}
		for i, raw := range ft.Events {
			// Events are decoded one by one, like rows, so that an error
			// points at the event's own line.
			var ev fileEvent
			ed := json.NewDecoder(bytes.NewReader(raw))
			ed.DisallowUnknownFields()
			if err := ed.Decode(&ev); err != nil {
				errs = append(errs, fmt.Sprintf("%s:%d: %s event %d: %s (want name, origin, doc)", file, pos.Line(key, "events", i), r, i+1, jsonfile.Clean(err)))
				t.Events = append(t.Events, Event{})
				continue
			}
			o, ok := parseOrigin(ev.Origin)
			if !ok {
				errs = append(errs, fmt.Sprintf("%s:%d: %s event %q: origin %q is not one of local, peer, timer, client, restart",
					file, pos.Line(key, "events", i, "origin"), r, ev.Name, ev.Origin))
			}
			t.Events = append(t.Events, Event{Name: ev.Name, Origin: o, Doc: ev.Doc})
		}
		for _, a := range ft.Actions {
			t.Actions = append(t.Actions, Action(a))
		}
		for i, raw := range ft.Rows {
			// Rows are decoded one by one so that each error and each
			// validation problem can point at the row's own line.
			line := pos.Line(key, "rows", i)
			var fr fileRow
			rd := json.NewDecoder(bytes.NewReader(raw))
			rd.DisallowUnknownFields()
			if err := rd.Decode(&fr); err != nil {
				errs = append(errs, fmt.Sprintf("%s:%d: %s row %d: %s (want from, event, policies, to, actions, why)", file, line, r, i+1, jsonfile.Clean(err)))
				t.Rows = append(t.Rows, Row{})
				continue
			}
			row := Row{From: fr.From, Event: fr.Event, To: fr.To, Actions: fr.Actions, Why: fr.Why}
			for _, p := range fr.Policies {
				pp, err := ParsePolicy(p)
				if err != nil {
					errs = append(errs, fmt.Sprintf("%s:%d: %s row %d: policy %q is not source-first or destination-first", file, line, r, i+1, p))
					continue
				}
				row.Policies = append(row.Policies, pp)
			}
			t.Rows = append(t.Rows, row)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w:\n%s", ErrInvalid, strings.Join(errs, "\n"))
	}
	if err := s.ValidateVariant(); err != nil {
		var ve *ValidationError
		if !errors.As(err, &ve) {
			return nil, err
		}
		type located struct {
			line int
			text string
		}
		var ls []located
		for _, p := range ve.Problems {
			ls = append(ls, located{problemLine(pos, p), p.String()})
		}
		// In file order, so that an editor walks them top to bottom.
		slices.SortStableFunc(ls, func(a, b located) int { return a.line - b.line })
		var lines []string
		for _, l := range ls {
			lines = append(lines, fmt.Sprintf("%s:%d: %s", file, l.line, l.text))
		}
		return nil, fmt.Errorf("%w: %d problem(s):\n%s", ErrInvalid, len(ve.Problems), strings.Join(lines, "\n"))
	}
	return s, nil
}

// problemLine is the line a problem is about: its row, its declaration,
// or the key of its table (the name for a problem of the whole spec).
func problemLine(pos *jsonfile.Positions, p Problem) int {
	key := p.Role.String()
	switch {
	case p.Row >= 0:
		return pos.Line(key, "rows", p.Row)
	case p.Decl != "":
		return pos.Line(key, p.Decl+"s", p.Index)
	case p.Where == "spec":
		return pos.Line("name")
	}
	return pos.Line(key)
}

func parseOrigin(s string) (Origin, bool) {
	for _, o := range Origins {
		if o.String() == s {
			return o, true
		}
	}
	return 0, false
}
