package system

import (
	"fmt"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/model"
)

// Every engine of model.Engines is named in configurations and reports by
// its table name, and an unknown name is refused with every known one.
func TestEngines_Names(t *testing.T) {
	for e := model.Engine(0); e < model.NumEngines; e++ {
		name := model.Engines[e].Name
		js := strings.Replace(fmt.Sprintf(faultsConfig, ""), `"engine": "vllm"`, fmt.Sprintf(`"engine": %q`, name), 1)
		cfg := mustConfig(t, js)
		if cfg.Runs[0].Engine != e || e.String() != name {
			t.Errorf("engine %q parses to %v", name, cfg.Runs[0].Engine)
		}
	}
	_, err := model.ParseEngine("tgi")
	for _, name := range model.EngineNames() {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("an unknown engine was refused without naming %q: %v", name, err)
		}
	}
}

// The reservation moves follow the engine's traits, not its name: an
// engine that can reserve is offered reservations and never refuses, one
// that cannot only refuses.
func TestEngines_ReservationMovesFollowTraits(t *testing.T) {
	for e := model.Engine(0); e < model.NumEngines; e++ {
		js := strings.Replace(fmt.Sprintf(faultsConfig, `"early_timer": 1`), `"engine": "vllm"`, fmt.Sprintf(`"engine": %q`, e), 1)
		cfg := mustConfig(t, js)
		c, err := New(Generated(), cfg, cfg.Runs[0])
		if err != nil {
			t.Fatal(err)
		}
		seen := map[MoveKind]bool{}
		visited := map[Key]bool{}
		var walk func(s State, depth int)
		walk = func(s State, depth int) {
			k := c.Key(&s)
			if visited[k] || depth > 12 {
				return
			}
			visited[k] = true
			for _, m := range c.MovesInto(&s, nil) {
				seen[m.Kind] = true
				next := s
				if _, _, err := c.Step(&next, m, nil); err != nil {
					t.Fatal(err)
				}
				walk(next, depth+1)
			}
		}
		walk(c.Initial(), 0)
		can := model.Engines[e].CanReserve
		if seen[mvReserve] != can || seen[mvRefuse] == can {
			t.Errorf("engine %s (can reserve: %v): reserve offered %v, refuse offered %v", e, can, seen[mvReserve], seen[mvRefuse])
		}
	}
}
