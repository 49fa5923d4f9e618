package checker

import (
	"fmt"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
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
	sideLane := func(a int8) string { return lane(spec.Role(a)) }
	steps := append(append([]TraceStep(nil), ce.Steps...), ce.Loop...)
	for i, st := range steps {
		if i == len(ce.Steps) && len(ce.Loop) > 0 {
			b.WriteString("    loop never drains\n")
		}
		m := st.Move
		h := fmt.Sprintf("h%d", m.H)
		switch m.Kind {
		case system.MvRoutePrefill:
			fmt.Fprintf(&b, "    Client->>PrefillRouter: %s\n", h)
			fmt.Fprintf(&b, "    PrefillRouter->>Source: route to worker %d (book ownership, compute load)\n", m.Arg)
		case system.MvDeliverRequest:
			fmt.Fprintf(&b, "    PrefillRouter->>Source: %s request arrives\n", h)
		case system.MvRouteDecode:
			fmt.Fprintf(&b, "    Client->>DecodeRouter: %s\n", h)
			fmt.Fprintf(&b, "    DecodeRouter->>Destination: route to worker %d (book blocks)\n", m.Arg)
		case system.MvDeliver:
			fmt.Fprintf(&b, "    Transport->>%s: %s %s\n", sideLane(m.Arg), h, m.Msg)
		case system.Duplicate.Move():
			fmt.Fprintf(&b, "    Transport->>%s: %s %s (duplicate, kept in flight)\n", sideLane(m.Arg), h, m.Msg)
		case system.Loss.Move():
			fmt.Fprintf(&b, "    Transport-x%s: %s %s lost\n", sideLane(m.Arg), h, m.Msg)
		case system.MvTransfer, system.TransferFailure.Move():
			what := "KV transfer completes"
			if m.Kind == system.TransferFailure.Move() {
				what = "KV transfer fails"
			}
			fmt.Fprintf(&b, "    Source-->>Destination: %s %s\n", h, what)
		case system.Cancel.Move():
			fmt.Fprintf(&b, "    Client->>Client: %s cancelled by the client\n", h)
		case system.MvDeliverCancel:
			fmt.Fprintf(&b, "    Client->>%s: %s cancel on the request stream\n", sideLane(m.Arg), h)
		case system.Restart.Move():
			role := "Source"
			if c.World().Workers[m.Arg].Role == model.DecodeWorker {
				role = "Destination"
			}
			fmt.Fprintf(&b, "    Note over %s: worker %d restarts (memory gone, generation +1)\n", role, m.Arg)
		default:
			// Moves local to one side: scheduler facts, timers, faults.
			at := "Source"
			switch m.Kind {
			case system.MvReserve, system.MvRefuse, system.MvPromote, system.MvDecodeFinish:
				at = "Destination"
			case system.MvTimer:
				at = lane(spec.Role(model.Timer(m.Arg).Side()))
			case system.Abort.Move(), system.MvPeerRestarted, system.MvDeferred:
				at = sideLane(m.Arg)
			case system.MvFreeBackground, system.BackgroundLoad.Move():
				at = "Destination"
			}
			fmt.Fprintf(&b, "    Note over %s: %s\n", at, m)
		}
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
