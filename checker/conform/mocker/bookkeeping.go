package mocker

import (
	"fmt"
	"slices"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/conform"
	"github.com/handoffcheck/handoffcheck/spec"
)

// The mocker's own bookkeeping, judged by the mocker's rules rather than
// the contract's. The contract's facts go to conform, which judges them
// against the tables; what is checked here is whether the mocker kept its
// own books as its replay state says it does: the worker's in-flight count
// moved by the scheduler commands' results and the engine passes, never
// below the requests its scheduler core holds, the request's phases in the
// lifecycle's order, its priorities kept when its prefill and decode
// requests are built, and its counted_in_flight cleared at most once. A
// log that breaks one is well formed (every name in it is one the format
// knows) and shows a wrong behaviour: a rejection at the line, exit 1, as
// conform's own; a name the format does not know is malformed input,
// exit 2.

// phasesSourceFirst and phasesDestinationFirst are the phases a
// disaggregated request goes through, in order; a request may skip phases
// (a cancel ends it early, and a log need not state every transition), but
// it never goes back. A source-first request is made QueuedPrefill and
// waits for its destination (AwaitingDestination) after its prefill; a
// destination-first one is made AwaitingDestination, and no transition
// ever queues it for prefill.
var (
	phasesSourceFirst      = []string{"QueuedPrefill", "RunningPrefill", "AwaitingDestination", "TransferPending", "ReadyDecode", "RunningDecode", "CleanupPending", "Done"}
	phasesDestinationFirst = []string{"AwaitingDestination", "RunningPrefill", "TransferPending", "ReadyDecode", "RunningDecode", "CleanupPending", "Done"}
	// phasesAggregated are an aggregated request's: queued at the router,
	// then running on a worker, never queued again.
	phasesAggregated = []string{"QueuedAtRouter", "Running"}
)

// bookkeepingPrefix begins the detail of a rejection of the mocker's own
// rules, which the report tells apart from the contract's.
const bookkeepingPrefix = "the mocker's own bookkeeping: "

// reject records a place where the mocker broke its own rules. The first
// one is the bookkeeping's verdict; the count says how many there were.
func (c *converter) reject(id, fact, detail string) {
	c.res.Rejections++
	if c.res.Rejection != nil {
		return
	}
	c.res.Rejection = &conform.Rejection{File: c.name, Line: c.line, Attempt: id, Fact: fact,
		Detail: bookkeepingPrefix + detail, Prefix: c.facts}
}

// rule is how apply_command and pass completion move a worker's in-flight
// count for one event, in words, for a rejection to name.
func rule(e *event, delta int) string {
	switch {
	case e.Event == "pass":
		return fmt.Sprintf("a completed pass counts out the %d requests it completed (mark_completed)", len(e.Completed))
	case e.Event == "receive":
		return "receive_request counts +1"
	case (e.Command == "Submit" || e.Command == "SubmitHandoffPrefill") && e.Result == "Submitted":
		return e.Command + " → Submitted counts +1"
	case e.Command == "ReserveDestination" && e.Result == "DestinationAccepted":
		return "ReserveDestination → DestinationAccepted counts +1"
	case e.Command == "CancelDestination" && e.Result == "Applied":
		return "CancelDestination → Applied counts -1"
	case e.Command == "CancelSource" && e.Result == "Applied":
		if delta == 0 {
			return "CancelSource → Applied counts out the requests it removed from the scheduler core, here none (the source's pass had already completed it)"
		}
		return "CancelSource → Applied counts out the requests it removed from the scheduler core, here 1 (its prefill had not completed)"
	}
	return fmt.Sprintf("%s → %s counts 0", e.Command, e.Result)
}

// account moves worker p's in-flight count by the mocker's rules and its
// scheduler core by the requests the event added or removed, then judges
// the count the event reports, and the core against it.
func (c *converter) account(e *event, id string, p, delta, coreDelta int) {
	before := c.mif[p]
	c.mif[p] += delta
	c.core[p] += coreDelta
	name := c.h.Processes[p].Name
	fact := describe(e, name)
	switch {
	case c.mif[p] < 0:
		c.reject(id, fact, fmt.Sprintf("%s counted %d requests in flight and %s: the count would go below zero (its checked_sub fails: a worker completed more requests than it owned)", name, before, rule(e, -delta)))
		c.mif[p] = 0
	case e.InFlight != nil && *e.InFlight != c.mif[p]:
		c.reject(id, fact, fmt.Sprintf("%s reports in_flight %d; by the rules of apply_command it is %d: it was %d before this line, and %s", name, *e.InFlight, c.mif[p], before, rule(e, -delta)))
	case c.mif[p] < c.core[p]:
		c.reject(id, fact, fmt.Sprintf("%s counts %d requests in flight while its scheduler core holds %d: in_flight is never below the requests in the core", name, c.mif[p], c.core[p]))
	}
}

// describe is an event as a rejection shows it.
func describe(e *event, proc string) string {
	var b strings.Builder
	b.WriteString(proc)
	if id := e.id(); id != "" {
		fmt.Fprintf(&b, " %s", id)
	}
	switch e.Event {
	case "command":
		fmt.Fprintf(&b, ": %s → %s", e.Command, e.Result)
	case "pass":
		fmt.Fprintf(&b, ": pass completed [%s]", strings.Join(e.Completed, " "))
	case "receive":
		b.WriteString(": receive_request")
	case "phase":
		fmt.Fprintf(&b, ": phase %s", e.Phase)
	default:
		fmt.Fprintf(&b, ": %s", e.Event)
	}
	if e.InFlight != nil {
		fmt.Fprintf(&b, " in_flight=%d", *e.InFlight)
	}
	return b.String()
}

// phase judges a request's phase event against the lifecycle: a known
// phase in the order its kind of request goes through them, and Done only
// once nothing is held.
func (c *converter) phase(e *event, h *handoff) error {
	order := phasesAggregated
	switch {
	case h.agg:
	case c.h.Policy == spec.SourceFirst:
		order = phasesSourceFirst
	default:
		order = phasesDestinationFirst
	}
	rank := slices.Index(order, e.Phase)
	if rank < 0 {
		if !slices.Contains(phasesSourceFirst, e.Phase) && !slices.Contains(phasesAggregated, e.Phase) {
			return c.fail("phase %q, want one of %s (a disaggregated request's DisaggPhase) or %s (an aggregated request's)",
				e.Phase, strings.Join(phasesSourceFirst, ", "), strings.Join(phasesAggregated, ", "))
		}
		// A phase of the other kind of request, or QueuedPrefill under
		// destination-first: a name the format knows, in a place the
		// lifecycle never puts it.
		c.reject(e.id(), describe(e, "request"), fmt.Sprintf("%s is no phase of %s: it goes %s", e.Phase, h.kind(c.h.Policy), strings.Join(order, ", ")))
		return nil
	}
	if rank < h.phase {
		c.reject(e.id(), describe(e, "request"), fmt.Sprintf("phase %s after %s (line %d): %s goes %s, never back", e.Phase, order[h.phase], h.phaseLine, h.kind(c.h.Policy), strings.Join(order, ", ")))
		return nil
	}
	if e.Phase == "Done" {
		var held []string
		if h.p >= 0 && !h.srcDone {
			held = append(held, fmt.Sprintf("%s has not released or cancelled its source", c.h.Processes[h.p].Name))
		}
		if h.d >= 0 && !h.dstDone {
			held = append(held, fmt.Sprintf("%s has neither completed its decode nor cancelled its destination", c.h.Processes[h.d].Name))
		}
		if len(held) > 0 {
			c.reject(e.id(), describe(e, "request"), "Done while "+strings.Join(held, ", and ")+": a request is done when both sides have returned what they held")
			return nil
		}
		if h.doneLine == 0 {
			h.doneLine = c.line
		}
	}
	h.phase, h.phaseLine = rank, c.line
	return nil
}

// afterDone judges a step of a request the log said was Done: a done
// request takes no more steps.
func (c *converter) afterDone(e *event, h *handoff, proc string) {
	if h.doneLine > 0 {
		c.reject(e.id(), describe(e, proc), fmt.Sprintf("%s is Done since line %d: a done request takes no more steps", e.id(), h.doneLine))
	}
}

// counted judges a request's counted_in_flight where the event gives it:
// a request is made counted in flight, and is counted out at most once.
func (c *converter) counted(e *event, h *handoff, made bool) {
	if e.CountedInFlight == nil {
		return
	}
	now := *e.CountedInFlight
	switch {
	case made && !now:
		c.reject(e.id(), describe(e, "request"), "counted_in_flight false on a new request: a disaggregated request is made counted in flight")
	case !h.counted && now:
		c.reject(e.id(), describe(e, "request"), fmt.Sprintf("counted_in_flight true again after it was cleared at line %d: a request is counted out of flight once", h.uncountedLine))
	case h.counted && !now:
		h.counted, h.uncountedLine = false, c.line
	}
}

// priorities judges the priorities a command's request carries: the
// request's own, which building its prefill and decode requests keeps.
func (c *converter) priorities(e *event, h *handoff, proc string) {
	for _, x := range []struct {
		name      string
		got, want *int
	}{{"priority", e.Priority, h.priority}, {"strict_priority", e.StrictPriority, h.strict}} {
		if x.got == nil {
			continue
		}
		if x.want == nil {
			x.want = new(int) // DirectRequest's default
		}
		if *x.got != *x.want {
			what := e.Command
			if what == "" {
				what = e.Event
			}
			c.reject(e.id(), describe(e, proc), fmt.Sprintf("%s carries %s %d, the request's is %d (line %d): the requests the replay builds for a request keep its router priorities", what, x.name, *x.got, *x.want, h.line))
			return
		}
	}
}

// kind names a request's kind for a rejection.
func (h *handoff) kind(p spec.Policy) string {
	switch {
	case h.agg:
		return "an aggregated request"
	case p == spec.SourceFirst:
		return "a source-first request"
	}
	return "a destination-first request"
}
