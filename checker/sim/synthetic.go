package sim

import (
	"io"
	"math/rand/v2"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/model"
)

// syntheticSource makes requests on the fly, so that a long workload takes
// no memory: what a run holds is then its own.
type syntheticSource struct {
	rng   *rand.Rand
	n, i  int
	t     int64
	gapUS int64
}

// Synthetic is a seeded workload of n requests, made as they are read:
// arrivals a uniform draw in [0, 2·gapUS) apart, prompts of 64 to 4,063
// tokens, outputs of 1 to 256, half of them in one of eight prefix groups
// of up to 512 tokens. Benchmarks run it on Loaded16.
func Synthetic(seed uint64, n int, gapUS int64) cluster.Source {
	return &syntheticSource{rng: rand.New(rand.NewPCG(seed, 11)), n: n, gapUS: gapUS}
}

func (s *syntheticSource) Next() (cluster.Request, error) {
	if s.i == s.n {
		return cluster.Request{}, io.EOF
	}
	s.t += s.rng.Int64N(2 * s.gapUS)
	r := cluster.Request{Index: s.i, ArrivalUS: s.t, PromptTokens: model.Tokens(64 + s.rng.IntN(4000)), OutputTokens: model.Tokens(1 + s.rng.IntN(256)), CancelUS: -1}
	if g := s.rng.IntN(16); g < 8 {
		r.PrefixGroup = string(rune('a' + g))
		r.PrefixTokens = min(r.PromptTokens, 512)
	}
	s.i++
	return r, nil
}

// SyntheticGapUS is the mean gap between Synthetic's arrivals that loads
// Loaded16 to about 85%.
const SyntheticGapUS = 3000

// Loaded16 is 8 prefill and 8 decode workers, which a request every 3 ms
// on average (333 per second, 2,000-token prompts, 128-token outputs)
// loads to about 85% of their prefill compute and decode slots.
func Loaded16() *cluster.Config {
	cfg := cluster.DefaultConfig()
	cfg.Prefill.Workers, cfg.Decode.Workers = 8, 8
	cfg.Prefill.TokensPerSec = 100_000
	cfg.Prefill.CapacityBlocks = 32768
	cfg.Decode.Slots = 128
	cfg.Decode.CapacityBlocks = 32768
	return cfg
}
