package explore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// Searching for one chosen built-in invariant: the shortest continuation
// from the state a path names to a step where that invariant breaks.
//
// Every step is judged by every invariant, as check judges it, and a step
// that breaks another invariant ends its branch: the search does not go
// on from it. So the path found breaks nothing but the chosen invariant
// before its last step; it is the counterexample check would report if
// the chosen invariant's were the design's only bug. A violation met only
// after another one is that one's consequence, judged in a world the
// design had already broken; rather than a path whose first violation is
// another invariant's (the one the page would show first when it opens
// the path), the answer then names the invariants that broke first and
// on how many states, so the reviewer searches for those instead.
//
// The search is breadth-first over every enabled move in the order the
// page lists them (no partial-order reduction), merges states by the
// checker's canonical key (symmetry when the run allows it) and is bounded
// by SearchMaxStates and SearchTimeout as the search for any violation is.

// Blocked counts the states where another invariant broke first.
type Blocked struct {
	Invariant string `json:"invariant"`
	States    int    `json:"states"`
}

// searchable reports whether the named invariant can be searched for,
// and why not.
func searchable(name string) error {
	for i := range model.Invariants {
		inv := &model.Invariants[i]
		if inv.Name != name {
			continue
		}
		if name == model.NameEventuallyDrained {
			return fmt.Errorf("%w: invariant %s is about the whole graph of states, not a step: check --liveness judges it", errPath, name)
		}
		return nil
	}
	var names []string
	for i := range model.Invariants {
		if n := model.Invariants[i].Name; n != model.NameEventuallyDrained {
			names = append(names, n)
		}
	}
	return fmt.Errorf("%w: invariant %q: no built-in invariant has that name (one of %s)", errPath, name, strings.Join(names, ", "))
}

// violations judges a step by every invariant: the step halves on its
// effects, AttemptIsolation on a late delivery, the state halves and the
// properties' always ones on the state it reaches, and Quiescence and
// FaultFreeCompletion when that state is quiescent. Unlike the checker's
// fast path, it does not stop at the first.
func (s *Server) violations(before, after *system.State, j *model.Journal, m system.Move) []*model.Violation {
	out := model.StepViolations(&after.W, j)
	if j.Stale {
		// JudgeStep judges AttemptIsolation once the step halves hold:
		// with no effects to judge, it judges that alone.
		if v := s.c.JudgeStep(before, after, &model.Journal{Stale: true}, m); v != nil {
			out = append(out, v)
		}
	}
	rec := s.c.Records(after)
	out = append(out, model.StateViolations(&after.W, &rec)...)
	if s.props != nil {
		if v := s.props.Judge(s.c.System, after); v != nil {
			out = append(out, v)
		}
	}
	if quiescent, _ := s.c.Quiescence(after); quiescent {
		if v := model.Quiescence(&after.W, &rec); v != nil {
			out = append(out, v)
		}
		if after.B == s.c.Budget() {
			if v := model.FaultFreeCompletion(&after.W); v != nil {
				out = append(out, v)
			}
		}
	}
	return out
}

// fingerprint hashes a canonical key to 64 bits, as check's visited set
// does by default: a collision among the few hundred thousand states a
// search from the page may visit is vanishingly unlikely.
func fingerprint(k *system.Key) uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, w := range k {
		h ^= w
		h *= 0xbf58476d1ce4e5b9
		h ^= h >> 31
	}
	return h
}

// SearchInvariant finds the shortest continuation of a path to a step
// that breaks the named built-in invariant, going on from no step that
// breaks another one first (see above).
func (s *Server) SearchInvariant(ctx context.Context, path []int, name string) (*Found, error) {
	if err := searchable(name); err != nil {
		return nil, err
	}
	start, err := s.walk(path, func(int, *system.State, checker.StepResult) {}, nil)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, SearchTimeout)
	defer cancel()
	nodes := []node{{parent: -1, move: -1}}
	root := *start
	key := s.c.Key(&root)
	seen := map[uint64]struct{}{fingerprint(&key): {}}
	frontier := []system.State{root}
	ids := []int32{0}
	blocked := map[string]int{}
	f := &Found{Invariant: name}
	var moves []system.Move
	for len(frontier) > 0 {
		var next []system.State
		var nextIDs []int32
		for fi := range frontier {
			if fi%256 == 0 && ctx.Err() != nil {
				f.Stopped = "stopped after " + SearchTimeout.String()
				return blockedFound(f, len(nodes), blocked), nil
			}
			st := &frontier[fi]
			moves = s.c.MovesInto(st, moves[:0])
			for mi, m := range moves {
				after := *st
				j, _, err := s.c.Step(&after, m, nil)
				if err != nil {
					return nil, fmt.Errorf("the search's step %s: %v", m, err)
				}
				vs := s.violations(st, &after, &j, m)
				if i := slices.IndexFunc(vs, func(v *model.Violation) bool { return v.Invariant == name }); i >= 0 {
					full := append(slices.Clone(path), indices(nodes, ids[fi])...)
					full = append(full, mi)
					return s.foundAt(f, full, vs, i, len(nodes), blocked)
				}
				k := s.c.Key(&after)
				fp := fingerprint(&k)
				if _, ok := seen[fp]; ok {
					continue
				}
				seen[fp] = struct{}{}
				nodes = append(nodes, node{parent: ids[fi], move: int32(mi)})
				if len(vs) > 0 {
					blocked[vs[0].Invariant]++
					continue
				}
				next = append(next, after)
				nextIDs = append(nextIDs, int32(len(nodes)-1))
			}
		}
		if len(nodes) >= SearchMaxStates && len(next) > 0 {
			f.Stopped = fmt.Sprintf("stopped at the bound of %d states", SearchMaxStates)
			return blockedFound(f, len(nodes), blocked), nil
		}
		frontier, ids = next, nextIDs
	}
	f.Complete = true
	return blockedFound(f, len(nodes), blocked), nil
}

// node is a state a search visited: the node it was reached from and the
// index of the move among the moves enabled there.
type node struct {
	parent int32
	move   int32
}

// indices follows the parent links from a node back to the search's
// start: the move indices that reach it.
func indices(nodes []node, id int32) []int {
	var out []int
	for ; nodes[id].parent >= 0; id = nodes[id].parent {
		out = append(out, int(nodes[id].move))
	}
	slices.Reverse(out)
	return out
}

// foundAt answers a search that found vs[i] broken at the end of a path
// (move indices from the initial state), with the moves of the path and
// the other invariants the same step breaks.
func (s *Server) foundAt(f *Found, path []int, vs []*model.Violation, i, states int, blocked map[string]int) (*Found, error) {
	moves, err := s.movesOf(path)
	if err != nil {
		return nil, fmt.Errorf("the search's path does not replay: %v", err)
	}
	f = blockedFound(f, states, blocked)
	f.Violation = violated(vs[i], len(path))
	f.Path = path
	for _, m := range moves {
		f.Moves = append(f.Moves, m.String())
	}
	for j, v := range vs {
		if j != i && !slices.Contains(f.Also, v.Invariant) {
			f.Also = append(f.Also, v.Invariant)
		}
	}
	return f, nil
}

// blockedFound records the states explored and what blocked the search,
// most states first (then by name: the same search says the same).
func blockedFound(f *Found, states int, blocked map[string]int) *Found {
	f.States = states
	for name, n := range blocked {
		f.Blocked = append(f.Blocked, Blocked{Invariant: name, States: n})
	}
	slices.SortFunc(f.Blocked, func(a, b Blocked) int {
		if a.States != b.States {
			return b.States - a.States
		}
		return strings.Compare(a.Invariant, b.Invariant)
	})
	return f
}
