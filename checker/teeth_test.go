package checker

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/spec"
)

// checkerFor builds the checker of one named run of a configuration.
func checkerFor(t *testing.T, p *Protocol, cfg *Config, name string) *Checker {
	t.Helper()
	for _, r := range cfg.Runs {
		if r.Name == name {
			c, err := New(p, cfg, r)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
	t.Fatalf("no run %q", name)
	return nil
}

// Step takes only a move the state enables: not the zero move, and not a
// well-formed move of the wrong moment. A replayed trace relies on it to
// refuse a step the system could not have taken.
func TestStep_RefusesMovesTheStateDoesNotEnable(t *testing.T) {
	c := checkerFor(t, Generated(), mustConfig(t, smallConfig), "vllm")
	s := c.Initial()
	for _, m := range []Move{{}, {Kind: MvReserve, H: 0}, {Kind: MvRoutePrefill, H: 0, Arg: 1}} {
		before := s
		if _, _, err := c.Step(&s, m, nil); err == nil || !strings.Contains(err.Error(), "not enabled") {
			t.Errorf("move %q on the initial state: err %v, want it refused", m, err)
		}
		if s != before {
			t.Errorf("a refused move %q changed the state", m)
		}
	}
	if _, _, err := c.Step(&s, Move{Kind: MvRoutePrefill, H: 0, Arg: 0}, nil); err != nil {
		t.Fatalf("routing to the prefill worker: %v", err)
	}
}

// The initial state of each role is the state the table marks initial,
// wherever the table lists it: a table whose states are listed in another
// order is the same protocol and explores the same number of states.
func TestInitial_IsTheMarkedStateWhereverItIsListed(t *testing.T) {
	reordered := spec.Default()
	for _, r := range []spec.Role{spec.Source, spec.Destination} {
		slices.Reverse(reordered.Table(r).States)
		if reordered.Table(r).States[0].Initial {
			t.Fatalf("%s: the initial state is still listed first", r)
		}
	}
	cfg := mustConfig(t, smallConfig)
	for _, run := range []string{"vllm", "sglang"} {
		want := checkerFor(t, Generated(), cfg, run).Explore(context.Background(), Limits{Workers: 1}, nil)
		c := checkerFor(t, interpreted(t, reordered), cfg, run)
		s := c.Initial()
		for _, r := range []spec.Role{spec.Source, spec.Destination} {
			if got := c.Protocol().StateName(r, s.Role(r, 0)); got != reordered.Table(r).Initial() {
				t.Errorf("%s: %s starts in %s, want %s", run, r, got, reordered.Table(r).Initial())
			}
		}
		got := c.Explore(context.Background(), Limits{Workers: 1}, nil)
		if got.Stats.States != want.Stats.States || got.Violation != nil || !got.Complete {
			t.Errorf("%s: reordered states explore %d states (violation %v), the built-in tables %d",
				run, got.Stats.States, got.Violation, want.Stats.States)
		}
	}
}

// slotBound is two handoffs on a decode worker with one request slot: the
// second activation waits for the first decode to end, and only the
// promote move gives it the slot.
const slotBound = `{
  "schema": "handoffcheck.config/v1",
  "runs": [
    {"name": "vllm", "policy": "source-first", "engine": "vllm"},
    {"name": "sglang", "policy": "destination-first", "engine": "sglang"}
  ],
  "workers": [
    {"role": "prefill", "capacity_blocks": 8},
    {"role": "decode", "capacity_blocks": 8, "slots": 1, "headroom_tokens": 1024}
  ],
  "handoffs": [{"prompt_tokens": 32, "headroom_tokens": 0}, {"prompt_tokens": 48, "headroom_tokens": 0}],
  "transfer": {"bytes_per_token": 131072, "block_size_tokens": 16},
  "faults": {}
}`

// A request slot that binds: on an engine that takes the slot at
// activation, a handoff activated while the slot is taken runs once the
// slot is free, through promote, and every handoff drains.
// The promote move must be enabled somewhere and the exploration must end
// with no violation (a promote that does nothing leaves a request that
// never runs, which EventuallyDrained reports).
func TestSlots_PromoteRunsAWaitingActivation(t *testing.T) {
	cfg := mustConfig(t, slotBound)
	for _, run := range []string{"vllm", "sglang"} {
		c := checkerFor(t, Generated(), cfg, run)
		r := c.Explore(context.Background(), Limits{Workers: 1, Liveness: true}, nil)
		if r.Violation != nil || !r.Complete {
			t.Fatalf("%s: %v (complete %v)", run, r.Violation, r.Complete)
		}
		// Find a state where promote is enabled by a breadth-first walk of
		// the moves, and take it: the waiting request gets the slot.
		found := false
		seen := map[Key]bool{}
		queue := []State{c.Initial()}
		for len(queue) > 0 && !found {
			s := queue[0]
			queue = queue[1:]
			var ms moveSet
			c.moves(&s, &ms)
			for i := 0; i < ms.n; i++ {
				m := ms.m[i]
				next := s
				if _, v, err := c.Step(&next, m, nil); err != nil || v != nil {
					t.Fatalf("%s: %s: %v %v", run, m, err, v)
				}
				if m.Kind == MvPromote {
					x := &next.W.H[m.H]
					if !x.Running || s.W.H[m.H].Running {
						t.Fatalf("%s: promote did not give handoff %d the slot", run, m.H)
					}
					if next.W.W[x.Decode].SlotsUsed != s.W.W[x.Decode].SlotsUsed+1 {
						t.Fatalf("%s: promote did not count the slot", run)
					}
					found = true
					break
				}
				if k := c.Key(&next); !seen[k] {
					seen[k] = true
					queue = append(queue, next)
				}
			}
		}
		// An engine that takes the slot at reservation never activates a
		// request without one; the others activate into a waiting state.
		if slotFirst := c.World().Engine.Traits().SlotAtReservation; found == slotFirst {
			t.Fatalf("%s: promote enabled: %v, but the engine takes the slot at reservation: %v", run, found, slotFirst)
		}
	}
}
