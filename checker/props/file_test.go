package props

import (
	"strings"
	"testing"
)

const good = `handoffcheck.props/v1
# Is a reservation ever withdrawn after its KV activated?
always NoWithdrawAfterActivation per handoff: !h.activated || h.life.destination_reservation != "ended" || h.destination_hold == "none"

# Can both sides finish?
sometimes BothOK: handoffs.exists(x, x.source_outcome == "ok" && x.destination_outcome == "ok")
always PinnedWithinCapacity: workers.all(w, w.pinned <= w.pinned + w.free)
`

func TestLoad_Good(t *testing.T) {
	set, err := Load("good.props", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Props) != 3 {
		t.Fatalf("got %d properties, want 3", len(set.Props))
	}
	p := set.Props[0]
	if p.Kind != Always || !p.PerHandoff || p.Name != "NoWithdrawAfterActivation" || p.Question != "Is a reservation ever withdrawn after its KV activated?" {
		t.Errorf("first property read as %+v", p.Decl)
	}
	if p.Antecedent() != "h.activated" {
		t.Errorf("antecedent %q, want h.activated", p.Antecedent())
	}
	if set.Props[1].Kind != Sometimes || set.Props[1].PerHandoff || set.Props[1].Antecedent() != "" {
		t.Errorf("second property read as %+v", set.Props[1].Decl)
	}
}

// Every bad file is refused at the position of its first problem, with
// what was expected.
func TestLoad_Errors(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"", "f:1:1: want the first line \"handoffcheck.props/v1\""},
		{"handoffcheck.props/v2\nalways A: true", "f:1:1: want the first line"},
		{"handoffcheck.props/v1\n# only a comment\n", "f:3:1: no property"},
		{"handoffcheck.props/v1\nnever A: true", "f:2:1: unknown kind \"never\"; want always or sometimes"},
		{"handoffcheck.props/v1\n  eventually A: true", "f:2:3: unknown kind \"eventually\""},
		{"handoffcheck.props/v1\nalways 9A: true", "f:2:8: want a property name"},
		{"handoffcheck.props/v1\nalways A true", "f:2:10: unexpected \"true\"; want ':' or 'per handoff'"},
		{"handoffcheck.props/v1\nalways A per worker: true", "f:2:14: want 'handoff' after 'per'"},
		{"handoffcheck.props/v1\nalways A:", "f:2:10: want an expression after ':'"},
		{"handoffcheck.props/v1\nalways A: true\nsometimes  A: false", "f:3:12: duplicate property name \"A\" (first at line 2)"},
		{"handoffcheck.props/v1\nleads_to A: true", "f:2:1: leads_to (P leads to Q under weak fairness) is not supported yet by this driver"},
		{"handoffcheck.props/v1\nalways A: h.cancelled leads_to h.source_terminal", "f:2:23: leads_to (P leads to Q under weak fairness) is not supported yet by this driver"},
		{"handoffcheck.props/v1\nalways A per handoff: h.pinned within 2", "f:2:32: within (P leads to Q within a time on the clock) is not supported yet"},
		{"handoffcheck.props/v1\nalways A: handoffs.all(x, x.pinned)", "f:2:28: undefined field 'pinned'; want a field of view/v1"},
		{"handoffcheck.props/v1\nalways A: h.cancelled", "f:2:11: undeclared reference to 'h'"},
		{"handoffcheck.props/v1\nalways A: size(workers)", "f:2:11: want a bool expression; this one is int"},
		{"handoffcheck.props/v1\nalways A: workers[0].free == \"x\"", "f:2:27: found no matching overload"},
		{"handoffcheck.props/v1\nalways A: (true", "f:2:16: Syntax error"},
	} {
		_, err := Load("f", []byte(tc.file))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %s...", tc.file, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error on more than one line: %q", tc.file, err)
		}
	}
}

// FuzzParse: any file is either read or refused with one line at a
// position, never a panic; and a file read compiles or is refused the
// same way.
func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte("handoffcheck.props/v1\nalways A per handoff: h.cancelled ? h.source_terminal : true\n"))
	f.Add([]byte("handoffcheck.props/v1\nleads_to A: true\n"))
	f.Add([]byte("handoffcheck.props/v1\nalways A: 'leads_to' == \"within\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		decls, err := Parse("f", data)
		if err != nil {
			if _, ok := err.(*Error); !ok || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q is not one positioned line", err)
			}
			return
		}
		if len(decls) == 0 {
			t.Fatal("a file read has no property")
		}
		if _, err := Compile("f", decls); err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("compile error %q is not positioned", err)
			}
		}
	})
}
