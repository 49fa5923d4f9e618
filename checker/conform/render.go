package conform

import (
	"fmt"
	"io"
	"strings"
)

// WriteText prints the report as conform and live show it: what was read,
// how far the search went, and the verdict with the fact it rests on, the
// invariant, what the tables allowed instead and the explained prefix.
func (r *Report) WriteText(w io.Writer) {
	r.writeVerdict(w)
	if r.Invariants != nil {
		r.Invariants.WriteText(w, "")
	}
	if r.Properties != nil {
		r.Properties.WriteText(w, "")
	}
}

func (r *Report) writeVerdict(w io.Writer) {
	fmt.Fprintf(w, "conform %s (%s on %s): %d facts, %d attempts, %d restarts\n",
		strings.Join(r.Files, " "), r.Policy, r.Engine, r.Facts, r.Attempts, r.Restarts)
	fmt.Fprintf(w, "search: at most %d unlogged steps between facts and %d unlogged faults per attempt; "+
		"the explanations took %d unlogged steps (longest gap %d) and %d unlogged faults; the bound was reached in %d attempts; at most %d attempts open at once\n",
		r.Bound, r.MaxFaults, r.Unlogged, r.LongestGap, r.FaultsUsed, r.BoundReached, r.PeakOpen)
	if r.ClockError != "" {
		fmt.Fprintf(w, "clock error: %s (every stamp within it of its step, on one clock the processes share): a fact stamped more than twice that before another process's is explained before it\n", r.ClockError)
	}
	x := r.Rejection
	if x == nil {
		if r.Props != "" {
			fmt.Fprintf(w, "verdict: explained: a behavior of the tables explains every fact, every invariant and every property of %s holding along it\n", r.Props)
			return
		}
		fmt.Fprintf(w, "verdict: explained: a behavior of the tables explains every fact, every invariant holding along it\n")
		return
	}
	fmt.Fprintf(w, "verdict: %s at %s:%d\n", r.Verdict, x.File, x.Line)
	fmt.Fprintf(w, "  fact: %s\n", x.Fact)
	switch {
	case x.Property != "":
		fmt.Fprintf(w, "  property: %s (%s)\n", x.Property, x.PropertyAt)
	case x.Invariant != "":
		fmt.Fprintf(w, "  invariant: %s\n", x.Invariant)
	}
	fmt.Fprintf(w, "  %s\n", x.Detail)
	if len(x.Allowed) > 0 {
		fmt.Fprintf(w, "  the tables allowed instead:\n")
		for _, a := range x.Allowed {
			fmt.Fprintf(w, "    %s\n", a)
		}
	}
	fmt.Fprintf(w, "  explained before it: %d facts of the logs", x.Prefix)
	if len(x.Explained) > 0 {
		fmt.Fprintf(w, "; the attempt's explained prefix:\n")
		for _, l := range x.Explained {
			fmt.Fprintf(w, "    %s\n", l)
		}
	} else {
		fmt.Fprintln(w)
	}
}
