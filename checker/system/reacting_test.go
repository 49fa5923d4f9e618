package system

import (
	"testing"

	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// withRow is the default spec with one row added.
func withRow(t *testing.T, r spec.Role, row spec.Row) *spec.Spec {
	t.Helper()
	s := spec.Default()
	tb := s.Table(r)
	tb.Rows = append(tb.Rows, row)
	if err := s.ValidateVariant(); err != nil {
		t.Fatal(err)
	}
	return s
}

// A terminal record fires the rows its state has, and stays finished for
// everything that asks whether its side is done. Here a destination that
// decoded (Done) takes the late cancel on its request stream: the row
// fires, the record leaves Done for Aborted, and ExactlyOnceRelease judges
// the second report.
func TestReacting_TerminalRowFires(t *testing.T) {
	s := withRow(t, spec.Destination, spec.Row{From: []string{"Done"}, Event: "ClientCancelled", Policies: []spec.Policy{spec.SourceFirst},
		To: "Aborted", Actions: []string{"ReportDecodeFailed", "Complete"}, Why: "a late cancel finalizes again"})
	c := checkerFor(t, interpreted(t, s), mustConfig(t, smallConfig), "vllm")
	done := uint8(c.proto.stateIndex(spec.Destination, "Done"))
	before := findState(t, c, func(s *State) bool {
		return s.Dst[0] == done && s.W.H[0].CancelPending[model.DestinationSide]
	})
	if !c.terminal(&before, spec.Destination, 0) || c.finished(&before, 0) {
		t.Fatalf("want a finished destination of an unfinished handoff:\n%v", c.DescribeState(&before))
	}
	after := before
	var log []Firing
	_, v, err := c.Step(&after, Move{Kind: mvDeliverCancel, H: 0, Arg: int8(model.DestinationSide)}, &Coverage{Rows: newCoverage(s).Rows, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 1 || log[0].Row != len(s.Destination.Rows) || c.proto.StateName(spec.Destination, after.Dst[0]) != "Aborted" {
		t.Fatalf("fired %+v, now %s; want the added row, to Aborted", log, c.proto.StateName(spec.Destination, after.Dst[0]))
	}
	if v == nil || v.Invariant != model.NameExactlyOnceRelease {
		t.Fatalf("violation %v, want ExactlyOnceRelease", v)
	}
}

// A duplicate to a terminal record is offered only where its state has a
// row for the fact: elsewhere it would be a delivery that changes
// nothing. Where it reacts, the stale fact that moves a role machine is
// AttemptIsolation's.
func TestReacting_DuplicateOnlyWhereTheRecordReacts(t *testing.T) {
	cfg := mustConfig(t, smallConfig)
	want := func(c *System) State {
		done := uint8(c.proto.stateIndex(spec.Destination, "Done"))
		return findState(t, c, func(s *State) bool {
			return s.Dst[0] == done && s.W.H[0].Ch[model.DestinationSide].Has(model.MsgCancelled) && s.B.has(duplicate)
		})
	}
	dup := Move{Kind: duplicate.Move(), H: 0, Arg: int8(model.DestinationSide), Msg: model.MsgCancelled}
	offered := func(c *System, s State) bool {
		for _, m := range c.MovesInto(&s, nil) {
			if m == dup {
				return true
			}
		}
		return false
	}
	builtin := checkerFor(t, Generated(), cfg, "vllm")
	if offered(builtin, want(builtin)) {
		t.Error("a duplicate is offered to a Done destination that has no row for it")
	}
	s := withRow(t, spec.Destination, spec.Row{From: []string{"Done"}, Event: "Cancelled", Policies: []spec.Policy{spec.SourceFirst},
		To: "Aborted", Why: "a failure notice overrides success"})
	c := checkerFor(t, interpreted(t, s), cfg, "vllm")
	st := want(c)
	if !offered(c, st) {
		t.Fatal("a duplicate is not offered to a Done destination that reacts to it")
	}
	_, v, err := c.Step(&st, dup, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v == nil || v.Invariant != model.NameAttemptIsolation || v.Check != "a stale fact changed a role machine" {
		t.Fatalf("violation %v, want AttemptIsolation: a stale fact changed a role machine", v)
	}
}
