package sim

import (
	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// observe logs the facts a step of a request made observable.
func (s *Sim) observe(r *request, before *system.State, m system.Move) {
	labels := s.step.Observe(before, &r.st, m)
	for i := range labels {
		l := &labels[i]
		w := -1
		switch l.By {
		case obslog.BySource:
			w = r.p
		case obslog.ByDestination:
			w = r.d
		}
		proc, gen := 0, int64(0)
		if w >= 0 {
			proc, gen = w+1, int64(s.workers[w].Gen)
		}
		f := obslog.FactOf(l, proc, gen, cluster.AttemptName(&r.Request, r.attempt), s.now)
		if l.Kind == obslog.Routed {
			if l.Stage == model.SourceSide {
				f.To = r.p + 1
				f.PromptTokens = int64(r.PromptTokens)
			} else {
				f.To = r.d + 1
				f.PrefixHitTokens = int64(r.hit)
			}
		}
		s.olog.Write(&f)
	}
}
