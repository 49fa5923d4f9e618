package diagram

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/goccy/go-graphviz"

	"github.com/handoffcheck/handoffcheck/spec"
)

// Edge is one arrow: row Row (from 1) taken from state From to To.
type Edge struct {
	Row      int
	From, To string
	Event    string
}

// Edges lists a table's arrows under a policy, the arrows of the Mermaid
// diagrams one event at a time: by reachable state in table order, then
// by event in table order, each the row the table looks up there;
// explicit ignores (no move, no action) are left out, as they are there.
func Edges(t *spec.Table, p spec.Policy) []Edge {
	var out []Edge
	for _, from := range t.Reachable(p) {
		for _, ev := range t.Events {
			i := t.Lookup(p, from, ev.Name)
			if i < 0 || t.Rows[i].Ignores() {
				continue
			}
			out = append(out, Edge{Row: i + 1, From: from, To: t.Rows[i].Target(from), Event: ev.Name})
		}
	}
	return out
}

// NodeID is the id of a state's node.
func NodeID(r spec.Role, state string) string { return r.String() + "-" + state }

// EdgeID is the id of row's edge out of a state.
func EdgeID(r spec.Role, row int, from string) string {
	return fmt.Sprintf("%s-r%d-%s", r, row, from)
}

// Dot writes the diagram of a role under a policy in the DOT language.
// It depends on the table alone, so the same table gives the same text.
func Dot(s *spec.Spec, r spec.Role, p spec.Policy) string {
	t := s.Table(r)
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("digraph %q {\n", r.String()+" "+p.String())
	w("  id=%q;\n", r.String()+"-"+p.String())
	w("  rankdir=TB; nodesep=0.3; ranksep=0.45;\n")
	w("  node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", fontname=\"Helvetica\", fontsize=12];\n")
	w("  edge [fontname=\"Helvetica\", fontsize=9];\n")
	w("  %q [id=%q, shape=point, width=0.15, label=\"\"];\n", "[*]", r.String()+"-start")
	reach := t.Reachable(p)
	for _, st := range t.States {
		if !slices.Contains(reach, st.Name) {
			continue
		}
		extra := ""
		if st.Terminal {
			extra = ", peripheries=2"
		}
		w("  %q [id=%q, class=\"state\", tooltip=%q%s];\n", st.Name, NodeID(r, st.Name), st.Name+": "+st.Doc, extra)
	}
	w("  %q -> %q [id=%q];\n", "[*]", t.Initial(), r.String()+"-initial")
	for _, e := range Edges(t, p) {
		why := t.Rows[e.Row-1].Why
		w("  %q -> %q [id=%q, class=%q, label=%q, tooltip=%q];\n", e.From, e.To, EdgeID(r, e.Row, e.From),
			fmt.Sprintf("row%d", e.Row), e.Event, fmt.Sprintf("row %d: %s", e.Row, why))
	}
	w("}\n")
	return b.String()
}

// Layout lays DOT text out as SVG with dot. The same text gives the same
// bytes: the layout is deterministic and the text is measured by
// Graphviz's built-in font metrics, not by fonts found on the machine.
type Layout struct {
	g *graphviz.Graphviz
}

// NewLayout starts Graphviz (compiling its WebAssembly module takes a
// moment; one Layout lays out any number of diagrams).
func NewLayout(ctx context.Context) (*Layout, error) {
	g, err := graphviz.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("graphviz: %v", err)
	}
	return &Layout{g: g}, nil
}

// Close releases Graphviz.
func (l *Layout) Close() error { return l.g.Close() }

// SVG lays out DOT text as an SVG document.
func (l *Layout) SVG(ctx context.Context, dot string) ([]byte, error) {
	graph, err := graphviz.ParseBytes([]byte(dot))
	if err != nil {
		return nil, fmt.Errorf("graphviz: parsing the diagram: %v", err)
	}
	defer graph.Close()
	var buf bytes.Buffer
	if err := l.g.Render(ctx, graph, graphviz.SVG, &buf); err != nil {
		return nil, fmt.Errorf("graphviz: %v", err)
	}
	return buf.Bytes(), nil
}

// File names the diagram of a role under a policy: source.source-first.svg.
func File(r spec.Role, p spec.Policy) string { return r.String() + "." + p.String() + ".svg" }

// All lays out every role's diagram under every policy, keyed by File.
func All(ctx context.Context, s *spec.Spec) (map[string][]byte, error) {
	l, err := NewLayout(ctx)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	out := map[string][]byte{}
	for _, r := range []spec.Role{spec.Source, spec.Destination} {
		for _, p := range spec.Policies {
			svg, err := l.SVG(ctx, Dot(s, r, p))
			if err != nil {
				return nil, fmt.Errorf("%s under %s: %v", r, p, err)
			}
			out[File(r, p)] = svg
		}
	}
	return out, nil
}
