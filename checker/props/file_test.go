package props

import (
	"fmt"
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
		{"handoffcheck.props/v1\nnever A: true", "f:2:1: unknown kind \"never\"; want always, sometimes or leads_to"},
		{"handoffcheck.props/v1\n  eventually A: true", "f:2:3: unknown kind \"eventually\""},
		{"handoffcheck.props/v1\nalways 9A: true", "f:2:8: want a property name"},
		{"handoffcheck.props/v1\nalways A true", "f:2:10: unexpected \"true\"; want ':' or 'per handoff'"},
		{"handoffcheck.props/v1\nalways A per worker: true", "f:2:14: want 'handoff' after 'per'"},
		{"handoffcheck.props/v1\nalways A:", "f:2:10: want an expression after ':'"},
		{"handoffcheck.props/v1\nalways A: true\nsometimes  A: false", "f:3:12: duplicate property name \"A\" (first at line 2)"},
		{"handoffcheck.props/v1\nleads_to A: true", "f:2:13: want 'P ~> Q' after ':'"},
		{"handoffcheck.props/v1\nleads_to A:  ~> true", "f:2:14: want the expression P before '~>'"},
		{"handoffcheck.props/v1\nleads_to A: true ~>  ", "f:2:20: want the expression Q after '~>'"},
		{"handoffcheck.props/v1\nleads_to A: true ~> false ~> true", "f:2:27: one '~>' per property"},
		{"handoffcheck.props/v1\nleads_to A: true ~> false within", "f:2:33: want a duration after within"},
		{"handoffcheck.props/v1\nleads_to A: true ~> false within  2 leases", "f:2:35: within \"2 leases\": want a duration (250ms, 2s)"},
		{"handoffcheck.props/v1\nleads_to A: true ~> false within -1s", "f:2:34: within -1s: want a positive duration"},
		{"handoffcheck.props/v1\nleads_to A per handoff: h.cancelled ~> h.pinned", "f:2:41: undefined field 'pinned'"},
		{"handoffcheck.props/v1\nleads_to A: true ~> size(workers)", "f:2:21: want a bool expression after '~>'; this one is int"},
		{"handoffcheck.props/v1\nalways A: h.cancelled ~> h.source_terminal", "f:2:23: '~>' belongs to a leads_to property"},
		{"handoffcheck.props/v1\nwithin A: true", "f:2:1: within is no kind"},
		{"handoffcheck.props/v1\nalways A per handoff: h.pinned within 2", "f:2:32: within bounds a leads_to property"},
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
	f.Add([]byte("handoffcheck.props/v1\nleads_to A per handoff: h.cancelled ~> h.source_terminal within 20ms\n"))
	f.Add([]byte("handoffcheck.props/v1\nleads_to A: '~>' == \"within\" ~> true\n"))
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

// A leads_to property is read with its P, its Q and its bound at their
// columns, whatever the strings inside them hold.
func TestLoad_LeadsTo(t *testing.T) {
	src := "handoffcheck.props/v1\n" +
		"# Does every cancel free the source?\n" +
		"leads_to Freed per handoff: h.cancelled ~> h.source_hold == \"none\"\n" +
		"leads_to Quick: handoffs.exists(x, x.source == \"~>within\") ~>   true within 250ms\n"
	set, err := Load("f", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	a, b := set.Props[0], set.Props[1]
	if a.Kind != LeadsTo || !a.PerHandoff || a.Expr != "h.cancelled" || a.Then != `h.source_hold == "none"` || a.Within != 0 ||
		a.ExprCol != 29 || a.ThenCol != 44 || a.Question != "Does every cancel free the source?" || a.Antecedent() != "h.cancelled" {
		t.Errorf("first read as %+v", a.Decl)
	}
	if b.Kind != LeadsTo || b.PerHandoff || b.Expr != `handoffs.exists(x, x.source == "~>within")` || b.Then != "true" ||
		b.Within.String() != "250ms" || b.ThenCol != 65 || b.WithinCol != 77 {
		t.Errorf("second read as %+v", b.Decl)
	}
	for _, tc := range []struct {
		driver string
		can    Can
		want   string
	}{
		{"check", CanLeadsTo, "f:4:77: leads_to Quick within 250ms: check has no clock"},
		{"simulate", Timed, "f:3:1: leads_to Freed without within is judged under weak fairness over every run, which simulate does not do; want check"},
		{"simulate", Timed | CanLeadsTo, "f:4:77: leads_to Quick within 250ms: simulate does not judge it yet"},
		{"simulate", Timed | CanLeadsTo | CanWithin, ""},
	} {
		err := set.Refuse(tc.driver, tc.can)
		if got := fmt.Sprint(err); tc.want == "" && err != nil || tc.want != "" && !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s %b: got %v, want %q", tc.driver, tc.can, err, tc.want)
		}
	}
}
