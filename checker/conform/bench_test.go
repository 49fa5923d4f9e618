package conform

import (
	"bufio"
	"context"
	"flag"
	"fmt"
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
	cfg := sim.Loaded16()
	if err := cfg.SetPolicy(policy); err != nil {
		b.Fatal(err)
	}
	if policy == "destination-first" {
		cfg.Engine = model.SGLang
	}
	records := obslog.All
	if milestones {
		records = obslog.Of(obslog.Milestones()...) | obslog.Of(obslog.WorkerRestarted)
	}
	path := filepath.Join(os.TempDir(), "handoffcheck-bench-"+key+".jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	w, err := obslog.NewWriter(f, cfg.LogHeader(records))
	if err != nil {
		b.Fatal(err)
	}
	res, err := sim.Run(context.Background(), cfg, sim.Synthetic(1, *benchHandoffs, sim.SyntheticGapUS), sim.Options{Log: w})
	if err != nil || res.Violation != nil {
		b.Fatal(err, res.Violation)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	benchLogs.Store(key, path)
	return path
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
