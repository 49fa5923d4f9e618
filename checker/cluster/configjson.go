package cluster

import (
	"encoding/json"
	"math"

	"github.com/handoffcheck/handoffcheck/model"
)

// AttemptWorld is the world configuration of one attempt seen on its own:
// the attempt as the only handoff, its prefill worker as world worker 0
// and its decode worker, where the prompt finds hit tokens cached, as
// world worker 1. The conformance judge steps each attempt of a log in
// one, and the simulator and the live run step each request in one: the
// one constructor of a request's world.
func (c *Config) AttemptWorld(prompt, hit model.Tokens) *model.Config {
	return &model.Config{
		Policy: c.policy, Engine: c.Engine, Unbounded: true,
		Workers: []model.WorkerConfig{
			{Role: model.PrefillWorker, Capacity: c.Prefill.CapacityBlocks},
			{Role: model.DecodeWorker, Capacity: c.Decode.CapacityBlocks, Slots: c.Decode.Slots, Headroom: c.Decode.HeadroomTokens, PrefixHit: []model.Tokens{hit}},
		},
		Handoffs: []model.HandoffConfig{{PromptTokens: prompt, HeadroomTokens: c.HeadroomTokens}},
		Linear:   c.linear(), Grouped: c.Grouped, DecodeLinear: c.DecodeLinear, DecodeGrouped: c.DecodeGrouped,
	}
}

// linear is the prefill role's linear profile, nil when it is grouped.
func (c *Config) linear() *model.LinearProfile {
	if c.Grouped != nil {
		return nil
	}
	return &model.LinearProfile{BytesPerToken: c.Transfer.BytesPerToken, BlockSize: c.Transfer.BlockSize}
}

// JSON is the configuration in its file form (schema handoffcheck.sim/v1):
// ParseConfig reads it back to the same configuration.
func (c *Config) JSON() []byte {
	var f fileConfig
	ms := func(us int64) float64 { return float64(us) / 1000 }
	pms := func(us int64) *float64 { v := ms(us); return &v }
	f.Schema, f.Policy, f.Engine, f.Seed = ConfigSchemaV1, c.PolicyName(), c.Engine.String(), c.Seed
	f.Prefill.Workers, f.Prefill.CapacityBlocks, f.Prefill.TokensPerSec = c.Prefill.Workers, int64(c.Prefill.CapacityBlocks), c.Prefill.TokensPerSec
	f.Decode.Workers, f.Decode.CapacityBlocks, f.Decode.Slots = c.Decode.Workers, int64(c.Decode.CapacityBlocks), c.Decode.Slots
	f.Decode.HeadroomTokens, f.Decode.MsPerOutputToken = int64(c.Decode.HeadroomTokens), ms(c.Decode.PerTokenUS)
	f.Transfer.BytesPerToken, f.Transfer.BlockSizeTokens, f.Transfer.BandwidthGbps = int64(c.Transfer.BytesPerToken), int64(c.Transfer.BlockSize), c.BandwidthGbps
	if c.Grouped != nil {
		f.Transfer.BytesPerToken, f.Transfer.BlockSizeTokens, f.Transfer.Groups = 0, 0, c.Grouped.File()
	}
	switch {
	case c.DecodeGrouped != nil:
		f.Transfer.Decode = &fileDecode{Groups: c.DecodeGrouped.File()}
	case c.DecodeLinear != nil:
		f.Transfer.Decode = &fileDecode{BytesPerToken: int64(c.DecodeLinear.BytesPerToken), BlockSizeTokens: int64(c.DecodeLinear.BlockSize)}
	}
	hr := int64(c.HeadroomTokens)
	f.HeadroomTokensPerRequest = &hr
	f.Network.LatencyMs, f.Network.JitterMs = ms(c.LatencyUS), ms(c.JitterUS)
	f.Timers.LeaseMs, f.Timers.HeartbeatMs, f.Timers.BootstrapMs = pms(c.Timers.LeaseUS), pms(c.Timers.HeartbeatUS), pms(c.Timers.BootstrapUS)
	f.Timers.ReservationMs, f.Timers.TransferDeadlineMs = pms(c.Timers.ReservationUS), pms(c.Timers.TransferDeadlineUS)
	f.HealthCheckMs, f.CommandMs, f.SlowCoreMs, f.GraceMs, f.SampleMs = pms(c.HealthCheckUS), pms(c.CommandUS), pms(c.SlowCoreUS), pms(c.GraceUS), pms(c.SampleUS)
	f.Routers.Prefill, f.Routers.Decode = routerNames[c.PrefillRouter], routerNames[c.DecodeRouter]
	var names []string
	for k := model.CmdNone + 1; k < model.NumCmds; k++ {
		if c.Commands.Has(k) {
			names = append(names, k.String())
		}
	}
	if names == nil {
		names = []string{}
	}
	f.Commands, _ = json.Marshal(names)
	f.Renewal = &c.Renewal
	f.MaxRetries = c.MaxRetries
	f.AdoptCanonical = c.AdoptCanonical
	b, err := json.Marshal(f)
	if err != nil {
		panic("sim: a configuration does not marshal: " + err.Error())
	}
	return b
}

// The durations of the cluster, in microseconds, shared by every adapter
// that runs the machines on a clock (the simulator's virtual one, the
// live run's scaled wall clock).

// TimerUS is how long a model timer runs once armed.
func (c *Config) TimerUS(t model.Timer) int64 { return c.Timers.of(t) }

// ComputeUS is how long a prefill worker computes an attempt of world
// wc, alone.
func (c *Config) ComputeUS(wc *model.Config) int64 {
	q := wc.SourceQuote(0)
	return int64(math.Round(float64(q.TransferredTokens) * 1e6 / c.Prefill.TokensPerSec))
}

// TransferUS is how long the transfer of an attempt of world wc takes
// over the bandwidth, its network latency apart.
func (c *Config) TransferUS(wc *model.Config, prefixGone bool) int64 {
	q := wc.DestQuote(0, 1, prefixGone)
	return int64(math.Round(q.TransferMillis(c.BandwidthGbps) * 1000))
}

// DecodeUS is how long decode takes to produce n output tokens.
func (c *Config) DecodeUS(n model.Tokens) int64 { return int64(n) * c.Decode.PerTokenUS }
