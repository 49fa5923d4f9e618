package mocker

import (
	"fmt"
	"io"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/conform"
)

// Merge is what the conversions of several logs saw, in the order given.
func Merge(rs ...*Result) *Result {
	m := &Result{Aggregated: len(rs) > 0}
	for _, r := range rs {
		m.Handoffs += r.Handoffs
		m.Requests += r.Requests
		m.Divergences = append(m.Divergences, r.Divergences...)
		m.Rejections += r.Rejections
		if m.Rejection == nil {
			m.Rejection = r.Rejection
		}
		m.Aggregated = m.Aggregated && r.Aggregated
	}
	return m
}

// Fold makes the bookkeeping's verdict part of conform's report. The
// contract's rejection, when there is one, stands: it is the judgement of
// the facts, and the bookkeeping's is reported beside it (WriteText).
// Otherwise a broken rule of the mocker's own is the verdict: rejected at
// its line. Logs of aggregated replays hand nothing off, so their report
// names no handoff order.
func (m *Result) Fold(rep *conform.Report) {
	if m.Aggregated {
		rep.Policy = "aggregated"
	}
	if rep.Rejection == nil && m.Rejection != nil {
		x := *m.Rejection
		rep.Rejection, rep.Verdict = &x, conform.Rejected
	}
}

// Judged says whether the logs gave the bookkeeping anything to judge:
// aggregated requests make no fact, yet their books are judged.
func (m *Result) Judged() bool { return m.Handoffs+m.Requests > 0 }

// WriteText prints the mocker's bookkeeping next to conform's verdict: how
// many handoffs (and aggregated requests) it converted, where its
// in-flight counts part from the contract's, with the first such event,
// and where it broke its own rules.
func (m *Result) WriteText(w io.Writer) {
	fmt.Fprintf(w, "mocker bookkeeping: %d handoffs", m.Handoffs)
	if m.Requests > 0 {
		fmt.Fprintf(w, ", %d aggregated requests", m.Requests)
	}
	fmt.Fprintf(w, "; its in-flight counts differ from the contract's at %d events", len(m.Divergences))
	if len(m.Divergences) > 0 {
		d := m.Divergences[0]
		fmt.Fprintf(w, " (the mocker counts a prefill out when its pass completes, the contract while its source is held; first at line %d: %s, mocker %d, contract %d)", d.Line, d.Worker, d.Mocker, d.Count)
	}
	fmt.Fprintln(w)
	if x := m.Rejection; x != nil {
		fmt.Fprintf(w, "mocker bookkeeping: its own rules are broken at %d events, first at %s:%d: %s\n", m.Rejections, x.File, x.Line, strings.TrimPrefix(x.Detail, bookkeepingPrefix))
	} else {
		fmt.Fprintln(w, "mocker bookkeeping: its own rules hold (in_flight by apply_command and pass completion, never below the requests in the core; phases in order; priorities kept; counted_in_flight cleared once)")
	}
}
