package sim

import (
	"context"
	"flag"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/handoffcheck/handoffcheck/model"
)

// streamSource makes n requests on the fly, so that a long workload takes
// no memory: what the simulator holds is then its own.
type streamSource struct {
	rng   *rand.Rand
	n, i  int
	t     int64
	gapUS int64
}

func newStream(seed uint64, n int, gapUS int64) *streamSource {
	return &streamSource{rng: rand.New(rand.NewPCG(seed, 11)), n: n, gapUS: gapUS}
}

func (s *streamSource) Next() (Request, error) {
	if s.i == s.n {
		return Request{}, io.EOF
	}
	s.t += s.rng.Int64N(2 * s.gapUS)
	r := Request{Index: s.i, ArrivalUS: s.t, PromptTokens: model.Tokens(64 + s.rng.IntN(4000)), OutputTokens: model.Tokens(1 + s.rng.IntN(256)), CancelUS: -1}
	if g := s.rng.IntN(16); g < 8 {
		r.PrefixGroup = string(rune('a' + g))
		r.PrefixTokens = min(r.PromptTokens, 512)
	}
	s.i++
	return r, nil
}

// benchConfig is 8 prefill and 8 decode workers, which a request every
// 3 ms on average (333 per second, 2,000-token prompts, 128-token
// outputs) loads to about 85% of their prefill compute and decode slots.
func benchConfig() *Config {
	cfg := DefaultConfig()
	cfg.Prefill.Workers, cfg.Decode.Workers = 8, 8
	cfg.Prefill.TokensPerSec = 100_000
	cfg.Prefill.CapacityBlocks = 32768
	cfg.Decode.Slots = 128
	cfg.Decode.CapacityBlocks = 32768
	return cfg
}

// benchGapUS is the mean gap between arrivals of the benchmark workload.
const benchGapUS = 3000

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
				cfg := benchConfig()
				cfg.Policy = pol
				cfg.policy, _ = parsePolicy(pol)
				if pol == "destination-first" {
					cfg.Engine = model.SGLang
				}
				res, err := Run(context.Background(), cfg, newStream(1, *benchN, benchGapUS), Options{})
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
