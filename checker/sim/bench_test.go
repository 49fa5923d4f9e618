package sim

import (
	"context"
	"flag"
	"testing"

	"github.com/handoffcheck/handoffcheck/model"
)

// benchN is the benchmark workload's length: -requests N runs another,
// to show that memory does not grow with it.
var benchN = flag.Int("requests", 100_000, "requests in BenchmarkSimulate_100k's workload")

// BenchmarkSimulate_100k runs 100,000 requests on 8 prefill and 8 decode
// workers and reports events per second.
func BenchmarkSimulate_100k(b *testing.B) {
	for _, pol := range []string{"source-first", "destination-first"} {
		b.Run(pol, func(b *testing.B) {
			var events uint64
			for b.Loop() {
				cfg := Loaded16()
				cfg.Policy = pol
				_ = cfg.SetPolicy(pol)
				if pol == "destination-first" {
					cfg.Engine = model.SGLang
				}
				res, err := Run(context.Background(), cfg, Synthetic(1, *benchN, SyntheticGapUS), Options{})
				if err != nil {
					b.Fatal(err)
				}
				if res.Violation != nil {
					b.Fatal(res.Violation)
				}
				events += res.Summary.Events
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
