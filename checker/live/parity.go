package live

import (
	"fmt"
	"io"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
)

// Transitions are the lifecycle and accounting transitions of a run, as
// its processes logged them: per attempt, per role (router, prefill,
// decode), each fact in the order its process logged it, with its
// figures, without times, generations or which worker of the role. The
// heartbeats a source takes (lease_renewed) are left out: how many there
// are is a matter of time, and LiveReplayParity compares what happened,
// not when.
type Transitions map[string]map[string][]string

// ReadTransitions reads the transitions of the logs of one run (one log
// for the whole run, or one per process).
func ReadTransitions(logs map[string]io.Reader, names []string) (Transitions, error) {
	t := Transitions{}
	for _, name := range names {
		r, err := obslog.NewReader(logs[name], name)
		if err != nil {
			return nil, err
		}
		h := r.Header()
		for {
			f, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, err
			}
			if f.Attempt == "" || f.Kind == obslog.LeaseRenewed {
				continue
			}
			role := h.Processes[f.Proc].Role.String()
			if t[f.Attempt] == nil {
				t[f.Attempt] = map[string][]string{}
			}
			t[f.Attempt][role] = append(t[f.Attempt][role], factText(&f))
		}
	}
	return t, nil
}

func factText(f *obslog.Fact) string {
	var b strings.Builder
	b.WriteString(obslog.Kinds[f.Kind].Name)
	if f.Kind == obslog.Routed {
		if f.Stage == 0 {
			b.WriteString(" stage=prefill")
		} else {
			b.WriteString(" stage=decode")
		}
	}
	for _, g := range obslog.Kinds[f.Kind].Figures {
		if !f.HasFigure(g) {
			continue
		}
		switch g {
		case obslog.FigStage:
		case obslog.FigOutcome:
			fmt.Fprintf(&b, " outcome=%s", f.Outcome)
		case obslog.FigTimer:
			fmt.Fprintf(&b, " timer=%s", f.Timer)
		default:
			fmt.Fprintf(&b, " %s=%d", g, f.Figure(g))
		}
	}
	return b.String()
}
