package cluster

import (
	"testing"

	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// The legacy tables pass the checks the lifecycle's tables pass: every
// peer message and timer handled in every live state, every row with a
// why, no (state, event) claimed twice.
func TestLegacy_TablesValidate(t *testing.T) {
	l, err := NewLegacy(LegacySpec())
	if err != nil {
		t.Fatal(err)
	}
	// The path the replay adapter takes, row by row, holds nothing
	// pinned or reserved: no action of the tables does.
	for _, r := range spec.Roles {
		for _, a := range l.Spec().Table(r).Actions {
			switch a.Name {
			case "PinSource", "RegisterSource", "ReserveDestination", "RequestReservation", "RegisterDestination":
				t.Fatalf("the legacy %s table has the lifecycle's action %s", r, a.Name)
			}
		}
	}
	src := []string{LegacyRequestArrived, LegacyDecodeConnected, LegacyAdmitted, LegacyPrefillFinished, LegacyDelayElapsed}
	st := l.Initial(spec.Source)
	for _, ev := range src {
		row, ok := l.Step(spec.Source, st, ev)
		if !ok {
			t.Fatalf("source: no row for %s in %s", ev, st)
		}
		st = row.To
	}
	if st != "Done" || l.Outcome(spec.Source, st) != spec.OutcomeSuccess {
		t.Fatalf("source ends in %s, want Done", st)
	}
	dst := []string{LegacyDecodeRouted, LegacyRoomCompleted, LegacyAdmitted, LegacyDecodeFinished}
	st = l.Initial(spec.Destination)
	for _, ev := range dst {
		row, ok := l.Step(spec.Destination, st, ev)
		if !ok {
			t.Fatalf("destination: no row for %s in %s", ev, st)
		}
		st = row.To
	}
	if !l.Terminal(spec.Destination, st) || st != "Done" {
		t.Fatalf("destination ends in %s, want Done", st)
	}
	// A table missing a row for a peer message is refused, as the
	// lifecycle's would be.
	bad := LegacySpec()
	bad.Destination.Rows = bad.Destination.Rows[1:]
	bad.Destination.Rows = append(bad.Destination.Rows[:1], bad.Destination.Rows[2:]...)
	if _, err := NewLegacy(bad); err == nil {
		t.Fatal("tables with an unhandled peer message were accepted")
	}
}

// The counters' rules for the legacy path: the actions of a request's
// rows, in order, leave its workers as they found them; a second free,
// count-out or end of booking is refused naming the invariant and
// changes nothing.
func TestLegacy_ApplyBalances(t *testing.T) {
	p := model.Worker{Free: 100}
	d := model.Worker{Free: 50}
	var hp, hd LegacyHold
	src := LegacyDemand{Blocks: 8, Prompt: 1000}
	dst := LegacyDemand{Blocks: 8, Prompt: 1000, Slots: 1}
	l, err := NewLegacy(LegacySpec())
	if err != nil {
		t.Fatal(err)
	}
	apply := func(role spec.Role, st *string, ev string, dm LegacyDemand, h *LegacyHold, k *model.Worker) {
		row, ok := l.Step(role, *st, ev)
		if !ok {
			t.Fatalf("%s: no row for %s in %s", role, ev, *st)
		}
		for _, a := range row.Actions {
			if br := ApplyLegacy(role, a, dm, h, k); br != nil {
				t.Fatalf("%s %s: %s: %s", role, a, br.Invariant, br.Detail)
			}
		}
		*st = row.To
	}
	ss, ds := l.Initial(spec.Source), l.Initial(spec.Destination)
	apply(spec.Source, &ss, LegacyRequestArrived, src, &hp, &p)
	apply(spec.Source, &ss, LegacyDecodeConnected, src, &hp, &p)
	apply(spec.Source, &ss, LegacyAdmitted, src, &hp, &p)
	if p.Active != 8 || p.PrefillTokens != 1000 || p.Owned != 1 || p.InFlight != 1 {
		t.Fatalf("computing prefill worker: %+v", p)
	}
	apply(spec.Source, &ss, LegacyPrefillFinished, src, &hp, &p)
	if p != (model.Worker{Free: 100}) || p.Pinned != 0 {
		t.Fatalf("after prefill completion the prefill worker is %+v, want everything freed at once", p)
	}
	LegacyBook(dst, &hd, &d)
	apply(spec.Destination, &ds, LegacyDecodeRouted, dst, &hd, &d)
	apply(spec.Destination, &ds, LegacyRoomCompleted, dst, &hd, &d)
	if d.Active != 0 || d.Reserved != 0 || d.BookedBlocks != 8 {
		t.Fatalf("routed decode worker before admission: %+v, want a booking and no blocks", d)
	}
	if LegacyFits(spec.Destination, LegacyDemand{Blocks: 8, Slots: 0}, &d) {
		t.Fatal("a decode worker without a free slot admits")
	}
	apply(spec.Destination, &ds, LegacyAdmitted, dst, &hd, &d)
	if d.Active != 8 || d.SlotsUsed != 1 {
		t.Fatalf("admitted decode worker: %+v", d)
	}
	apply(spec.Destination, &ds, LegacyDecodeFinished, dst, &hd, &d)
	if d != (model.Worker{Free: 50}) || hd != (LegacyHold{}) || hp != (LegacyHold{}) {
		t.Fatalf("after decode: worker %+v, holdings %+v %+v", d, hd, hp)
	}
	for _, a := range []string{LegacyFreeDecode, LegacyComplete, LegacyReportDecodeDone} {
		before := d
		if br := ApplyLegacy(spec.Destination, a, dst, &hd, &d); br == nil || d != before {
			t.Fatalf("a second %s was taken: %v, worker %+v", a, br, d)
		}
	}
}
