// Package cluster is what the three drivers (the simulator's virtual
// clock, the live run's processes, the conformance judge's logs) share
// about the cluster around the composed system: its configuration and
// JSON form, the routers, a workload's requests, a fault plan's faults,
// the world one request is stepped in, and the rules of the environment
// around it. The drivers differ only in when they take moves; none
// imports another.
package cluster

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
	"github.com/handoffcheck/handoffcheck/spec/jsonfile"
)

// ErrConfig is wrapped by every refusal of a simulation configuration.
var ErrConfig = errors.New("sim: bad configuration")

// ConfigSchemaV1 names the JSON form of a simulation configuration.
const ConfigSchemaV1 = "handoffcheck.sim/v1"

//go:embed default.json
var defaultConfig []byte

// DefaultConfigJSON is the embedded default configuration, as written.
func DefaultConfigJSON() []byte { return bytes.Clone(defaultConfig) }

// DefaultConfig is the configuration `simulate` runs without --config.
func DefaultConfig() *Config {
	c, err := ParseConfig("default.json", defaultConfig)
	if err != nil {
		panic("sim: the embedded default configuration is broken: " + err.Error())
	}
	return c
}

// Disabled is the policy name of the handoff design's Disabled mode:
// today's disaggregated path, without the lifecycle. Prefill computes on
// a prefill worker and frees its KV at completion (no pin), the modeled
// handoff delay passes, and decode allocates its blocks only when its
// scheduler admits it (no reservation): the legacy role tables
// (LegacySpec) on the prefill and decode workers.
const Disabled = "disabled"

// Aggregated is the policy name of serving without disaggregation: each
// request is prefilled and decoded on one (decode) worker. It leaves the
// configuration's handoff policy as it is: a non-disaggregated run does
// not depend on it (DisabledModeUnchanged).
const Aggregated = "aggregated"

// Config is a simulated cluster: its workers, the handoff policy and
// engine, the transfer pricing and speeds, the network, the timers and the
// routers. Times are in microseconds.
type Config struct {
	// Judge, when set, judges every state of a request's window after the
	// built-in invariants (system.Config.Judge): properties written in a
	// file, judged at each simulated step.
	Judge system.StateJudge
	// AdoptCanonical overrides whether the simulator applies canonical
	// block adoption at activation to its ledgers (its log's activated
	// facts say what was adopted; conform counts the shared blocks once).
	// Nil follows the engine (model.EngineTraits.Duplicates: vLLM
	// adopts); false turns it off; true asks for it, which an engine that
	// does not adopt at activation ignores (Adopts).
	AdoptCanonical *bool
	// Policy is a spec policy, or Disabled (the legacy disaggregated
	// path). Aggregated serves every request on one worker, whatever the
	// policy.
	Policy     string
	Aggregated bool
	policy     spec.Policy
	Engine     model.Engine
	Seed       uint64
	Prefill    PrefillPool
	Decode     DecodePool
	// Transfer prices the transfers with one bytes-per-token rate, unless
	// Grouped does with the KV cache groups of a hybrid model (vLLM's
	// grouped rules: checkpoints of state groups, windows of sliding
	// ones). DecodeLinear or DecodeGrouped gives the decode role a profile
	// of its own; with neither it shares the prefill role's.
	Transfer      model.LinearProfile
	Grouped       *model.GroupedProfile
	DecodeLinear  *model.LinearProfile
	DecodeGrouped *model.GroupedProfile
	// BandwidthGbps prices a transfer's time: its payload bytes over it.
	BandwidthGbps float64
	// HeadroomTokens is the admission headroom a reservation keeps per
	// request (SGLang: 512).
	HeadroomTokens model.Tokens
	// LatencyUS and JitterUS: a fact, a command answer or a routed request
	// arrives after the latency plus a uniform draw in [0, jitter).
	LatencyUS, JitterUS int64
	Timers              Timers
	// HealthCheckUS is how long a side takes to learn from health checks
	// that its peer's process restarted.
	HealthCheckUS int64
	// CommandUS is how long a scheduler core takes to apply a queued
	// command; SlowCoreUS how long while it has fallen behind (delay).
	CommandUS, SlowCoreUS int64
	// GraceUS is BoundedReclaim's stated grace.
	GraceUS int64
	// PrefillRouter and DecodeRouter are the routers' selection policies.
	PrefillRouter, DecodeRouter Router
	// Commands is the command path (checker configuration "commands").
	Commands system.Commands
	// Renewal lets destination heartbeats renew the source lease.
	Renewal bool
	// SampleUS is the timeline's sampling period.
	SampleUS int64
	// MaxRetries is how many more attempts the frontend makes at a
	// request whose handoff failed (not one the client cancelled).
	MaxRetries int
}

// PrefillPool is the prefill workers: how many, their pools and speed.
type PrefillPool struct {
	Workers        int
	CapacityBlocks model.Blocks
	// TokensPerSec is the prefill compute rate of one worker; a worker
	// computes one prefill at a time, in arrival order.
	TokensPerSec float64
}

// DecodePool is the decode workers.
type DecodePool struct {
	Workers        int
	CapacityBlocks model.Blocks
	Slots          int
	HeadroomTokens model.Tokens
	// PerTokenUS is the time one output token takes.
	PerTokenUS int64
}

// Timers are the deadlines and periods of the role machines
// (docs/lifecycle.md section 8 gives the engine defaults).
type Timers struct {
	LeaseUS, HeartbeatUS, BootstrapUS, ReservationUS, TransferDeadlineUS int64
}

// field is where a model timer's duration is kept: the one mapping of
// the model's timers onto the configuration's deadlines.
func (t *Timers) field(k model.Timer) *int64 {
	switch k {
	case model.TimerLease:
		return &t.LeaseUS
	case model.TimerBootstrap:
		return &t.BootstrapUS
	case model.TimerHeartbeat:
		return &t.HeartbeatUS
	case model.TimerReservation:
		return &t.ReservationUS
	}
	return &t.TransferDeadlineUS
}

// of is the duration of a model timer.
func (t *Timers) of(k model.Timer) int64 { return *t.field(k) }

// Set sets the duration of a model timer.
func (t *Timers) Set(k model.Timer, us int64) { *t.field(k) = us }

// fileConfig is the JSON form. Durations are in milliseconds.
type fileConfig struct {
	Schema  string `json:"schema"`
	Policy  string `json:"policy"`
	Engine  string `json:"engine"`
	Seed    uint64 `json:"seed"`
	Prefill struct {
		Workers        int     `json:"workers"`
		CapacityBlocks int64   `json:"capacity_blocks"`
		TokensPerSec   float64 `json:"tokens_per_sec"`
	} `json:"prefill"`
	Decode struct {
		Workers          int     `json:"workers"`
		CapacityBlocks   int64   `json:"capacity_blocks"`
		Slots            int     `json:"slots"`
		HeadroomTokens   int64   `json:"headroom_tokens"`
		MsPerOutputToken float64 `json:"ms_per_output_token"`
	} `json:"decode"`
	Transfer struct {
		BytesPerToken   int64             `json:"bytes_per_token,omitempty"`
		BlockSizeTokens int64             `json:"block_size_tokens,omitempty"`
		Groups          *model.GroupsFile `json:"groups,omitempty"`
		Decode          *fileDecode       `json:"decode,omitempty"`
		BandwidthGbps   float64           `json:"bandwidth_gbps"`
	} `json:"transfer"`
	HeadroomTokensPerRequest *int64 `json:"headroom_tokens_per_request"`
	Network                  struct {
		LatencyMs float64 `json:"latency_ms"`
		JitterMs  float64 `json:"jitter_ms"`
	} `json:"network"`
	Timers struct {
		LeaseMs            *float64 `json:"lease_ms"`
		HeartbeatMs        *float64 `json:"heartbeat_ms"`
		BootstrapMs        *float64 `json:"bootstrap_ms"`
		ReservationMs      *float64 `json:"reservation_ms"`
		TransferDeadlineMs *float64 `json:"transfer_deadline_ms"`
	} `json:"timers"`
	HealthCheckMs  *float64                         `json:"health_check_ms"`
	CommandMs      *float64                         `json:"command_ms"`
	SlowCoreMs     *float64                         `json:"slow_core_ms"`
	GraceMs        *float64                         `json:"grace_ms"`
	Routers        struct{ Prefill, Decode string } `json:"routers"`
	Commands       json.RawMessage                  `json:"commands"`
	Renewal        *bool                            `json:"renewal"`
	AdoptCanonical *bool                            `json:"adopt_canonical_blocks,omitempty"`
	SampleMs       *float64                         `json:"sample_ms"`
	MaxRetries     int                              `json:"max_retries"`
}

// Engine defaults (docs/lifecycle.md section 8): vLLM's lease is 30 s with
// heartbeats every 5 s; SGLang's bootstrap and decode waiting timeouts are
// 300 s and its health checks fail a peer after two missed 5 s polls.
const (
	defaultLeaseMs            = 30_000
	defaultHeartbeatMs        = 5_000
	defaultBootstrapMs        = 300_000
	defaultReservationMs      = 300_000
	defaultTransferDeadlineMs = 60_000
	defaultHealthCheckMs      = 10_000
	defaultCommandMs          = 0.05
	defaultSlowCoreMs         = 200
	defaultGraceMs            = 50
	defaultSampleMs           = 10
)

// us converts milliseconds to microseconds, rounding to the nearest.
func us(ms float64) int64 { return int64(math.Round(ms * 1000)) }

// ParseConfig reads a simulation configuration. Errors name the file and
// the line of the key they are about and say what was expected.
func ParseConfig(file string, data []byte) (*Config, error) {
	var f fileConfig
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, jsonfile.DecodeError(file, data, err, ErrConfig, fmt.Sprintf("a simulation configuration object with schema %q", ConfigSchemaV1))
	}
	if dec.More() {
		return nil, fmt.Errorf("%s:%d: %w: trailing data after the configuration object", file, jsonfile.Line(data, int(dec.InputOffset())), ErrConfig)
	}
	// encoding/json keeps the last of a key given twice: the first, which
	// a reader of the file may be looking at, would be ignored.
	if _, err := jsonfile.Scan(file, data, ErrConfig); err != nil {
		return nil, err
	}
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s:%d: %w: %s", file, jsonfile.LineOfKey(data, key, 0), ErrConfig, fmt.Sprintf(format, args...)))
	}
	if f.Schema != ConfigSchemaV1 {
		bad("schema", "schema %q, want %q", f.Schema, ConfigSchemaV1)
	}
	c := &Config{Seed: f.Seed}
	if err := c.SetPolicy(f.Policy); err != nil {
		bad("policy", "policy %q, want %s", f.Policy, policyNames)
	}
	e, err := model.ParseEngine(f.Engine)
	if err != nil {
		bad("engine", "%s", err)
	}
	c.Engine = e
	positive := func(key string, v float64, what string) {
		if !(v > 0) || math.IsInf(v, 0) {
			bad(key, "%s %v, want a number above 0", what, v)
		}
	}
	within := func(key string, v, lo, hi int64, what string) {
		if v < lo || v > hi {
			bad(key, "%s %d, want %d to %d", what, v, lo, hi)
		}
	}
	within("workers", int64(f.Prefill.Workers), 1, 64, "prefill workers")
	within("workers", int64(f.Decode.Workers), 1, 64, "decode workers")
	within("capacity_blocks", f.Prefill.CapacityBlocks, 1, int64(model.MaxSimCapacityBlocks), "prefill capacity_blocks")
	within("capacity_blocks", f.Decode.CapacityBlocks, 1, int64(model.MaxSimCapacityBlocks), "decode capacity_blocks")
	within("slots", int64(f.Decode.Slots), 1, model.MaxSimSlots, "decode slots")
	within("headroom_tokens", f.Decode.HeadroomTokens, 0, 1<<30, "decode headroom_tokens")
	positive("tokens_per_sec", f.Prefill.TokensPerSec, "prefill tokens_per_sec")
	positive("ms_per_output_token", f.Decode.MsPerOutputToken, "decode ms_per_output_token")
	profile := func(key string, bpt, bs int64, gf *model.GroupsFile, role string) (*model.LinearProfile, *model.GroupedProfile) {
		if gf != nil {
			if bpt != 0 || bs != 0 {
				what := "transfer"
				if role == "decode" {
					what = "transfer decode"
				}
				bad(key, "%s takes either groups or bytes_per_token with block_size_tokens, not both", what)
				return nil, nil
			}
			g, err := gf.Profile(role)
			if err != nil {
				bad(key, "%v", err)
				return nil, nil
			}
			return nil, g
		}
		within("bytes_per_token", bpt, 1, 1<<30, "transfer bytes_per_token")
		within("block_size_tokens", bs, 1, 1<<16, "transfer block_size_tokens")
		return &model.LinearProfile{BytesPerToken: model.Bytes(bpt), BlockSize: model.Tokens(bs)}, nil
	}
	if lin, g := profile("transfer", f.Transfer.BytesPerToken, f.Transfer.BlockSizeTokens, f.Transfer.Groups, "prefill"); lin != nil {
		c.Transfer = *lin
	} else if g != nil {
		c.Grouped = g
	}
	if d := f.Transfer.Decode; d != nil {
		c.DecodeLinear, c.DecodeGrouped = profile("decode", d.BytesPerToken, d.BlockSizeTokens, d.Groups, "decode")
	}
	positive("bandwidth_gbps", f.Transfer.BandwidthGbps, "transfer bandwidth_gbps")
	c.Prefill = PrefillPool{Workers: f.Prefill.Workers, CapacityBlocks: model.Blocks(f.Prefill.CapacityBlocks), TokensPerSec: f.Prefill.TokensPerSec}
	c.Decode = DecodePool{Workers: f.Decode.Workers, CapacityBlocks: model.Blocks(f.Decode.CapacityBlocks), Slots: f.Decode.Slots,
		HeadroomTokens: model.Tokens(f.Decode.HeadroomTokens), PerTokenUS: max(1, us(f.Decode.MsPerOutputToken))}
	c.BandwidthGbps = f.Transfer.BandwidthGbps
	c.HeadroomTokens = 512
	if f.HeadroomTokensPerRequest != nil {
		within("headroom_tokens_per_request", *f.HeadroomTokensPerRequest, 0, 1<<30, "headroom_tokens_per_request")
		c.HeadroomTokens = model.Tokens(*f.HeadroomTokensPerRequest)
	}
	nonNeg := func(key string, v float64, what string) int64 {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) || v > 1e9 {
			bad(key, "%s %v, want 0 to 1e9 milliseconds", what, v)
			return 0
		}
		return us(v)
	}
	opt := func(key string, p *float64, def float64, what string, positiveOnly bool) int64 {
		v := def
		if p != nil {
			v = *p
		}
		if positiveOnly && !(v > 0) {
			bad(key, "%s %v, want a duration above 0 milliseconds", what, v)
			return 1
		}
		return nonNeg(key, v, what)
	}
	c.LatencyUS = nonNeg("latency_ms", f.Network.LatencyMs, "network latency_ms")
	c.JitterUS = nonNeg("jitter_ms", f.Network.JitterMs, "network jitter_ms")
	c.Timers = Timers{
		LeaseUS:            opt("lease_ms", f.Timers.LeaseMs, defaultLeaseMs, "lease_ms", true),
		HeartbeatUS:        opt("heartbeat_ms", f.Timers.HeartbeatMs, defaultHeartbeatMs, "heartbeat_ms", true),
		BootstrapUS:        opt("bootstrap_ms", f.Timers.BootstrapMs, defaultBootstrapMs, "bootstrap_ms", true),
		ReservationUS:      opt("reservation_ms", f.Timers.ReservationMs, defaultReservationMs, "reservation_ms", true),
		TransferDeadlineUS: opt("transfer_deadline_ms", f.Timers.TransferDeadlineMs, defaultTransferDeadlineMs, "transfer_deadline_ms", true),
	}
	c.HealthCheckUS = opt("health_check_ms", f.HealthCheckMs, defaultHealthCheckMs, "health_check_ms", true)
	c.CommandUS = opt("command_ms", f.CommandMs, defaultCommandMs, "command_ms", false)
	c.SlowCoreUS = opt("slow_core_ms", f.SlowCoreMs, defaultSlowCoreMs, "slow_core_ms", false)
	c.GraceUS = opt("grace_ms", f.GraceMs, defaultGraceMs, "grace_ms", false)
	c.SampleUS = opt("sample_ms", f.SampleMs, defaultSampleMs, "sample_ms", true)
	var ok bool
	if c.PrefillRouter, ok = parseRouter(f.Routers.Prefill, LeastLoaded); !ok {
		bad("prefill", "prefill router %q, want one of %s", f.Routers.Prefill, routerList())
	}
	if c.DecodeRouter, ok = parseRouter(f.Routers.Decode, KVAware); !ok {
		bad("decode", "decode router %q, want one of %s", f.Routers.Decode, routerList())
	}
	if len(f.Commands) > 0 {
		cm, err := system.ParseCommands(f.Commands)
		if err != nil {
			bad("commands", "%s", err)
		}
		c.Commands = cm
	} else {
		c.Commands = system.Commands(1 << model.CmdActivate)
	}
	within("max_retries", int64(f.MaxRetries), 0, 10, "max_retries")
	c.MaxRetries = f.MaxRetries
	c.Renewal = true
	c.AdoptCanonical = f.AdoptCanonical
	if f.Renewal != nil {
		c.Renewal = *f.Renewal
	}
	if len(errs) == 0 {
		// The pair of profiles must be able to hand off, and a request's
		// world must price: a world of one prompt says so.
		if err := c.AttemptWorld(c.BlockSize(), 0).Prepare(); err != nil {
			bad("transfer", "%v", err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// fileDecode is the decode role's own transfer profile, in the form of
// the prefill role's.
type fileDecode struct {
	BytesPerToken   int64             `json:"bytes_per_token,omitempty"`
	BlockSizeTokens int64             `json:"block_size_tokens,omitempty"`
	Groups          *model.GroupsFile `json:"groups,omitempty"`
}

// PromptBlocks is what a prompt's KV takes on a worker that computes it:
// its pages under a linear profile; under a grouped one, the blocks of
// every group as vLLM's rules keep them while computing (a state group's
// checkpoints, a sliding window's window). An error says why the
// profile cannot price the prompt.
func (c *Config) PromptBlocks(prompt model.Tokens) (model.Blocks, error) {
	if c.Grouped == nil {
		return model.BlocksFor(prompt, c.Transfer.BlockSize), nil
	}
	wc := c.AttemptWorld(prompt, 0)
	if err := wc.Prepare(); err != nil {
		return 0, err
	}
	return wc.SourceQuote(0).ComputeBlocks, nil
}

// BlockSize is the tokens of one block of a prompt's KV as the prefix
// caches count it: the linear profile's page, or the block of the grouped
// profile's first full-attention group (the group whose whole blocks a
// destination's prefix hit is counted in).
// Adopts reports whether the simulator applies canonical block adoption
// at activation: the engine adopts at activation (vLLM), and the
// configuration did not turn it off.
func (c *Config) Adopts() bool {
	return c.Engine.Traits().Duplicates == model.AdoptsAtActivation && (c.AdoptCanonical == nil || *c.AdoptCanonical)
}

func (c *Config) BlockSize() model.Tokens {
	if c.Grouped == nil {
		return c.Transfer.BlockSize
	}
	for _, g := range c.Grouped.Groups {
		if g.Kind == model.FullAttention {
			return g.BlockSize
		}
	}
	return c.Grouped.Groups[0].BlockSize
}

// SpecPolicy is the spec policy of a handoff configuration.
func (c *Config) SpecPolicy() spec.Policy { return c.policy }

// NumWorkers is the prefill workers, then the decode workers.
func (c *Config) NumWorkers() int { return c.Prefill.Workers + c.Decode.Workers }

// Role is a worker's role: prefill workers are numbered first.
func (c *Config) Role(w int) model.WorkerRole {
	if w < c.Prefill.Workers {
		return model.PrefillWorker
	}
	return model.DecodeWorker
}

// Capacity is a worker's pool.
func (c *Config) Capacity(w int) model.Blocks {
	if w < c.Prefill.Workers {
		return c.Prefill.CapacityBlocks
	}
	return c.Decode.CapacityBlocks
}

// policyNames are the names SetPolicy takes, for its refusals.
const policyNames = "source-first, destination-first, " + Disabled + " or " + Aggregated

// SetPolicy sets the policy by name: a spec policy, Disabled (the legacy
// disaggregated path) or Aggregated (serving without disaggregation).
func (c *Config) SetPolicy(name string) error {
	switch name {
	case Aggregated:
		// Named on the command line or in a file, the lifecycle is off:
		// a driver that runs handoffs refuses Disabled, so it refuses
		// this too. Only a test sets Aggregated beside a spec policy.
		c.Policy, c.Aggregated = Disabled, true
		return nil
	case Disabled:
		c.Policy, c.Aggregated = name, false
		return nil
	}
	p, err := spec.ParsePolicy(name)
	if err != nil {
		return fmt.Errorf("%w: policy %q, want %s", ErrConfig, name, policyNames)
	}
	c.Policy, c.policy, c.Aggregated = name, p, false
	return nil
}

// PolicyName is the policy a run's report names: Aggregated for a run
// without disaggregation (whatever handoff policy it keeps), else Policy.
func (c *Config) PolicyName() string {
	if c.Aggregated {
		return Aggregated
	}
	return c.Policy
}
