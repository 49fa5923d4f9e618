package system

import (
	"fmt"
	"strings"

	"github.com/handoffcheck/handoffcheck/model"
)

// WriteSequenceStep writes move m as lines of a Mermaid sequenceDiagram
// whose participants are Client, PrefillRouter, DecodeRouter, Source,
// Transport and Destination: who did what, as the move kinds' table
// knows it, so that a report draws a counterexample without learning
// move kinds.
func (c *System) WriteSequenceStep(b *strings.Builder, m Move) {
	sideLane := func(a int8) string {
		if model.Side(a) == model.SourceSide {
			return "Source"
		}
		return "Destination"
	}
	h := fmt.Sprintf("h%d", m.H)
	switch m.Kind {
	case MvRoutePrefill:
		fmt.Fprintf(b, "    Client->>PrefillRouter: %s\n", h)
		fmt.Fprintf(b, "    PrefillRouter->>Source: route to worker %d (book ownership, compute load)\n", m.Arg)
	case mvDeliverRequest:
		fmt.Fprintf(b, "    PrefillRouter->>Source: %s request arrives\n", h)
	case MvRouteDecode:
		fmt.Fprintf(b, "    Client->>DecodeRouter: %s\n", h)
		fmt.Fprintf(b, "    DecodeRouter->>Destination: route to worker %d (book blocks)\n", m.Arg)
	case MvDeliver:
		fmt.Fprintf(b, "    Transport->>%s: %s %s\n", sideLane(m.Arg), h, m.Msg)
	case duplicate.Move():
		fmt.Fprintf(b, "    Transport->>%s: %s %s (duplicate, kept in flight)\n", sideLane(m.Arg), h, m.Msg)
	case loss.Move():
		fmt.Fprintf(b, "    Transport-x%s: %s %s lost\n", sideLane(m.Arg), h, m.Msg)
	case MvTransfer, transferFailure.Move():
		what := "KV transfer completes"
		if m.Kind == transferFailure.Move() {
			what = "KV transfer fails"
		}
		fmt.Fprintf(b, "    Source-->>Destination: %s %s\n", h, what)
	case Cancel.Move():
		fmt.Fprintf(b, "    Client->>Client: %s cancelled by the client\n", h)
	case mvDeliverCancel:
		fmt.Fprintf(b, "    Client->>%s: %s cancel on the request stream\n", sideLane(m.Arg), h)
	case Restart.Move():
		role := "Source"
		if c.World().Workers[m.Arg].Role == model.DecodeWorker {
			role = "Destination"
		}
		fmt.Fprintf(b, "    Note over %s: worker %d restarts (memory gone, generation +1)\n", role, m.Arg)
	default:
		// Moves local to one side: scheduler facts, timers, faults.
		at := "Source"
		switch m.Kind {
		case mvReserve, mvRefuse, MvPromote, mvDecodeFinish:
			at = "Destination"
		case MvTimer:
			at = sideLane(int8(model.Timer(m.Arg).Side()))
		case abort.Move(), mvPeerRestarted, mvDeferred:
			at = sideLane(m.Arg)
		case mvFreeBackground, backgroundLoad.Move():
			at = "Destination"
		}
		fmt.Fprintf(b, "    Note over %s: %s\n", at, m)
	}
}
