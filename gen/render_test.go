package gen_test

import (
	"bytes"
	"errors"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/handoffcheck/handoffcheck/gen"
	"github.com/handoffcheck/handoffcheck/spec"
)

// machinesDir is where go generate writes the rendered files.
var machinesDir = filepath.Join("..", "machines")

func mustRender(t *testing.T, s *spec.Spec) []gen.File {
	t.Helper()
	files, err := gen.Render(s)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func lines(b []byte) []string { return strings.Split(string(b), "\n") }

func names(files []gen.File) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Name)
	}
	return out
}

// TestRender_MatchesCommitted is the freshness check of generated code:
// the committed machines and docs are exactly what the default spec renders
// to today, so nobody edits generated code by hand or forgets to
// regenerate after changing spec/.
func TestRender_MatchesCommitted(t *testing.T) {
	files := mustRender(t, spec.Default())
	want := []string{"common_gen.go", "source_gen.go", "source.md", "destination_gen.go", "destination.md"}
	if diff := cmp.Diff(want, names(files)); diff != "" {
		t.Fatalf("rendered file names (-want +got):\n%s", diff)
	}
	for _, f := range files {
		t.Run(f.Name, func(t *testing.T) {
			committed, err := os.ReadFile(filepath.Join(machinesDir, f.Name))
			if err != nil {
				t.Fatalf("%v; run go generate ./...", err)
			}
			if !bytes.Equal(committed, f.Data) {
				t.Errorf("machines/%s is stale; run go generate ./... (-committed +rendered):\n%s",
					f.Name, cmp.Diff(lines(committed), lines(f.Data)))
			}
		})
	}
	// A generated file the spec no longer renders would linger unnoticed.
	t.Run("no-stray-generated-files", func(t *testing.T) {
		var stray []string
		for _, pat := range []string{"*_gen.go", "*.md"} {
			found, err := filepath.Glob(filepath.Join(machinesDir, pat))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range found {
				if !slices.Contains(names(files), filepath.Base(p)) {
					stray = append(stray, filepath.Base(p))
				}
			}
		}
		if len(stray) > 0 {
			t.Errorf("machines/ holds generated-looking files Render does not produce: %v; delete them and run go generate ./...", stray)
		}
	})
}

// TestRender_Deterministic renders the default spec and copies of it
// several times: any map iteration leaking into the output shows up as a
// difference between runs.
func TestRender_Deterministic(t *testing.T) {
	first := mustRender(t, spec.Default())
	for run := 1; run <= 10; run++ {
		again := mustRender(t, spec.Default().Clone())
		if diff := cmp.Diff(names(first), names(again)); diff != "" {
			t.Fatalf("run %d: file names differ (-first +again):\n%s", run, diff)
		}
		for i := range first {
			if !bytes.Equal(first[i].Data, again[i].Data) {
				t.Fatalf("run %d: %s differs (-first +again):\n%s", run, first[i].Name, cmp.Diff(lines(first[i].Data), lines(again[i].Data)))
			}
		}
	}
}

// codeGenerated is the standard header tools recognise (go help generate).
var codeGenerated = regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`)

// TestRender_GoFilesAreFormattedAndMarked checks the promises of gen's doc:
// Go output is gofmt'ed and opens with the standard generated-code line, so
// linters and reviewers skip it; docs carry the same line in a comment.
func TestRender_GoFilesAreFormattedAndMarked(t *testing.T) {
	for _, f := range mustRender(t, spec.Default()) {
		t.Run(f.Name, func(t *testing.T) {
			first := lines(f.Data)[0]
			switch filepath.Ext(f.Name) {
			case ".go":
				if !codeGenerated.MatchString(first) {
					t.Errorf("first line %q is not the standard generated-code header", first)
				}
				formatted, err := format.Source(f.Data)
				if err != nil {
					t.Fatalf("does not parse: %v", err)
				}
				if !bytes.Equal(formatted, f.Data) {
					t.Errorf("not gofmt'ed (-rendered +gofmt):\n%s", cmp.Diff(lines(f.Data), lines(formatted)))
				}
			case ".md":
				if !strings.HasPrefix(first, "<!-- ") || !codeGenerated.MatchString("// "+strings.TrimSuffix(strings.TrimPrefix(first, "<!-- "), " -->")) {
					t.Errorf("first line %q is not the generated-code header in an HTML comment", first)
				}
			default:
				t.Errorf("unexpected kind of file")
			}
		})
	}
}

// edge is one arrow of a Mermaid state diagram.
type edge struct{ from, to string }

// mermaidBlocks finds, for each "## <policy>" section, its one Mermaid
// stateDiagram-v2 block, and returns the block's arrows with their labels.
func mermaidBlocks(t *testing.T, doc []string) map[string]map[edge][]string {
	t.Helper()
	out := map[string]map[edge][]string{}
	arrow := regexp.MustCompile(`^    (\S+) --> (\S+) : (.+)$`)
	section := ""
	for i := 0; i < len(doc); i++ {
		if s, ok := strings.CutPrefix(doc[i], "## "); ok {
			section = s
			continue
		}
		if doc[i] != "```mermaid" {
			continue
		}
		if _, dup := out[section]; dup {
			t.Fatalf("section %q has two mermaid blocks", section)
		}
		if i+1 >= len(doc) || doc[i+1] != "stateDiagram-v2" {
			t.Fatalf("line %d: mermaid block of %q is not a stateDiagram-v2", i+2, section)
		}
		edges := map[edge][]string{}
		for i += 2; i < len(doc) && doc[i] != "```"; i++ {
			if m := arrow.FindStringSubmatch(doc[i]); m != nil {
				edges[edge{m[1], m[2]}] = strings.Split(m[3], ", ")
			}
		}
		if i == len(doc) {
			t.Fatalf("mermaid block of %q is not closed", section)
		}
		out[section] = edges
	}
	return out
}

// TestRender_DocsListEveryRow checks the reviewable docs against the
// table they are rendered from: one Markdown table line per row, carrying
// its cells and its why, and per policy one Mermaid diagram whose arrows
// are exactly the rows that move or act from a reachable state.
func TestRender_DocsListEveryRow(t *testing.T) {
	s := spec.Default()
	files := mustRender(t, s)
	numbered := regexp.MustCompile(`^\| (\d+) \| `)
	for _, r := range spec.Roles {
		t.Run(r.String(), func(t *testing.T) {
			tb := s.Table(r)
			i := slices.IndexFunc(files, func(f gen.File) bool { return f.Name == r.String()+".md" })
			if i < 0 {
				t.Fatalf("no %s.md rendered", r)
			}
			doc := lines(files[i].Data)

			t.Run("table", func(t *testing.T) {
				var rowLines []string
				for _, l := range doc {
					if numbered.MatchString(l) {
						rowLines = append(rowLines, l)
					}
				}
				if len(rowLines) != len(tb.Rows) {
					t.Errorf("%d numbered table lines, the table has %d rows", len(rowLines), len(tb.Rows))
				}
				for ri, row := range tb.Rows {
					want := fmt.Sprintf("| %d | %s | %s | ", ri+1, strings.Join(row.From, ", "), row.Event)
					var hits []string
					for _, l := range rowLines {
						if strings.HasPrefix(l, fmt.Sprintf("| %d | ", ri+1)) {
							hits = append(hits, l)
						}
					}
					switch {
					case len(hits) != 1:
						t.Errorf("%s: %d table lines, want 1", tb.RowLabel(ri), len(hits))
					case !strings.HasPrefix(hits[0], want) || !strings.HasSuffix(hits[0], " | "+row.Why+" |"):
						t.Errorf("%s: table line %q does not start with %q and end with its why %q", tb.RowLabel(ri), hits[0], want, row.Why)
					}
				}
			})

			blocks := mermaidBlocks(t, doc)
			if len(blocks) != len(spec.Policies) {
				t.Errorf("%d mermaid blocks, want one per policy (%d)", len(blocks), len(spec.Policies))
			}
			for _, p := range spec.Policies {
				t.Run("diagram-"+p.String(), func(t *testing.T) {
					edges, ok := blocks[p.String()]
					if !ok {
						t.Fatalf("no mermaid block under \"## %s\"", p)
					}
					want := map[edge][]string{}
					for _, from := range tb.Reachable(p) {
						for _, ev := range tb.Events {
							ri := tb.Lookup(p, from, ev.Name)
							if ri < 0 || tb.Rows[ri].Ignores() {
								continue
							}
							e := edge{from, tb.Rows[ri].Target(from)}
							want[e] = append(want[e], ev.Name)
						}
					}
					if len(want) == 0 {
						t.Fatal("the table moves nowhere under this policy: nothing to compare")
					}
					if diff := cmp.Diff(want, edges); diff != "" {
						t.Errorf("diagram arrows (-rows +diagram):\n%s", diff)
					}
				})
			}
		})
	}
}

// TestRender_RefusesInvalidSpec checks that Render validates first: a
// defective spec yields the validation error and no files, so go generate
// can never write machines from a broken table.
func TestRender_RefusesInvalidSpec(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*spec.Spec)
		want   string
	}{
		{"row-without-why", func(s *spec.Spec) { s.Source.Rows[0].Why = "" }, "no why"},
		{"unknown-action", func(s *spec.Spec) {
			s.Destination.Rows[0].Actions = append(s.Destination.Rows[0].Actions, "Teleport")
		}, `unknown action "Teleport"`},
		{"unhandled-timer", func(s *spec.Spec) {
			s.Source.Rows = slices.DeleteFunc(s.Source.Rows, func(r spec.Row) bool {
				return r.Event == "LeaseExpired" && r.To == ""
			})
		}, "timer event LeaseExpired is not handled"},
		{"empty-name", func(s *spec.Spec) { s.Name = "" }, "name is empty"},
		// A variant may let a terminal state react; a rendered machine
		// promises that its terminal states take no events.
		{"terminal-row", func(s *spec.Spec) {
			s.Destination.Rows = append(s.Destination.Rows, spec.Row{From: []string{"Done"}, Event: "ClientCancelled",
				Policies: []spec.Policy{spec.SourceFirst}, Actions: []string{"ReportDecodeFailed"}, Why: "a late cancel"})
		}, `from-state "Done" is terminal; a terminal state of the built-in tables takes no events`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := spec.Default().Clone()
			tc.mutate(s)
			files, err := gen.Render(s)
			if err == nil {
				t.Fatal("Render accepted an invalid spec")
			}
			if files != nil {
				t.Errorf("Render returned %d files with its error", len(files))
			}
			if !errors.Is(err, spec.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want spec.ErrInvalid saying %q", err, tc.want)
			}
		})
	}
}
