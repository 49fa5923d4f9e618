package cluster

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// Noting a step's triggers allocates nothing, whether they fire first or
// again, in time order or not.
func TestExercise_NoteAllocatesNothing(t *testing.T) {
	var e Exercise
	e.Unordered = true
	at := int64(1000)
	allocs := testing.AllocsPerRun(100, func() {
		e.Note(model.KindFired(model.EffActivate)|model.BeganFired(model.ResDestReservation), at, 3)
		e.Note(model.TrigStaleDelivery, -1, 4)
		at--
	})
	if allocs != 0 {
		t.Fatalf("Note allocates %.0f times a call, want none", allocs)
	}
}

// The first place a trigger fired is the earliest time noted (ties: the
// first noted); in a driver that notes in time order, the first noted.
func TestExercise_FirstIsTheEarliest(t *testing.T) {
	act := model.KindFired(model.EffActivate)
	name := func(i int) string { return fmt.Sprintf("s%d", i) }
	cfg := &model.Config{Policy: spec.SourceFirst, Engine: model.VLLM}
	for _, c := range []struct {
		unordered bool
		want      Exercised
	}{{false, Exercised{AtUS: 50, Subject: "s1"}}, {true, Exercised{AtUS: 20, Subject: "s2"}}} {
		e := Exercise{Unordered: c.unordered}
		e.Note(act, 50, 1)
		e.Note(act, 20, 2)
		e.Note(act, 20, 3)
		e.Note(act, -1, 4)
		r := e.Report([]string{model.NameNoActivationFromInvalidKv}, cfg, "", name)
		if x := r.Invariants[0]; !x.Exercised || x.First == nil || *x.First != c.want {
			t.Errorf("unordered %v: %+v, want first %+v", c.unordered, x, c.want)
		}
	}
}

// A report counts the unconditional invariants and the violated one as
// exercised, says why of one never exercised (and that a configuration
// leaves one nothing to judge), and its text lists by name only those
// never exercised, saying a run proves nothing of the others.
func TestExercise_Report(t *testing.T) {
	var e Exercise
	e.Note(model.KindFired(model.EffTransferStart), 10, 0)
	cfg := &model.Config{Policy: spec.SourceFirst, Engine: model.VLLM}
	names := []string{model.NameTransferNeedsReservation, model.NameFailedTransferNeverActivates, model.NameCapacityRespected,
		model.NameDestinationFirstGate, model.NameAttemptIsolation, "SomeProperty"}
	r := e.Report(names, cfg, model.NameAttemptIsolation, func(i int) string { return fmt.Sprintf("request %d", i) })
	if len(r.Invariants) != 5 || r.Exercised != 3 || !r.Stopped {
		t.Fatalf("report %+v: want 5 invariants (a name not built in left out), 3 exercised, stopped", r)
	}
	want := map[string]string{
		model.NameFailedTransferNeverActivates: "no side acted on a failed transfer",
		model.NameDestinationFirstGate:         "the policy is not destination-first",
	}
	for _, x := range r.Invariants {
		if x.Why != want[x.Invariant] || x.Exercised != (want[x.Invariant] == "") {
			t.Errorf("%+v: want why %q", x, want[x.Invariant])
		}
	}
	var b bytes.Buffer
	r.WriteText(&b, "")
	text := b.String()
	for _, s := range []string{"3 of 5 exercised in this run up to its violation", "never exercised in this run (2): FailedTransferNeverActivates, DestinationFirstGate\n", "no proof for every run"} {
		if !strings.Contains(text, s) {
			t.Errorf("text lacks %q:\n%s", s, text)
		}
	}
	if strings.Contains(text, model.NameTransferNeedsReservation) {
		t.Errorf("text names an exercised invariant:\n%s", text)
	}
}

// The stepper's triggers are those of the move it took last: a
// fault-free request's steps start a transfer and activate, and a move
// the state does not enable fires nothing.
func TestStepper_Fired(t *testing.T) {
	cfg := DefaultConfig()
	chk, err := cfg.Checker(system.Generated())
	if err != nil {
		t.Fatal(err)
	}
	wc := cfg.AttemptWorld(1024, 0)
	if err := wc.Prepare(); err != nil {
		t.Fatal(err)
	}
	st := NewStepper(chk, system.NewCoverage(system.Generated().Spec()))
	s := st.Initial(wc)
	var all model.Triggers
	refused := false
	for range 60 {
		var m system.Move
		found := false
		for _, x := range st.Moves(&s, nil) {
			if _, fault := x.Kind.Spends(); !fault {
				m, found = x, true
				break
			}
		}
		if !found {
			break
		}
		if _, ok := st.Step(&s, m); !ok {
			t.Fatalf("%s refused", m)
		}
		all |= st.Fired()
		if !refused && st.Fired() != 0 {
			// A transfer's end, where none runs, is not enabled.
			if _, ok := st.Step(&s, system.Move{Kind: system.MvTransfer, H: 0}); !ok {
				refused = true
				if st.Fired() != 0 {
					t.Fatalf("a refused move fired %b", st.Fired())
				}
			}
		}
	}
	if !refused {
		t.Fatal("no state along the run refused a transfer's end")
	}
	if all&model.KindFired(model.EffTransferStart) == 0 || all&model.KindFired(model.EffActivate) == 0 {
		t.Fatalf("a fault-free request's steps fired %b: no transfer start or activation", all)
	}
}
