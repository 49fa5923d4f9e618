package explore

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/system"
)

// Searching from the page: the shortest continuation from the state a
// path names to a violation of any invariant, found by the same
// breadth-first search check runs (started after the path: check
// --from-trace), bounded so that the page answers.

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
}

// Search finds the shortest continuation of a path to a violation.
func (s *Server) Search(ctx context.Context, path []int) (*Found, error) {
	start, err := s.movesOf(path)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, SearchTimeout)
	defer cancel()
	lim := checker.Limits{MaxStates: SearchMaxStates, Workers: 1, From: start}
	rep, err := checker.Check(ctx, s.c.Protocol(), s.cfg, []system.Run{s.c.Run()}, lim, nil)
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
		sess := s.c.NewSession()
		for _, st := range ce.Steps {
			idx := indexOf(sess.Moves(), st.Move)
			if idx < 0 {
				return nil, fmt.Errorf("the search's step %s is not enabled on the page's run", st.Move)
			}
			if _, err := sess.Apply(st.Move); err != nil {
				return nil, err
			}
			f.Path = append(f.Path, idx)
			f.Moves = append(f.Moves, st.Move.String())
		}
	}
	return f, nil
}

// movesOf replays a path of indices into its moves.
func (s *Server) movesOf(path []int) ([]system.Move, error) {
	sess := s.c.NewSession()
	out := []system.Move{}
	for i, idx := range path {
		moves := sess.Moves()
		if idx >= len(moves) {
			return nil, fmt.Errorf("%w: step %d chooses move %d, but %d moves are enabled there", errPath, i+1, idx, len(moves))
		}
		if _, err := sess.Apply(moves[idx]); err != nil {
			return nil, err
		}
		out = append(out, moves[idx])
	}
	return out, nil
}

func (s *Server) serveSearch(w http.ResponseWriter, r *http.Request) {
	if s.noRun(w) {
		return
	}
	path, err := ParsePath(r.URL.Query().Get("path"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f, err := s.Search(r.Context(), path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, f)
}
