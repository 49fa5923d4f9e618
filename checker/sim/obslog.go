package sim

import (
	"fmt"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/model"
)

// LogHeader is the header of a run's observation log: the routers as one
// process, "router", then "prefill-I" and "decode-J" for the workers
// (process w+1 is cluster worker w), each recording the kinds in records,
// and the configuration.
func (c *Config) LogHeader(records obslog.KindSet) *obslog.Header {
	h := &obslog.Header{Policy: c.policy, Engine: c.Engine, Config: c.JSON()}
	h.Processes = append(h.Processes, obslog.Process{Name: "router", Role: obslog.RoleRouter, Records: records})
	for w := 0; w < c.NumWorkers(); w++ {
		p := obslog.Process{Name: fmt.Sprintf("prefill-%d", w), Role: obslog.RolePrefill, Records: records}
		if w >= c.Prefill.Workers {
			p = obslog.Process{Name: fmt.Sprintf("decode-%d", w-c.Prefill.Workers), Role: obslog.RoleDecode, Records: records}
		}
		h.Processes = append(h.Processes, p)
	}
	return h
}

// AttemptName is the attempt id of a request's attempt in the run's
// observation log: the request's id (or r and its index), and /N for the
// frontend's N-th retry.
func AttemptName(r *Request, attempt int) string {
	id := r.ID
	if id == "" {
		id = fmt.Sprintf("r%d", r.Index)
	}
	if attempt > 0 {
		id = fmt.Sprintf("%s/%d", id, attempt)
	}
	return id
}

// observe logs the facts a step of a request made observable.
func (s *Sim) observe(r *request, before *checker.State, m checker.Move) {
	s.labels = obslog.Observe(s.labels[:0], 0, before, &r.st, m, s.log)
	for i := range s.labels {
		l := &s.labels[i]
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
		f := obslog.FactOf(l, proc, gen, AttemptName(&r.Request, r.attempt), s.now)
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
