package checker

import (
	"context"
	"testing"
)

// benchConfig is the default configuration cut to a size one benchmark
// iteration explores in about a second.
func benchRun(b *testing.B, workers int, liveness bool) {
	cfg := DefaultConfig()
	c, err := New(Generated(), cfg, cfg.Runs[0])
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var states int
	var trans int64
	for i := 0; i < b.N; i++ {
		r := c.Explore(context.Background(), Limits{Workers: workers, Liveness: liveness, MaxStates: 300000}, nil)
		states += r.Stats.States
		trans += r.Stats.Transitions
	}
	b.ReportMetric(float64(states)/b.Elapsed().Seconds(), "states/s")
	b.ReportMetric(float64(trans)/b.Elapsed().Seconds(), "transitions/s")
}

func BenchmarkExplore_OneCore(b *testing.B)  { benchRun(b, 1, false) }
func BenchmarkExplore_TwoCores(b *testing.B) { benchRun(b, 2, false) }
