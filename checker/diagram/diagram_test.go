package diagram

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/machines"
	"github.com/handoffcheck/handoffcheck/spec"
)

var roles = []spec.Role{spec.Source, spec.Destination}

// arrow is one labelled arrow: an event from a state to a state.
type arrow struct{ from, to, event string }

// mermaidArrows reads the arrows of a role's diagram (machines/source.md
// or machines/destination.md) under a policy, one per event of a joined
// label.
func mermaidArrows(t *testing.T, r spec.Role, p spec.Policy) []arrow {
	t.Helper()
	data, err := os.ReadFile("../../machines/" + r.String() + ".md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## "+p.String()+"\n")
	if !ok {
		t.Fatalf("%s.md has no section %s", r, p)
	}
	_, block, _ := strings.Cut(section, "```mermaid\n")
	block, _, _ = strings.Cut(block, "```")
	var out []arrow
	for _, line := range strings.Split(block, "\n") {
		arrowText, label, ok := strings.Cut(strings.TrimSpace(line), " : ")
		if !ok {
			continue
		}
		from, to, _ := strings.Cut(arrowText, " --> ")
		for _, ev := range strings.Split(label, ", ") {
			out = append(out, arrow{from, to, ev})
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s.md's %s diagram has no labelled arrow", r, p)
	}
	return out
}

// The diagrams draw the graph machines/*.md's Mermaid diagrams draw:
// the same arrows, each an edge of its own, and each edge the row the
// table looks up for its state and event.
func TestEdges_AreTheMermaidArrows(t *testing.T) {
	s := spec.Default()
	for _, r := range roles {
		for _, p := range spec.Policies {
			var got []arrow
			for _, e := range Edges(s.Table(r), p) {
				got = append(got, arrow{e.From, e.To, e.Event})
				if i := s.Table(r).Lookup(p, e.From, e.Event); i+1 != e.Row {
					t.Errorf("%s %s: edge %v is row %d, the table looks up row %d", r, p, e, e.Row, i+1)
				}
			}
			want := mermaidArrows(t, r, p)
			// Mermaid joins a state pair's events into one label, so its
			// order is the pairs' first appearance: compared as sets.
			cmp := func(a, b arrow) int { return strings.Compare(a.from+" "+a.to+" "+a.event, b.from+" "+b.to+" "+b.event) }
			slices.SortFunc(got, cmp)
			slices.SortFunc(want, cmp)
			if !slices.Equal(got, want) || len(slices.Compact(slices.Clone(got))) != len(got) {
				t.Errorf("%s under %s: the diagram's edges\n%v\nthe Mermaid arrows\n%v", r, p, got, want)
			}
		}
	}
}

// The SVG diagrams embedded in machines are what go generate lays out
// from today's tables, byte for byte (laying out again gives the same
// bytes), and every state and edge carries the id the explorer marks.
func TestAll_FreshAndIdentified(t *testing.T) {
	s := spec.Default()
	svgs, err := All(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if len(svgs) != len(roles)*len(spec.Policies) {
		t.Fatalf("%d diagrams", len(svgs))
	}
	for _, r := range roles {
		for _, p := range spec.Policies {
			name := File(r, p)
			embedded, err := machines.Diagrams.ReadFile(name)
			if err != nil {
				t.Fatalf("machines embeds no %s: run go generate ./machines", name)
			}
			if !bytes.Equal(embedded, svgs[name]) {
				t.Errorf("machines/%s is not what go generate lays out today: run go generate ./machines", name)
			}
			doc := string(svgs[name])
			ids := []string{NodeID(r, s.Table(r).Initial())}
			for _, st := range s.Table(r).Reachable(p) {
				ids = append(ids, NodeID(r, st))
			}
			for _, e := range Edges(s.Table(r), p) {
				ids = append(ids, EdgeID(r, e.Row, e.From))
			}
			for _, id := range ids {
				// Graphviz writes a '-' in an id as &#45;.
				if want := `id="` + strings.ReplaceAll(id, "-", "&#45;") + `"`; strings.Count(doc, want) != 1 {
					t.Errorf("%s: %d elements with %s", name, strings.Count(doc, want), want)
				}
			}
		}
	}
}
