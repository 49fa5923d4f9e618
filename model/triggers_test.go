package model

import (
	"math/bits"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/spec"
)

// Every invariant has a trigger, or says why it judges unconditionally:
// adding an invariant means saying what exercises it.
func TestTriggers_EveryInvariantHasOne(t *testing.T) {
	for i := range Invariants {
		inv := &Invariants[i]
		tr := &inv.Trigger
		switch {
		case tr.Unconditional != "" && (tr.Fires != 0 || tr.Never != "" || tr.Inapplicable != nil):
			t.Errorf("%s is unconditional but has a trigger too", inv.Name)
		case tr.Unconditional == "" && (tr.Fires == 0 || tr.Never == ""):
			t.Errorf("%s has no trigger (Fires and Never), and does not say why it is unconditional", inv.Name)
		}
		if !tr.wellFormed() {
			t.Errorf("%s: trigger not well formed", inv.Name)
		}
	}
	if got := bits.TrailingZeros64(uint64(trigEnd)); got != trigBits {
		t.Errorf("the triggers use %d bits, trigBits says %d", got, trigBits)
	}
}

// A violation hardly happens without its invariant's trigger: every
// history built to break an invariant fired the trigger by the step that
// broke it, but where the antecedent holding is itself the violation (the
// checker counts a violated invariant exercised).
func TestTriggers_EveryFiringHistoryFiresItsTrigger(t *testing.T) {
	atOnce := map[string]string{
		// Advertising a source's blocks that no pin holds is the
		// violation; without one, the index advertises only after a pin
		// or a Stored, which fire the trigger.
		NameIndexMatchesCache: NameIndexMatchesCache,
	}
	for _, decodeFirst := range []bool{false, true} {
		for _, tc := range firings(decodeFirst) {
			h := tc.run(t)
			for _, v := range []verdict{tc.step, tc.state} {
				if v.Invariant == "" || atOnce[tc.name] == v.Invariant {
					continue
				}
				inv, _ := LookupInvariant(v.Invariant)
				if ok, why := inv.Exercised(h.fired, h.w.cfg); !ok {
					t.Errorf("%s: %s broken, yet not exercised (%s)", tc.name, v.Invariant, why)
				}
			}
		}
	}
}

// The allowed neighbour of a history that breaks an invariant exercises
// that invariant: the antecedent held and the consequent too, so the
// trigger fired. Destination-first's gate under source-first is the
// exception that proves it: nothing there for it to judge.
func TestTriggers_AllowedNeighboursExerciseTheirInvariant(t *testing.T) {
	for _, order := range orders {
		for _, tc := range allowedNeighbours() {
			name, _, _ := strings.Cut(tc.name, "/")
			inv, ok := LookupInvariant(name)
			if !ok {
				continue
			}
			h := newHistory(t, tc.cfg(t, order.decodeFirst))
			h.clean(tc.steps...)
			ok, why := inv.Exercised(h.fired, h.w.cfg)
			if want := tc.name != "DestinationFirstGate/source-first"; ok != want {
				t.Errorf("%s/%s: exercised %v (%s), want %v", order.name, tc.name, ok, why, want)
			}
		}
	}
}

func TestTriggers_Fired(t *testing.T) {
	var j Journal
	j.add(Effect{Kind: EffBegin, Res: ResDestReservation})
	j.add(Effect{Kind: EffEnd, Res: ResDecodeBooking})
	j.add(Effect{Kind: EffPinEnd, Xfer: XferFailed})
	want := KindFired(EffBegin) | KindFired(EffEnd) | KindFired(EffPinEnd) | BeganFired(ResDestReservation) | EndedFired(ResDecodeBooking) | TrigFailedTransfer
	if got := j.Fired(); got != want {
		t.Errorf("Fired() = %#x, want %#x", got, want)
	}
	if (&Journal{}).Fired() != 0 {
		t.Error("an empty journal fired something")
	}
	// Beginning a resource is not ending it, nor another resource.
	j = Journal{}
	j.add(Effect{Kind: EffBegin, Res: ResCompute})
	if f := j.Fired(); f&(EndedFired(ResCompute)|BeganFired(ResDestReservation)) != 0 {
		t.Errorf("Fired() = %#x mixes resources or begin and end", f)
	}
}

func TestTriggers_Exercised(t *testing.T) {
	sf := testConfig(t, spec.SourceFirst, VLLM, 1, 2)
	df := testConfig(t, spec.DestinationFirst, SGLang, 1, 2)
	gate, _ := LookupInvariant(NameDestinationFirstGate)
	if ok, why := gate.Exercised(KindFired(EffPrefillStart), sf); ok || why != "the policy is not destination-first" {
		t.Errorf("DestinationFirstGate under source-first: %v %q", ok, why)
	}
	if ok, _ := gate.Exercised(KindFired(EffPrefillStart), df); !ok {
		t.Error("DestinationFirstGate not exercised by a prefill dispatched under destination-first")
	}
	if ok, why := gate.Exercised(KindFired(EffActivate), df); ok || why != "no prefill dispatched" {
		t.Errorf("DestinationFirstGate without a prefill: %v %q", ok, why)
	}
	capa, _ := LookupInvariant(NameCapacityRespected)
	if ok, why := capa.Exercised(0, sf); !ok || why != "" {
		t.Errorf("an unconditional invariant was not exercised: %q", why)
	}
}
