package model

import (
	"errors"
	"fmt"

	"github.com/handoffcheck/handoffcheck/spec"
)

// ErrConfig is wrapped by every refusal of a world configuration.
var ErrConfig = errors.New("model: bad configuration")

// Bounds of a world. Worlds are fixed-size values so that cloning is a copy
// and exploring never allocates per state.
const (
	MaxHandoffs = 4
	MaxWorkers  = 5
)

// WorkerRole is what a worker serves.
type WorkerRole uint8

const (
	// PrefillWorker hosts source roles.
	PrefillWorker WorkerRole = iota
	// DecodeWorker hosts destination roles.
	DecodeWorker
)

func (r WorkerRole) String() string {
	if r == PrefillWorker {
		return "prefill"
	}
	return "decode"
}

// Engine is the decode engine's reservation behaviour (LIFECYCLE.md
// sections 1 and 8).
type Engine uint8

const (
	// VLLM reserves pages for the missing prompt without a request slot;
	// the slot is taken when the activated request is promoted to running.
	VLLM Engine = iota
	// SGLang reserves a request slot, the page-aligned delta pages and
	// admission headroom at once.
	SGLang
	// TRTLLM cannot reserve for a handoff and refuses.
	TRTLLM
)

var engineNames = [...]string{"vllm", "sglang", "trtllm"}

func (e Engine) String() string {
	if int(e) < len(engineNames) {
		return engineNames[e]
	}
	return fmt.Sprintf("Engine(%d)", uint8(e))
}

// ParseEngine reads an engine by name.
func ParseEngine(s string) (Engine, error) {
	for i, n := range engineNames {
		if n == s {
			return Engine(i), nil
		}
	}
	return 0, fmt.Errorf("%w: engine %q is not vllm, sglang or trtllm", ErrConfig, s)
}

// WorkerConfig describes one worker.
type WorkerConfig struct {
	Role     WorkerRole
	Capacity Blocks
	// Slots is the decode request-slot limit (ignored on prefill workers).
	Slots int
	// Headroom is the decode admission headroom in tokens (SGLang).
	Headroom Tokens
	// BackgroundBlocks and BackgroundSlots are the decode capacity other
	// requests hold: from the start when BackgroundAtStart is set, and
	// whenever the environment's background-load fault strikes; the
	// environment frees them later.
	BackgroundBlocks  Blocks
	BackgroundSlots   int
	BackgroundAtStart bool
	// PrefixHit is, per handoff, how many of its prompt tokens this decode
	// worker already caches. Missing entries are zero.
	PrefixHit []Tokens
}

// HandoffConfig describes one request handed off.
type HandoffConfig struct {
	PromptTokens Tokens
	// HeadroomTokens is the admission headroom a destination-first
	// reservation keeps for the request (SGLang: 512 per request).
	HeadroomTokens Tokens
}

// Config is the shape of a world: its workers, its handoffs, the policy,
// the decode engine and the transfer pricing.
type Config struct {
	Policy   spec.Policy
	Engine   Engine
	Workers  []WorkerConfig
	Handoffs []HandoffConfig
	// Exactly one of Linear and Grouped prices the transfers.
	Linear  *LinearProfile
	Grouped *GroupedProfile

	d derived
}

// derived holds what Prepare computes once, so that the hot path never
// prices anything.
type derived struct {
	ok        bool
	nPrefill  int
	prefill   [MaxWorkers]int // worker index of the i-th prefill worker
	decode    [MaxWorkers]int
	nDecode   int
	source    [MaxHandoffs]Quote
	dest      [MaxHandoffs][MaxWorkers]Quote // hit quotes per decode worker
	coldDest  [MaxHandoffs][MaxWorkers]Quote // after the prefix was lost
	locked    [MaxHandoffs][MaxWorkers]Blocks
	estimate  [MaxHandoffs]Blocks
	initCache [MaxWorkers]Blocks
}

// Prepare validates the configuration and prices every handoff on every
// decode worker. It must be called before NewWorld.
func (c *Config) Prepare() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...)))
	}
	if len(c.Handoffs) == 0 || len(c.Handoffs) > MaxHandoffs {
		bad("%d handoffs, want 1 to %d", len(c.Handoffs), MaxHandoffs)
	}
	if len(c.Workers) == 0 || len(c.Workers) > MaxWorkers {
		bad("%d workers, want 2 to %d", len(c.Workers), MaxWorkers)
	}
	if (c.Linear == nil) == (c.Grouped == nil) {
		bad("exactly one of a linear and a grouped transfer profile is needed")
	}
	if c.Grouped != nil {
		if err := c.Grouped.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Linear != nil && (c.Linear.BytesPerToken <= 0 || c.Linear.BlockSize <= 0) {
		bad("linear profile needs bytes_per_token and block_size_tokens > 0")
	}
	if c.Engine > TRTLLM {
		bad("unknown engine %d", c.Engine)
	}
	var d derived
	for i, w := range c.Workers {
		if i >= MaxWorkers {
			break
		}
		switch w.Role {
		case PrefillWorker:
			d.prefill[d.nPrefill] = i
			d.nPrefill++
		case DecodeWorker:
			d.decode[d.nDecode] = i
			d.nDecode++
			if w.Slots <= 0 {
				bad("decode worker %d: slots must be positive", i)
			}
		default:
			bad("worker %d: unknown role %d", i, w.Role)
		}
		if w.Capacity <= 0 || w.Capacity > 250 {
			bad("worker %d: capacity %d blocks, want 1 to 250", i, int64(w.Capacity))
		}
		if w.BackgroundBlocks < 0 || w.BackgroundBlocks > w.Capacity || w.BackgroundSlots < 0 || (w.Role == DecodeWorker && w.BackgroundSlots > w.Slots) {
			bad("worker %d: background load exceeds the worker", i)
		}
		if w.Slots > 15 || w.BackgroundSlots > 15 {
			bad("worker %d: at most 15 slots are modeled", i)
		}
		if w.Headroom < 0 {
			bad("worker %d: negative headroom", i)
		}
		if len(w.PrefixHit) > len(c.Handoffs) {
			bad("worker %d: prefix hits for %d handoffs, but there are %d", i, len(w.PrefixHit), len(c.Handoffs))
		}
		for h, hit := range w.PrefixHit {
			if hit < 0 {
				bad("worker %d: negative prefix hit for handoff %d", i, h)
			}
			if hit > 0 && w.Role != DecodeWorker {
				bad("worker %d: prefix hits apply to decode workers only", i)
			}
		}
	}
	if d.nPrefill == 0 || d.nDecode == 0 {
		bad("need at least one prefill and one decode worker")
	}
	for h, hc := range c.Handoffs {
		if h >= MaxHandoffs {
			break
		}
		if hc.PromptTokens <= 0 {
			bad("handoff %d: prompt must have at least one token", h)
		}
		if hc.HeadroomTokens < 0 {
			bad("handoff %d: negative headroom", h)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for h, hc := range c.Handoffs {
		q, err := c.price(hc.PromptTokens, 0)
		if err != nil {
			return err
		}
		d.source[h] = q
		d.estimate[h] = q.ComputeBlocks
		for i := 0; i < d.nDecode; i++ {
			w := d.decode[i]
			hit := Tokens(0)
			if h < len(c.Workers[w].PrefixHit) {
				hit = c.Workers[w].PrefixHit[h]
			}
			hq, err := c.price(hc.PromptTokens, hit)
			if err != nil {
				return err
			}
			d.dest[h][w] = hq
			d.coldDest[h][w] = q
			d.locked[h][w] = hq.LockedBlocks
			d.initCache[w] += d.locked[h][w]
		}
		for i := 0; i < d.nPrefill; i++ {
			p := d.prefill[i]
			if q.ComputeBlocks > c.Workers[p].Capacity {
				return fmt.Errorf("%w: handoff %d needs %d compute blocks, more than prefill worker %d has (%d)",
					ErrConfig, h, int64(q.ComputeBlocks), p, int64(c.Workers[p].Capacity))
			}
		}
	}
	for i := 0; i < d.nDecode; i++ {
		w := d.decode[i]
		if d.initCache[w]+c.Workers[w].BackgroundBlocks > c.Workers[w].Capacity && c.Workers[w].BackgroundAtStart {
			return fmt.Errorf("%w: decode worker %d: prefix cache and background (%d blocks) exceed its capacity %d",
				ErrConfig, w, int64(d.initCache[w]+c.Workers[w].BackgroundBlocks), int64(c.Workers[w].Capacity))
		}
		for h := range c.Handoffs {
			if need := d.locked[h][w] + d.dest[h][w].ReservedBlocks; need > c.Workers[w].Capacity {
				return fmt.Errorf("%w: handoff %d needs %d blocks on decode worker %d, more than its capacity %d",
					ErrConfig, h, int64(need), w, int64(c.Workers[w].Capacity))
			}
		}
	}
	d.ok = true
	c.d = d
	return nil
}

func (c *Config) price(n, hit Tokens) (Quote, error) {
	if c.Grouped != nil {
		return c.Grouped.Price(n, hit)
	}
	return c.Linear.Price(n, hit)
}

// NumHandoffs is the number of handoffs.
func (c *Config) NumHandoffs() int { return len(c.Handoffs) }

// NumWorkers is the number of workers.
func (c *Config) NumWorkers() int { return len(c.Workers) }

// PrefillWorkers lists the indices of the prefill workers.
func (c *Config) PrefillWorkers() []int { return c.d.prefill[:c.d.nPrefill] }

// DecodeWorkers lists the indices of the decode workers.
func (c *Config) DecodeWorkers() []int { return c.d.decode[:c.d.nDecode] }

// SourceQuote is the price of a handoff as the source sees it (no hit).
func (c *Config) SourceQuote(h int) Quote { return c.d.source[h] }

// DestQuote is the price of a handoff on a decode worker, with that
// worker's prefix hit (or without it once the prefix was lost).
func (c *Config) DestQuote(h, w int, prefixLost bool) Quote {
	if prefixLost {
		return c.d.coldDest[h][w]
	}
	return c.d.dest[h][w]
}

// Prepared reports whether Prepare succeeded.
func (c *Config) Prepared() bool { return c.d.ok }
