package cluster

import (
	"testing"

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
