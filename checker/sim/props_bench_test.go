package sim

import (
	"context"
	"io"
	"os"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/props"
	"github.com/handoffcheck/handoffcheck/checker/sim/workload"
	"github.com/handoffcheck/handoffcheck/model"
)

// defaultRequests is the embedded default workload, as simulate reads it.
func defaultRequests(tb testing.TB) []cluster.Request {
	tb.Helper()
	rd := workload.Default()
	var out []cluster.Request
	for {
		q, err := rd.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			tb.Fatal(err)
		}
		r := cluster.Request{Index: q.Index, ID: q.ID, ArrivalUS: q.ArrivalUS, PromptTokens: model.Tokens(q.PromptTokens),
			OutputTokens: model.Tokens(q.OutputTokens), PrefixGroup: q.PrefixGroup, PrefixTokens: model.Tokens(q.PrefixTokens), CancelUS: -1}
		if q.HasCancel {
			r.CancelUS = q.CancelUS
		}
		out = append(out, r)
	}
}

// BenchmarkSimulate_Props runs the default configuration and workload
// (what `simulate` runs) without properties, with the clock question
// (one leads_to within, testdata/props/questions.clock.props), with
// questions.props (an always implication and two sometimes properties
// never reached, so judged at every step), and with an always property
// alone as simulate judged it before the clock (always-only: at every
// step, no clock) and as it judges it now (always: with its vacuity on
// the clock). The file is compiled once, outside the loop.
func BenchmarkSimulate_Props(b *testing.B) {
	reqs := defaultRequests(b)
	for _, tc := range []struct {
		name, file string
		noClock    bool
	}{
		{"none", "", false},
		{"clock", "../../testdata/props/questions.clock.props", false},
		{"questions", "../../testdata/props/questions.props", false},
		{"always-only", "../../testdata/props/release-before-activation.props", true},
		{"always", "../../testdata/props/release-before-activation.props", false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var set *props.Set
			if tc.file != "" {
				data, err := os.ReadFile(tc.file)
				if err != nil {
					b.Fatal(err)
				}
				if set, err = props.Load(tc.file, data); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				cfg := cluster.DefaultConfig()
				var opt Options
				if set != nil {
					cfg.Judge = set
					if !tc.noClock {
						opt.Props = props.NewClock(set)
					}
				}
				res, err := Run(context.Background(), cfg, &SliceSource{Reqs: reqs}, opt)
				if err != nil {
					b.Fatal(err)
				}
				if res.Violation != nil {
					b.Fatal(res.Violation)
				}
			}
		})
	}
}
