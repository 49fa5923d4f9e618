package conform

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/sim"
	"github.com/handoffcheck/handoffcheck/model"
)

var benchHandoffs = flag.Int("handoffs", 100_000, "handoffs in BenchmarkConform's logs")

var benchLogs sync.Map // name → path

// benchLog writes, once per run, the log the simulator writes for
// *benchHandoffs requests of the synthetic workload on Loaded16, keeping
// the kinds in records.
func benchLog(b *testing.B, policy string, milestones bool) string {
	key := fmt.Sprintf("%s-%v-%d", policy, milestones, *benchHandoffs)
	if p, ok := benchLogs.Load(key); ok {
		return p.(string)
	}
	path := filepath.Join(os.TempDir(), "handoffcheck-bench-"+key+".jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	writeSimLog(b, f, policy, milestones, *benchHandoffs)
	benchLogs.Store(key, path)
	return path
}

// writeSimLog writes to out the log the simulator writes for n requests
// of the synthetic workload on Loaded16 (destination-first on SGLang),
// complete or milestones only.
func writeSimLog(tb testing.TB, out io.Writer, policy string, milestones bool, n int) {
	cfg := sim.Loaded16()
	if err := cfg.SetPolicy(policy); err != nil {
		tb.Fatal(err)
	}
	if policy == "destination-first" {
		cfg.Engine = model.SGLang
	}
	records := obslog.All
	if milestones {
		records = obslog.Of(obslog.Milestones()...) | obslog.Of(obslog.WorkerRestarted)
	}
	w, err := obslog.NewWriter(out, cfg.LogHeader(records))
	if err != nil {
		tb.Fatal(err)
	}
	res, err := sim.Run(context.Background(), cfg, sim.Synthetic(1, n, sim.SyntheticGapUS), sim.Options{Log: w})
	if err != nil || res.Violation != nil {
		tb.Fatal(err, res.Violation)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkConform judges the log of 100,000 handoffs (-handoffs N for
// another count), complete and milestones only, and reports lines per
// second.
func BenchmarkConform(b *testing.B) {
	for _, pol := range []string{"source-first", "destination-first"} {
		for _, ms := range []bool{false, true} {
			name := pol + "/complete"
			if ms {
				name = pol + "/milestones"
			}
			b.Run(name, func(b *testing.B) {
				path := benchLog(b, pol, ms)
				var facts int
				for b.Loop() {
					f, err := os.Open(path)
					if err != nil {
						b.Fatal(err)
					}
					rep, err := Judge([]Input{{Name: path, R: bufio.NewReaderSize(f, 1<<16)}}, Options{})
					f.Close()
					if err != nil {
						b.Fatal(err)
					}
					if rep.Verdict != Explained {
						b.Fatalf("%s: %+v", rep.Verdict, rep.Rejection)
					}
					facts += rep.Facts
				}
				b.ReportMetric(float64(facts)/b.Elapsed().Seconds(), "lines/s")
			})
		}
	}
}
