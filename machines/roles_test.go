package machines_test

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// TestMachines_RoleMixUpDoesNotCompile proves the claim of doc.go that
// source and destination states, events and actions
// are distinct types: each snippet hands one role's value to the other
// role and must be refused by the type checker, naming both types. The
// well-typed snippet must type-check, so a broken harness (an importer that
// cannot find the package, say) fails the test instead of passing it.
func TestMachines_RoleMixUpDoesNotCompile(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go tool is not on PATH; the source importer needs it to resolve the module")
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	// One importer for every case: it caches the packages it has checked.
	imp := importer.ForCompiler(fset, "source", nil)

	typecheck := func(t *testing.T, body string) error {
		t.Helper()
		src := "package snippet\n\nimport \"github.com/handoffcheck/handoffcheck/machines\"\n\nfunc _() {\n" + body + "\n}\n"
		// The file is named inside this package's directory so that the
		// importer resolves the import in this module, as the go tool would.
		f, err := parser.ParseFile(fset, filepath.Join(dir, "snippet.go"), src, 0)
		if err != nil {
			t.Fatalf("snippet does not parse: %v\n%s", err, src)
		}
		conf := types.Config{Importer: imp}
		_, err = conf.Check("snippet", fset, []*ast.File{f}, nil)
		return err
	}

	t.Run("same-role", func(t *testing.T) {
		body := `	s, acts, err := machines.SourceStateIdle.Step(machines.SourceFirst, machines.SourceEventRequestArrived)
	var a machines.SourceAction = acts.At(0)
	d, _ := machines.DestinationStateIdle.Transition(machines.DestinationFirst, machines.DestinationEventDestinationRouted)
	var da machines.DestinationAction = d.Actions.At(0)
	_, _, _, _ = s, err, a, da`
		if err := typecheck(t, body); err != nil {
			t.Fatalf("a well-typed snippet does not type-check, so the harness is broken: %v", err)
		}
	})

	cases := []struct {
		name string
		body string
		want []string // the types the error must name
	}{
		{
			name: "destination-event-to-source",
			body: `	_, _, _ = machines.SourceStateIdle.Step(machines.SourceFirst, machines.DestinationEventDestinationRouted)`,
			want: []string{"machines.DestinationEvent", "machines.SourceEvent"},
		},
		{
			name: "source-event-to-destination",
			body: `	_, _ = machines.DestinationStateReserving.Transition(machines.DestinationFirst, machines.SourceEventDestinationReserved)`,
			want: []string{"machines.SourceEvent", "machines.DestinationEvent"},
		},
		{
			name: "destination-state-as-source",
			body: `	var s machines.SourceState = machines.DestinationStateIdle
	_ = s`,
			want: []string{"machines.DestinationState", "machines.SourceState"},
		},
		{
			name: "source-action-as-destination",
			body: `	var a machines.DestinationAction = machines.SourceActionComplete
	_ = a`,
			want: []string{"machines.SourceAction", "machines.DestinationAction"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := typecheck(t, tc.body)
			if err == nil {
				t.Fatalf("a role mix-up type-checks:\n%s", tc.body)
			}
			t.Logf("type error: %v", err)
			for _, w := range tc.want {
				// Whole words: the constant's own name, say
				// DestinationEventDestinationRouted, must not count as
				// mentioning the type DestinationEvent.
				if !regexp.MustCompile(`\b` + regexp.QuoteMeta(w) + `\b`).MatchString(err.Error()) {
					t.Errorf("type error %q does not mention the type %s", err, w)
				}
			}
		})
	}
}
