package system

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/machines"
	"github.com/handoffcheck/handoffcheck/machines/interp"
	"github.com/handoffcheck/handoffcheck/spec"
)

// The generated machines and the default spec know the same states and
// events by name: the protocol matches them by name, so their order may
// differ, but a name missing on either side is a stale generation.
func TestVocabulary_MachinesMatchTheDefaultSpecByName(t *testing.T) {
	def := spec.Default()
	for _, r := range spec.Roles {
		tb := def.Table(r)
		var specStates, machineStates, specEvents, machineEvents []string
		for _, st := range tb.States {
			specStates = append(specStates, st.Name)
		}
		for _, ev := range tb.Events {
			specEvents = append(specEvents, ev.Name)
			if eventID(r, ev.Name) < 0 {
				t.Errorf("%s event %s has no id", r, ev.Name)
			}
		}
		for e := 0; e < numEvents[r]; e++ {
			machineEvents = append(machineEvents, EventName(r, uint8(e)))
		}
		if r == spec.Source {
			for s := 0; s < machines.NumSourceStates; s++ {
				machineStates = append(machineStates, machines.SourceState(s).String())
			}
		} else {
			for s := 0; s < machines.NumDestinationStates; s++ {
				machineStates = append(machineStates, machines.DestinationState(s).String())
			}
		}
		for _, pair := range [][2][]string{{specStates, machineStates}, {specEvents, machineEvents}} {
			a, b := slices.Sorted(slices.Values(pair[0])), slices.Sorted(slices.Values(pair[1]))
			if !slices.Equal(a, b) {
				t.Errorf("%s: the default spec knows %v, the generated machines %v", r, a, b)
			}
		}
		for _, a := range tb.Actions {
			id := roleActionID(r, a.Name)
			if id < 0 || action(id).String() != a.Name {
				t.Errorf("%s action %s resolves to %d", r, a.Name, id)
			}
		}
	}
	for _, pol := range spec.Policies {
		if machinePolicy(pol).String() != pol.String() {
			t.Errorf("policy %s maps to %s", pol, machinePolicy(pol))
		}
	}
}

// The generated machines and the interpreter of the same spec, each mapped
// into the protocol by name, give the same protocol.
func TestVocabulary_GeneratedEqualsInterpreted(t *testing.T) {
	it, err := interp.New(spec.Default())
	if err != nil {
		t.Fatal(err)
	}
	ip, err := FromStepper("interpreted", spec.Default(), it)
	if err != nil {
		t.Fatal(err)
	}
	gp := Generated()
	for _, r := range spec.Roles {
		for _, pol := range spec.Policies {
			for st := range gp.tables[r][pol] {
				for ev := range gp.tables[r][pol][st] {
					if g, i := gp.tables[r][pol][st][ev], ip.tables[r][pol][st][ev]; g != i {
						t.Errorf("%s %s %s × %s: generated %+v, interpreted %+v", r, pol, gp.StateName(r, uint8(st)), EventName(r, uint8(ev)), g, i)
					}
				}
			}
		}
	}
}

// checkVocabulary names each thing the model cannot run, one per line: a
// table with more states than four bits hold, an event whose origin
// differs from the model's, and it accepts the largest table that fits.
func TestCheckVocabulary_NamesEachProblem(t *testing.T) {
	grow := func(n int) *spec.Spec {
		s := spec.Default()
		tb := s.Table(spec.Destination)
		for i := len(tb.States); i < n; i++ {
			tb.States = append(tb.States, spec.State{Name: fmt.Sprintf("Extra%d", i)})
		}
		return s
	}
	if err := checkVocabulary(grow(maxStates)); err != nil {
		t.Errorf("a table of %d states is refused: %v", maxStates, err)
	}
	s := grow(maxStates + 1)
	ev := &s.Table(spec.Source).Events[0]
	want := spec.Peer
	if ev.Origin == spec.Peer {
		want = spec.Timer
	}
	ev.Origin = want
	err := checkVocabulary(s)
	if err == nil {
		t.Fatal("a table of 17 states with a wrong origin is accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 3 || lines[1] != fmt.Sprintf("  source event %q has origin %s, the model gives it origin %s", ev.Name, want, spec.Default().Source.Events[0].Origin) ||
		lines[2] != fmt.Sprintf("  destination table has %d states, at most %d are supported", maxStates+1, maxStates) {
		t.Errorf("want a heading and one indented line per problem, got:\n%s", err)
	}
}
