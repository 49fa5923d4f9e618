package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/props"
)

// The reports of simulate and timeline render themselves here, next to
// the figures they print, so that the command line only parses flags.

// resultJSON is the stable --json form of one run (docs/cli.md).
type resultJSON struct {
	Summary     Summary          `json:"summary"`
	Violation   *Violation       `json:"violation,omitempty"`
	Interrupted bool             `json:"interrupted,omitempty"`
	Props       *props.RunReport `json:"properties,omitempty"`
	// Invariants: the built-in invariants the run exercised.
	Invariants *cluster.InvariantsReport `json:"invariants,omitempty"`
}

// WriteResults prints the summaries (one per run) and any violation: as
// text, a blank line between runs, or as one JSON object (the run's own,
// or {"runs": [...]} for several).
func WriteResults(w io.Writer, results []*Result, asJSON bool) error {
	if asJSON {
		var out any
		if len(results) == 1 {
			out = resultJSON{results[0].Summary, results[0].Violation, results[0].Interrupted, results[0].Props, results[0].Invariants}
		} else {
			var all []resultJSON
			for _, r := range results {
				all = append(all, resultJSON{r.Summary, r.Violation, r.Interrupted, r.Props, r.Invariants})
			}
			out = struct {
				Runs []resultJSON `json:"runs"`
			}{all}
		}
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(b))
		return err
	}
	for i, r := range results {
		if i > 0 {
			fmt.Fprintln(w)
		}
		r.WriteSummary(w)
	}
	return nil
}

// WriteSummary prints one run's summary, per-worker table, violation with
// the request's history, and whether a signal cut the run short.
func (r *Result) WriteSummary(w io.Writer) {
	s := &r.Summary
	fmt.Fprintf(w, "simulate: %s on %s, seed %d: %d requests in %.3f s of virtual time (%d events)\n", s.Policy, s.Engine, s.Seed, s.Requests, s.MakespanMS/1000, s.Events)
	fmt.Fprintf(w, "  requests: %d succeeded, %d failed, %d cancelled, %d retries; faults: %d struck, %d found nothing to strike\n", s.Succeeded, s.Failed, s.Cancelled, s.Retried, s.FaultsStruck, s.FaultsMissed)
	for _, l := range []struct {
		name string
		p    *Pcts
	}{{"TTFT ms:        ", &s.TTFT}, {"E2E ms:         ", &s.E2E}, {"prefill wait ms:", &s.PrefillWait}, {"decode wait ms: ", &s.DecodeWait}} {
		fmt.Fprintf(w, "  %s mean %.1f  p50 %.1f  p90 %.1f  p99 %.1f\n", l.name, l.p.Mean, l.p.P50, l.p.P90, l.p.P99)
	}
	fmt.Fprintf(w, "  throughput: %.2f requests/s, %.1f output tokens/s\n", s.ThroughputRPS, s.OutputTokensPerS)
	fmt.Fprintf(w, "  transfers: %d done (%.1f MB, mean %.2f ms), %d failed; prefix hits %d tokens\n", s.Transfers, float64(s.TransferBytes)/1e6, s.TransferMeanMS, s.TransfersFailed, s.PrefixHitTokens)
	if s.AdoptedBlocks != nil {
		fmt.Fprintf(w, "  canonical blocks: %d duplicate blocks adopted at activation\n", *s.AdoptedBlocks)
	}
	fmt.Fprintf(w, "  stranded source KV (pinned after compute while decode waits): %.1f block-seconds, peak %d blocks\n", s.StrandedSourceBlockSeconds, s.StrandedSourcePeak)
	fmt.Fprintf(w, "  BoundedReclaim: %d obligations met, longest %.1f ms; BoundedGiveUp: %d met, longest %.1f ms; held for doomed attempts %.1f block-seconds\n",
		s.ReclaimObligated, s.ReclaimMaxMS, s.GiveUpObligated, s.GiveUpMaxMS, s.StrandedBlockSeconds)
	if t := s.Teardown; t != nil {
		fmt.Fprintf(w, "  teardown at %.3f ms: %d handoffs unresolved cut (%d cancelled there), %d requests decoding ran on, %d never arrived;", t.AtMS, t.Cut, t.Cancelled, t.DecodingOn, t.NotArrived)
		if r.Violation == nil && !r.Interrupted {
			fmt.Fprint(w, " each released what it held once, nothing held at the end")
		}
		fmt.Fprintln(w)
	}
	if k := s.KeptGoing; k != nil && k.Total() == 0 {
		fmt.Fprintln(w, "  kept going: no violation to go past")
	} else if k != nil {
		counts := make([]string, len(k.Violations))
		for i, c := range k.Violations {
			counts[i] = fmt.Sprintf("%s %d", c.Invariant, c.Count)
		}
		fmt.Fprintf(w, "  kept going past the first violation (below): %d violations (%s); %d requests took no step after theirs (a bound on time broken, the request goes on); %d blocks still in use at the end\n",
			k.Total(), strings.Join(counts, ", "), k.Requests, k.InUseBlocks)
		if k.Stopped != "" {
			fmt.Fprintf(w, "  stopped early: %s\n", k.Stopped)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  worker\trole\tpinned peak/mean\treserved peak/mean\tactive peak/mean\tin-flight peak\tstranded-source block-s\tdoomed block-s\t")
	for _, ws := range s.Workers {
		pm := func(k string) string { return fmt.Sprintf("%.0f/%.1f", ws.Series[k].Peak, ws.Series[k].Mean) }
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%.0f\t%.1f\t%.1f\t\n", ws.Worker, ws.Role, pm("pinned"), pm("reserved"), pm("active"), ws.Series["in_flight"].Peak, ws.StrandedSourceBlockSeconds, ws.StrandedBlockSeconds)
	}
	tw.Flush()
	if v := r.Violation; v != nil {
		fmt.Fprintf(w, "VIOLATION %s at %.3f ms, request %d: %s\n", v.Invariant, float64(v.AtUS)/1000, v.Request, v.Detail)
		fmt.Fprintln(w, "history of the request:")
		for _, l := range v.History {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	if r.Invariants != nil {
		r.Invariants.WriteText(w, "")
	}
	if r.Props != nil {
		r.Props.WriteText(w, "")
	}
	if r.Interrupted {
		fmt.Fprintln(w, "interrupted: the figures cover the virtual time simulated so far")
	}
}
