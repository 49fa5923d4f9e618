package system

import (
	"fmt"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// The deferred step is offered exactly where the record's state has a row
// for Deferred: never by the built-in tables, and in a variant whose
// Reserving destination queues a heartbeat, in every reachable state
// with the destination in Reserving and in no other. Taking it fires the
// row.
func TestDeferred_OfferedWhereTheStateHasARow(t *testing.T) {
	cfg := mustConfig(t, smallConfig)
	count := func(c *System, s *State) (src, dst int) {
		for _, m := range c.MovesInto(s, nil) {
			if m.Kind == mvDeferred && model.Side(m.Arg) == model.SourceSide {
				src++
			} else if m.Kind == mvDeferred {
				dst++
			}
		}
		return
	}
	builtin := checkerFor(t, Generated(), cfg, "vllm")
	eachState(t, builtin, func(s *State) bool {
		if a, b := count(builtin, s); a+b > 0 {
			t.Fatalf("the built-in tables offer a deferred step:\n%s", strings.Join(builtin.DescribeState(s), "\n"))
		}
		return false
	})

	s := withRow(t, spec.Destination, spec.Row{From: []string{"Reserving"}, Event: "Deferred", Policies: []spec.Policy{spec.SourceFirst},
		Actions: []string{"SendLeaseRenewed"}, Why: "a heartbeat queued while decode waits"})
	c := checkerFor(t, interpreted(t, s), cfg, "vllm")
	reserving := uint8(c.proto.stateIndex(spec.Destination, "Reserving"))
	seen := 0
	eachState(t, c, func(st *State) bool {
		src, dst := count(c, st)
		in := st.W.H[0].Decode >= 0 && st.Dst[0] == reserving
		if src != 0 || (dst == 1) != in || dst > 1 {
			t.Fatalf("%d source and %d destination deferred steps offered, destination in Reserving: %v\n%s", src, dst, in, strings.Join(c.DescribeState(st), "\n"))
		}
		if in {
			seen++
			next := *st
			var log []Firing
			m := Move{Kind: mvDeferred, H: 0, Arg: int8(model.DestinationSide)}
			if _, v, err := c.Step(&next, m, &Coverage{Rows: newCoverage(s).Rows, Log: &log}); err != nil || v != nil {
				t.Fatalf("%s: %v, %v", m, err, v)
			}
			if len(log) != 1 || log[0].Row != len(s.Destination.Rows) || !next.W.H[0].Ch[model.SourceSide].Has(model.MsgLeaseRenewed) {
				t.Fatalf("%s fired %+v", m, log)
			}
		}
		return false
	})
	if seen == 0 {
		t.Fatal("no reachable state has the destination in Reserving")
	}
}

// A spec file written before Deferred joined the vocabulary declares no
// such event: the checker takes it, and only an event of spec.LaterEvents
// may be missing.
func TestCheckVocabulary_LaterEventsMayBeAbsent(t *testing.T) {
	drop := func(r spec.Role, name string) *spec.Spec {
		s := spec.Default()
		tb := s.Table(r)
		tb.Events = append(tb.Events[:tb.EventIndex(name)], tb.Events[tb.EventIndex(name)+1:]...)
		return s
	}
	s := drop(spec.Source, "Deferred")
	s.Destination = drop(spec.Destination, "Deferred").Destination
	if err := checkVocabulary(s); err != nil {
		t.Fatalf("a spec without Deferred is refused: %v", err)
	}
	p := interpreted(t, s)
	for _, r := range spec.Roles {
		for _, pol := range spec.Policies {
			for st := range p.tables[r][pol] {
				if _, ok := p.step(r, pol, uint8(st), deferredEvent(sideOf(r))); ok {
					t.Errorf("%s %s: Deferred fires without being declared", r, p.StateName(r, uint8(st)))
				}
			}
		}
	}
	err := checkVocabulary(drop(spec.Destination, "LocalAbort"))
	want := fmt.Sprintf("  destination table does not declare event %q, which the model knows (only an event added to the vocabulary later may be left out)", "LocalAbort")
	if err == nil || !strings.Contains(err.Error(), "\n"+want) {
		t.Errorf("a spec without LocalAbort: %v, want %q", err, want)
	}
	twice := spec.Default()
	twice.Source.Events = append(twice.Source.Events, twice.Source.Events[0])
	if err := checkVocabulary(twice); err == nil || !strings.Contains(err.Error(), `source table declares event "RequestArrived" 2 times`) {
		t.Errorf("a spec declaring RequestArrived twice: %v", err)
	}
}
