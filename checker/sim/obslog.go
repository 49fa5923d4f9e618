package sim

import (
	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// observe logs the facts a step of a request made observable, when the
// run writes a log, and feeds the KV index the ones it takes.
func (s *Sim) observe(r *request, before *system.State, m system.Move) {
	labels := s.step.Observe(before, &r.st, m)
	for i := range labels {
		l := &labels[i]
		indexed := l.Kind == obslog.Stored || l.Kind == obslog.Removed
		if s.olog == nil && !indexed {
			continue // no log: only the index takes facts
		}
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
		name := ""
		if s.olog != nil {
			name = cluster.AttemptName(&r.Request, r.attempt)
		}
		f := obslog.FactOf(l, proc, gen, name, s.now)
		if l.Kind == obslog.Routed {
			if l.Stage == model.SourceSide {
				f.To = r.p + 1
				f.PromptTokens = int64(r.PromptTokens)
			} else {
				f.To = r.d + 1
				f.PrefixHitTokens = int64(r.hit)
			}
		}
		if l.Kind == obslog.Activated && s.olog != nil {
			// adopt ran before this step was observed: the share it
			// made, if any, is what the activation adopted.
			if sh := s.adopted; sh != nil && sh.adopter == r {
				f.AdoptedBlocks, f.Canonical = int64(sh.n), cluster.AttemptName(&sh.owner.Request, sh.owner.attempt)
			}
		}
		if indexed {
			s.indexFact(r, &f)
		}
		if s.olog != nil {
			s.olog.Write(&f)
		}
	}
}

// indexChanged reports whether a step published Stored or Removed for a
// side of the handoff: only then has the KV index something to take, so
// a run that writes no log observes no other step.
func indexChanged(b, a *model.Handoff) bool {
	return b.SrcIndexed != a.SrcIndexed || b.Published != a.Published
}

// indexFact feeds the KV index a fact a worker published about request r
// (nil: a worker's restart). A fact the index cannot take is the run's
// bookkeeping gone wrong, judged as IndexMatchesCache.
func (s *Sim) indexFact(r *request, f *obslog.Fact) {
	group := ""
	if r != nil {
		group = r.PrefixGroup
	}
	if err := s.index.Apply(f, group); err != nil {
		if r != nil && f.Attempt == "" {
			f.Attempt = cluster.AttemptName(&r.Request, r.attempt)
			err = s.index.Apply(f, group) // the same refusal, naming the attempt
		}
		s.fail(r, model.NameIndexMatchesCache, err.Error())
	}
}
