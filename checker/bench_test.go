package checker

import (
	"context"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"
)

// benchDefault explores every run of the embedded default configuration
// once per iteration and reports rates over all of them. Run with
// -benchtime 1x: one iteration is the whole default job.
func benchDefault(b *testing.B, workers int, liveness bool) {
	cfg := defaultParsed()
	var checkers []*Checker
	for _, run := range cfg.Runs {
		c, err := New(system.Generated(), cfg, run)
		if err != nil {
			b.Fatal(err)
		}
		checkers = append(checkers, c)
	}
	b.ResetTimer()
	var states, trans int64
	var stored, fps int64
	for i := 0; i < b.N; i++ {
		for _, c := range checkers {
			r := c.checkRun(context.Background(), Limits{Workers: workers, Liveness: liveness}, nil)
			if !r.Complete || r.Violation != nil {
				b.Fatalf("%s: complete=%v violation=%v", c.Run().Name, r.Complete, r.Violation)
			}
			states += int64(r.Stats.States)
			trans += r.Stats.Transitions
			stored += r.Stats.StoreBytes
			fps += r.Stats.FingerprintBytes
		}
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(states)/sec, "states/s")
	b.ReportMetric(float64(trans)/sec, "transitions/s")
	b.ReportMetric(float64(stored)/float64(states), "store-bytes/state")
	b.ReportMetric(float64(fps)/float64(states), "fingerprint-bytes/state")
	b.ReportMetric(float64(states)/float64(b.N), "states")
}

func BenchmarkDefault_OneCore(b *testing.B)          { benchDefault(b, 1, false) }
func BenchmarkDefault_TwoCores(b *testing.B)         { benchDefault(b, 2, false) }
func BenchmarkDefault_TwoCoresLiveness(b *testing.B) { benchDefault(b, 2, true) }

// benchSymmetry explores a configuration of three interchangeable
// handoffs with and without symmetry reduction and reports the ratio of
// distinct states.
func BenchmarkSymmetry_ThreeHandoffs(b *testing.B) {
	cfg := mustConfig(b, threeHandoffs)
	plain := *cfg
	plain.Symmetry = false
	c, _ := New(system.Generated(), cfg, cfg.Runs[0])
	p, _ := New(system.Generated(), &plain, cfg.Runs[0])
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		with := c.checkRun(context.Background(), Limits{}, nil)
		without := p.checkRun(context.Background(), Limits{}, nil)
		b.ReportMetric(float64(without.Stats.States)/float64(with.Stats.States), "reduction")
		b.ReportMetric(float64(with.Stats.States), "states-with")
		b.ReportMetric(float64(without.Stats.States), "states-without")
	}
}

// BenchmarkVLLM_OneCore explores the default's vllm run, safety only, on
// one worker: the figure the memory and speed goals are stated against.
func BenchmarkVLLM_OneCore(b *testing.B) { benchVLLM(b, Limits{Workers: 1}) }

// BenchmarkVLLM_TwoCores is the same search on two workers: with
// BenchmarkVLLM_OneCore, how the explorer scales.
func BenchmarkVLLM_TwoCores(b *testing.B) { benchVLLM(b, Limits{Workers: 2}) }

// BenchmarkVLLM_OneCoreOnDisk is the same search with its fingerprints
// moved to disk at 10 million states (about a third of the way, where a
// bound of about 150 MiB would move them): the slowdown of the
// disk-backed visited set.
func BenchmarkVLLM_OneCoreOnDisk(b *testing.B) {
	benchVLLM(b, Limits{Workers: 1, DiskAfter: 10_000_000})
}

// BenchmarkVLLM_OneCoreReduced is the same search with partial-order
// reduction: compare its time per run (ns/op) with BenchmarkVLLM_OneCore's,
// since it has fewer states to count.
func BenchmarkVLLM_OneCoreReduced(b *testing.B) { benchVLLM(b, Limits{Workers: 1, Reduce: true}) }

// BenchmarkVLLM_OneCoreSleep adds sleep sets to the reduction: compare
// its ns/op and transitions with BenchmarkVLLM_OneCoreReduced's
// (docs/scale.md, "Sleep sets").
func BenchmarkVLLM_OneCoreSleep(b *testing.B) {
	benchVLLM(b, Limits{Workers: 1, Reduce: true, Sleep: true})
}

func benchVLLM(b *testing.B, lim Limits) {
	cfg := defaultParsed()
	c, err := New(system.Generated(), cfg, cfg.Runs[0])
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var states int64
	for i := 0; i < b.N; i++ {
		r := c.checkRun(context.Background(), lim, nil)
		if !r.Complete || r.Violation != nil {
			b.Fatalf("complete=%v violation=%v", r.Complete, r.Violation)
		}
		states += int64(r.Stats.States)
		b.ReportMetric(float64(r.Stats.DiskMerges), "merges")
	}
	b.ReportMetric(float64(states)/b.Elapsed().Seconds(), "states/s")
}

// BenchmarkVLLM_TwoCoresLiveness is the vllm run as the default job runs
// it: two workers and the liveness graph, EventuallyDrained judged.
func BenchmarkVLLM_TwoCoresLiveness(b *testing.B) {
	benchVLLM(b, Limits{Workers: 2, Liveness: true})
}
