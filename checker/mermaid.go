package checker

import (
	"fmt"
	"strings"

	"github.com/handoffcheck/handoffcheck/spec"
)

// mermaidSequence renders a counterexample as a Mermaid sequenceDiagram
// with one lane each for the client, the two routers, the source, the
// transport and the destination: who did what, in order, with the rows
// that fired as notes and the failing step marked.
func (c *Checker) mermaidSequence(ce *Counterexample) string {
	var b strings.Builder
	b.WriteString("sequenceDiagram\n")
	for _, p := range []string{"Client", "PrefillRouter", "DecodeRouter", "Source", "Transport", "Destination"} {
		fmt.Fprintf(&b, "    participant %s\n", p)
	}
	lane := func(r spec.Role) string {
		if r == spec.Source {
			return "Source"
		}
		return "Destination"
	}
	steps := append(append([]TraceStep(nil), ce.Steps...), ce.Loop...)
	for i, st := range steps {
		if i == len(ce.Steps) && len(ce.Loop) > 0 {
			b.WriteString("    loop never drains\n")
		}
		c.WriteSequenceStep(&b, st.Move)
		for _, f := range st.Fired {
			var sends []string
			for _, a := range f.Actions {
				if strings.HasPrefix(a.String(), "Send") {
					sends = append(sends, strings.TrimPrefix(a.String(), "Send"))
				}
			}
			fmt.Fprintf(&b, "    Note over %s: %s → %s (row %d)\n", lane(f.Role),
				c.Protocol().StateName(f.Role, f.From), c.Protocol().StateName(f.Role, f.To), f.Row)
			for _, msg := range sends {
				fmt.Fprintf(&b, "    %s->>Transport: h%d %s\n", lane(f.Role), f.Handoff, msg)
			}
		}
		if st.Failed {
			fmt.Fprintf(&b, "    Note over Client,Destination: VIOLATION %s\n", ce.Violation.Invariant)
		}
	}
	if len(ce.Loop) > 0 {
		b.WriteString("    end\n")
	}
	return b.String()
}
