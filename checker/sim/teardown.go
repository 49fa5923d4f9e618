package sim

import (
	"github.com/handoffcheck/handoffcheck/checker/system"
)

// Teardown is what ending a run with handoffs unresolved did
// (Options.UntilUS): the replay harness stops taking arrivals, planned
// faults and the workload's client cancels at a time of its choosing,
// and every handoff still unresolved (its KV not activated on the
// destination) is cut by the client cancel every side's lifecycle
// already answers. A request whose handoff succeeded decodes on: it is
// no handoff any more. The run then goes on until nothing is scheduled,
// so each cut handoff releases what it holds through its own rows,
// judged by the same invariants as any step (ExactlyOnceRelease above
// all), and the end of the run checks that nothing is left held
// (Quiescence).
type Teardown struct {
	// AtMS is the virtual time of the teardown.
	AtMS float64 `json:"at_ms"`
	// Cut counts the handoffs unresolved at the teardown; Cancelled those
	// the cancel reached (the others had been cancelled already or were
	// ending on their own).
	Cut       int `json:"cut"`
	Cancelled int `json:"cancelled"`
	// DecodingOn counts the requests whose handoff had succeeded, left
	// to finish their decode.
	DecodingOn int `json:"decoding_on"`
	// NotArrived counts the workload's requests after the teardown,
	// never started.
	NotArrived int `json:"not_arrived"`
}

// tearDown cuts every handoff unresolved at the teardown time, in
// request order (the order is part of the run's determinism).
func (s *Sim) tearDown(at int64) {
	s.advance(at)
	s.teardown = &Teardown{AtMS: ms(at)}
	for _, r := range s.sortedActive() {
		if r.retired || r.broken {
			continue
		}
		if r.st.W.H[0].Activated {
			s.teardown.DecodingOn++
			continue
		}
		s.teardown.Cut++
		if s.do(r, system.Move{Kind: system.Cancel.Move(), H: 0}, false) {
			s.teardown.Cancelled++
			s.stats.cancelled++
		}
		if s.stop {
			return
		}
		s.settle()
		s.maybeRetire(r)
	}
}
