package explore

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"sync"

	"github.com/handoffcheck/handoffcheck/checker/diagram"
	"github.com/handoffcheck/handoffcheck/machines"
	"github.com/handoffcheck/handoffcheck/spec"
)

// diagrams are the run's two state diagrams (its roles under its
// policy) as SVG. The built-in tables' are the ones go generate laid out
// into the machines package; a variant's tables are laid out the first
// time the page asks, with the same layout, so their ids and rows are the
// variant's own.
type diagrams struct {
	once sync.Once
	svg  map[spec.Role][]byte
	err  error
}

// builtIn reports whether a spec is the built-in one, whose diagrams
// machines embeds.
func builtIn(s *spec.Spec) bool {
	a, err := s.MarshalJSON()
	if err != nil {
		return false
	}
	b, err := spec.Default().MarshalJSON()
	return err == nil && bytes.Equal(a, b)
}

func (s *Server) diagrams() (map[spec.Role][]byte, error) {
	d := &s.diag
	d.once.Do(func() {
		sp, pol := s.c.Protocol().Spec(), s.c.Run().Policy
		roles := []spec.Role{spec.Source, spec.Destination}
		d.svg = map[spec.Role][]byte{}
		if builtIn(sp) {
			for _, r := range roles {
				data, err := machines.Diagrams.ReadFile(diagram.File(r, pol))
				if err != nil {
					d.err = err
					return
				}
				d.svg[r] = data
			}
			return
		}
		ctx := context.Background()
		l, err := diagram.NewLayout(ctx)
		if err != nil {
			d.err = err
			return
		}
		defer l.Close()
		for _, r := range roles {
			if d.svg[r], d.err = l.SVG(ctx, diagram.Dot(sp, r, pol)); d.err != nil {
				return
			}
		}
	})
	return d.svg, d.err
}

// serveDiagram answers a role's state diagram under the run's policy.
func (s *Server) serveDiagram(w http.ResponseWriter, r *http.Request) {
	if s.noRun(w) {
		return
	}
	var role spec.Role
	switch name := r.URL.Query().Get("role"); name {
	case spec.Source.String():
		role = spec.Source
	case spec.Destination.String():
		role = spec.Destination
	default:
		http.Error(w, "role "+strconv.Quote(name)+": want source or destination", http.StatusBadRequest)
		return
	}
	svg, err := s.diagrams()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	_, _ = w.Write(svg[role])
}
