package explore

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/props"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// Searching from the page: the shortest continuation from the state a
// path names to a violation of any invariant, found by the same
// breadth-first search check runs (started after the path: check
// --from-trace), bounded so that the page answers. The search for one
// chosen invariant is invariant.go's.

// SearchMaxStates bounds a search from the page; SearchTimeout bounds its
// time. A search cut by either says so: nothing found is then no proof.
var (
	SearchMaxStates = 500_000
	SearchTimeout   = 30 * time.Second
)

// Found is a search's answer.
type Found struct {
	// Complete says every state reachable from the start was explored.
	Complete bool   `json:"complete"`
	States   int    `json:"states"`
	Stopped  string `json:"stopped,omitempty"`
	// Violation and Path, when the search found one: the path from the
	// initial state (the start's path, then the continuation), as move
	// indices the page can open.
	Violation *Violated `json:"violation,omitempty"`
	Path      []int     `json:"path,omitempty"`
	Moves     []string  `json:"moves,omitempty"`
	// Invariant is the invariant searched for ("" for any). Also names
	// the other invariants the found path's last step breaks with it, and
	// Blocked the invariants that broke first on the branches the search
	// did not go on with (SearchInvariant).
	Invariant string    `json:"invariant,omitempty"`
	Also      []string  `json:"also,omitempty"`
	Blocked   []Blocked `json:"blocked,omitempty"`
}

// Search finds the shortest continuation of a path to a violation, or,
// with a target (a sometimes property's name), to a state where the
// target holds (a violation found first is the answer then).
func (s *Server) Search(ctx context.Context, path []int, target string) (*Found, error) {
	start, err := s.movesOf(path)
	if err != nil {
		return nil, err
	}
	cfg := s.cfg
	if target != "" {
		p := s.sometimes(target)
		if p == nil {
			return nil, fmt.Errorf("%w: target %q is no sometimes property of the page's properties file", errPath, target)
		}
		judged := *cfg
		judged.Judge = targetJudge{set: s.props, target: props.Target{P: p}}
		cfg = &judged
	}
	ctx, cancel := context.WithTimeout(ctx, SearchTimeout)
	defer cancel()
	lim := checker.Limits{MaxStates: SearchMaxStates, Workers: 1, From: start}
	rep, err := checker.Check(ctx, s.c.Protocol(), cfg, []system.Run{s.c.Run()}, lim)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errPath, err)
	}
	if len(rep.Runs) == 0 {
		return &Found{Stopped: "interrupted before it started"}, nil
	}
	r := rep.Runs[0]
	f := &Found{Complete: r.Complete, States: r.Stats.States, Stopped: r.StopDetail}
	if ce := r.Violation; ce != nil {
		f.Violation = violated(ce.Violation, len(ce.Steps))
		sess := s.c.Initial()
		for _, st := range ce.Steps {
			idx := indexOf(s.c.MovesInto(&sess, nil), st.Move)
			if idx < 0 {
				return nil, fmt.Errorf("the search's step %s is not enabled on the page's run", st.Move)
			}
			if _, err := s.c.Apply(&sess, st.Move); err != nil {
				return nil, err
			}
			f.Path = append(f.Path, idx)
			f.Moves = append(f.Moves, st.Move.String())
		}
	}
	return f, nil
}

// sometimes finds a sometimes property by name (nil: none).
func (s *Server) sometimes(name string) *props.Property {
	if s.props == nil {
		return nil
	}
	for _, p := range s.props.Props {
		if p.Name == name && p.Kind == props.Sometimes {
			return p
		}
	}
	return nil
}

// targetJudge judges the always properties, then the target: a search
// with it stops at the first state where either a property breaks or the
// target holds.
type targetJudge struct {
	set    *props.Set
	target props.Target
}

func (j targetJudge) Judge(sys *system.System, st *system.State) *model.Violation {
	if v := j.set.Judge(sys, st); v != nil {
		return v
	}
	return j.target.Judge(sys, st)
}

// movesOf replays a path of indices into its moves.
func (s *Server) movesOf(path []int) ([]system.Move, error) {
	out := []system.Move{}
	_, err := s.walk(path, func(_ int, _ *system.State, r checker.StepResult) { out = append(out, r.Move) }, nil)
	return out, err
}

func (s *Server) serveSearch(w http.ResponseWriter, r *http.Request) {
	if s.noRun(w) {
		return
	}
	path, ok := pathParam(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	target, inv := q.Get("target"), q.Get("invariant")
	var f *Found
	var err error
	switch {
	case target != "" && inv != "":
		err = fmt.Errorf("target %q and invariant %q: search for one at a time", target, inv)
	case inv != "":
		f, err = s.SearchInvariant(r.Context(), path, inv)
	default:
		f, err = s.Search(r.Context(), path, target)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, f)
}
