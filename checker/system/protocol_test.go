package system

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/handoffcheck/handoffcheck/machines/interp"
	"github.com/handoffcheck/handoffcheck/spec"
)

// The checker takes either path to a protocol; both must fit its interface.
var _ stepper = (*interp.Interp)(nil)

// Both paths to a protocol, the generated machines and a table interpreter
// (FromStepper) of the same spec, give every cell the same state names,
// transitions and actions.
func TestProtocol_GeneratedAndInterpretedAgree(t *testing.T) {
	def := spec.Default()
	viaInterp := interpreted(t, def)
	viaGen := Generated()
	for _, r := range spec.Roles {
		tb := def.Table(r)
		for _, p := range spec.Policies {
			t.Run(r.String()+"/"+p.String(), func(t *testing.T) {
				enabled := 0
				for si, st := range tb.States {
					if got, want := viaInterp.StateName(r, uint8(si)), viaGen.StateName(r, uint8(si)); got != want {
						t.Errorf("state %d: interp protocol names it %q, generated %q", si, got, want)
					}
					for ei, ev := range tb.Events {
						gt, gok := viaGen.step(r, p, uint8(si), uint8(ei))
						ti, iok := viaInterp.step(r, p, uint8(si), uint8(ei))
						if gok != iok {
							t.Errorf("%s × %s: enabled %t via generated, %t via interp", st.Name, ev.Name, gok, iok)
							continue
						}
						if !gok {
							continue
						}
						enabled++
						if diff := cmp.Diff(*gt, *ti, cmp.AllowUnexported(transition{})); diff != "" {
							t.Errorf("%s × %s (-generated +interp):\n%s", st.Name, ev.Name, diff)
						}
					}
				}
				if enabled == 0 {
					t.Error("no transition is enabled: the comparison proved nothing")
				}
			})
		}
	}
}

// A variant whose terminal state reacts reaches the protocol whole: every
// cell of both roles, terminal states included, answers through
// FromStepper what the interpreter answers, and the reacting cell is
// among them.
func TestProtocol_ReadsTerminalRows(t *testing.T) {
	type outcome struct {
		Enabled bool
		To      string
		Actions []string
		Row     int
	}
	mut := spec.Default().Clone()
	tb := mut.Table(spec.Destination)
	tb.Rows = append(tb.Rows, spec.Row{From: []string{"Done"}, Event: "ClientCancelled", Policies: []spec.Policy{spec.SourceFirst},
		To: "Aborted", Actions: []string{"ReportDecodeFailed", "Complete"}, Why: "a late cancel finalizes again"})
	it, err := interp.New(mut)
	if err != nil {
		t.Fatal(err)
	}
	p, err := FromStepper("variant", mut, it)
	if err != nil {
		t.Fatal(err)
	}
	reacting, cells := 0, 0
	for _, r := range spec.Roles {
		tb := mut.Table(r)
		for _, pol := range spec.Policies {
			for si, st := range tb.States {
				for ei, ev := range tb.Events {
					cells++
					var want outcome
					to, acts, row, err := it.Step(r, pol, st.Name, ev.Name)
					switch {
					case err == nil:
						want = outcome{Enabled: true, To: to, Actions: acts, Row: row}
					case !errors.Is(err, interp.ErrNotEnabled):
						t.Fatalf("Step(%s, %s, %s, %s): %v, want nil or ErrNotEnabled", r, pol, st.Name, ev.Name, err)
					}
					tr, ok := p.step(r, pol, uint8(si), uint8(ei))
					got := outcome{Enabled: ok}
					if ok {
						got.To, got.Row = p.StateName(r, tr.To), int(tr.Row)
						for _, a := range tr.Acts[:tr.N] {
							got.Actions = append(got.Actions, a.String())
						}
						if p.isTerminal(r, uint8(si)) {
							reacting++
						}
					}
					if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
						t.Errorf("%s %s %s × %s (-interp +protocol):\n%s", r, pol, st.Name, ev.Name, diff)
					}
				}
			}
		}
	}
	if cells == 0 {
		t.Fatal("no cell asked")
	}
	if reacting != 1 {
		t.Errorf("%d terminal cells react in the protocol, want the one row's", reacting)
	}
}
