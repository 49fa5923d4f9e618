package model

import (
	"errors"
	"fmt"
	"strings"

	"github.com/handoffcheck/handoffcheck/spec"
	"github.com/handoffcheck/handoffcheck/spec/jsonfile"
)

// ErrConfig is wrapped by every refusal of a world configuration.
var ErrConfig = errors.New("model: bad configuration")

// Bounds of a world. Worlds are fixed-size values so that cloning is a copy
// and exploring never allocates per state.
const (
	// MaxHandoffs bounds the handoffs of a configuration: 1 to 4.
	MaxHandoffs = 4
	// MaxWorkers bounds the workers of a configuration: 2 to 5, at least
	// one prefill and one decode worker (worker indices are packed in
	// three bits).
	MaxWorkers = 5
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

// Engine is a decode engine (docs/lifecycle.md sections 1 and 8). What the
// model does with an engine follows from its traits in Engines: no code
// asks which engine it is.
type Engine uint8

const (
	// VLLM reserves pages without a request slot.
	VLLM Engine = iota
	// SGLang reserves a slot, pages and headroom at once.
	SGLang
	// TRTLLM cannot reserve.
	TRTLLM
	// NumEngines is the number of engines.
	NumEngines
)

// EngineTraits is how a decode engine reserves destination memory for a
// handoff.
type EngineTraits struct {
	// Name names the engine in configurations and reports.
	Name string
	// CanReserve: the decode scheduler grants a queued reservation when it
	// fits. An engine that cannot refuses every reservation instead: a
	// handoff that needs one ends cleanly, in failure.
	CanReserve bool
	// SlotAtReservation: a reservation takes a request slot at once.
	// Without it, the activated request takes a slot when it is promoted
	// to running.
	SlotAtReservation bool
	// PageAligned: a reservation holds the page-aligned delta that the
	// worker's prefix cache lacks, in whole pages. The model prices
	// reservations only so: an engine that reserves must have it.
	PageAligned bool
	// HeadroomAtReservation: a reservation also holds the request's
	// admission headroom, until the pages are freed.
	HeadroomAtReservation bool
	// Duplicates is what the engine does with received blocks equal to
	// blocks it already holds (the same prompt prefix computed for
	// another request).
	Duplicates Adoption
	// Meaning is how the engine reserves, in one line.
	Meaning string
}

// Adoption is how a decode engine treats a received block whose content
// it already holds: it keeps one canonical block and frees the duplicate,
// at some moment of its own, or keeps both.
type Adoption uint8

const (
	// KeepsDuplicates: the engine keeps both copies until each request's
	// blocks are freed.
	KeepsDuplicates Adoption = iota
	// AdoptsAtActivation: when the received KV is activated, a block
	// whose content the destination already holds is replaced by the
	// destination's canonical block, and the received duplicate is freed
	// at once (vLLM's block pool caches one block per content hash).
	AdoptsAtActivation
	// FreesAtRadixInsert: the duplicate is freed when the request's KV is
	// inserted into the engine's radix cache, when the request finishes
	// (sglang), not at activation.
	FreesAtRadixInsert
)

var adoptionNames = [...]string{"keeps both", "adopts at activation", "frees at radix insert"}

func (a Adoption) String() string {
	if int(a) < len(adoptionNames) {
		return adoptionNames[a]
	}
	return fmt.Sprintf("Adoption(%d)", uint8(a))
}

// ExemptFromFaultFreeCompletion reports whether FaultFreeCompletion spares
// the engine: one that cannot reserve fails every handoff cleanly by design.
func (t *EngineTraits) ExemptFromFaultFreeCompletion() bool { return !t.CanReserve }

// Engines is the engine vocabulary, indexed by Engine.
var Engines = [NumEngines]EngineTraits{
	VLLM: {Name: "vllm", CanReserve: true, PageAligned: true, Duplicates: AdoptsAtActivation,
		Meaning: "reserves pages for the missing prompt without a request slot; the slot is taken when the activated request is promoted to running"},
	SGLang: {Name: "sglang", CanReserve: true, SlotAtReservation: true, PageAligned: true, HeadroomAtReservation: true, Duplicates: FreesAtRadixInsert,
		Meaning: "reserves a request slot, the page-aligned delta pages and admission headroom at once"},
	TRTLLM: {Name: "trtllm",
		Meaning: "cannot reserve destination memory for a handoff and refuses"},
}

func init() {
	for e := range Engines {
		if t := &Engines[e]; !t.wellFormed() {
			panic(fmt.Sprintf("model: engine %d (%q) needs a name, and page-aligned reservations if it reserves", e, t.Name))
		}
	}
}

// wellFormed reports whether an entry of the engine table can be used: it
// has a name, and an engine that reserves does so in whole pages (the
// reservation arithmetic assumes it).
func (t *EngineTraits) wellFormed() bool { return t.Name != "" && (!t.CanReserve || t.PageAligned) }

// Traits are the engine's traits. The engine must be known (Prepare checks).
func (e Engine) Traits() *EngineTraits { return &Engines[e] }

// Known reports whether the engine is in Engines.
func (e Engine) Known() bool { return e < NumEngines }

func (e Engine) String() string {
	if e.Known() {
		return Engines[e].Name
	}
	return fmt.Sprintf("Engine(%d)", uint8(e))
}

// EngineNames lists the engine names, in Engine order.
func EngineNames() []string {
	names := make([]string, NumEngines)
	for e := range Engines {
		names[e] = Engines[e].Name
	}
	return names
}

// ParseEngine reads an engine by name.
func ParseEngine(s string) (Engine, error) {
	for e := range Engines {
		if Engines[e].Name == s {
			return Engine(e), nil
		}
	}
	names := EngineNames()
	list := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	return 0, fmt.Errorf("%w: engine %q is not %s", ErrConfig, s, list)
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
	// DecodeLinear or DecodeGrouped gives the decode role a profile of its
	// own (at most one; with neither, the decode role shares the prefill
	// role's). The pair must be able to hand off (Topology.Check), and a
	// destination's quotes are priced by the decode role's profile.
	DecodeLinear  *LinearProfile
	DecodeGrouped *GroupedProfile
	// Unbounded lifts the limits that packing a world into a key needs
	// (MaxCapacityBlocks, MaxSlots): a world that is only simulated,
	// never explored, may be as large as a real worker. Counters must
	// still fit their types (MaxSimCapacityBlocks, MaxSimSlots).
	Unbounded bool
	// DeferAdmission makes a prefill's admission a step of its own: a
	// dispatched prefill always queues, and the scheduler admits it later
	// (checker move admit). A judge of logs sets it, since no fact says
	// whether a worker queued a prefill for room; a world that is
	// explored or simulated admits at dispatch when it can.
	DeferAdmission bool

	d derived
	// outside is what requests outside the world hold on each worker
	// (SetOutside): zero for an explored world.
	outside [MaxWorkers]holdings
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
//
// Its error joins one *jsonfile.Problem per defect, located in the
// configuration file's form (checker's handoffcheck.config/v1): a worker's
// key as ["workers", i, "capacity_blocks"], a handoff's as ["handoffs", h,
// "prompt_tokens"], the lists as ["workers"] and ["handoffs"], the
// transfer as ["transfer"] (["transfer", "decode"] for the decode role's
// profile, ["transfer", "groups", ...] for a grouped one's values), and
// the engine as ["engine"]. A reader places a problem by its path, never
// by its wording.
func (c *Config) Prepare() error {
	var errs []*jsonfile.Problem
	bad := func(path []any, format string, args ...any) {
		errs = append(errs, jsonfile.Problemf(ErrConfig, path, format, args...))
	}
	// under adds the problems of a profile, whose paths are in the groups
	// file's form, at where that profile is in the configuration.
	under := func(err error, prefix ...any) {
		probs, ok := jsonfile.ProblemsOf(err)
		if !ok {
			bad(prefix, "%s", err)
		}
		for _, p := range probs {
			errs = append(errs, p.Under(prefix...))
		}
	}
	worker := func(i int, key ...any) []any { return append([]any{"workers", i}, key...) }
	handoff := func(h int, key ...any) []any { return append([]any{"handoffs", h}, key...) }
	// The paths are made where a problem is found: a configuration that
	// has none (every attempt's world a judge of logs prepares) makes none.
	transfer := func() []any { return []any{"transfer"} }
	decodeTransfer := func() []any { return []any{"transfer", "decode"} }
	// Every message opens with its subject ("worker 1", "handoff 0",
	// "workers", "handoffs", "transfer"), numbered from 0 as reports name
	// them, so that a person reading it knows which entry it is about.
	if len(c.Handoffs) == 0 || len(c.Handoffs) > MaxHandoffs {
		bad([]any{"handoffs"}, "handoffs: %d given, want 1 to %d", len(c.Handoffs), MaxHandoffs)
	}
	workerCount := len(c.Workers) >= 2 && len(c.Workers) <= MaxWorkers
	if !workerCount {
		bad([]any{"workers"}, "workers: %d given, want 2 to %d (at least one prefill and one decode worker)", len(c.Workers), MaxWorkers)
	}
	if (c.Linear == nil) == (c.Grouped == nil) {
		bad(transfer(), "transfer: exactly one of a linear and a grouped transfer profile is needed")
	}
	if c.Grouped != nil {
		if err := c.Grouped.Validate(); err != nil {
			under(err, "transfer", "groups")
		}
	}
	if c.Linear != nil && (c.Linear.BytesPerToken <= 0 || c.Linear.BlockSize <= 0) {
		bad(transfer(), "transfer: a linear profile needs bytes_per_token and block_size_tokens > 0")
	}
	switch {
	case c.DecodeLinear != nil && c.DecodeGrouped != nil:
		bad(decodeTransfer(), "transfer: the decode role takes one profile, linear or grouped, not both")
	case c.DecodeGrouped != nil:
		if err := c.DecodeGrouped.Validate(); err != nil {
			under(err, "transfer", "decode", "groups")
		}
	case c.DecodeLinear != nil && (c.DecodeLinear.BytesPerToken <= 0 || c.DecodeLinear.BlockSize <= 0):
		bad(decodeTransfer(), "transfer: the decode role's linear profile needs bytes_per_token and block_size_tokens > 0")
	}
	if len(errs) == 0 && (c.Linear == nil) != (c.Grouped == nil) {
		// A pair that cannot hand off is the decode role's profile's
		// fault: with none, the decode role shares the prefill role's.
		if err := c.topology().Check(); err != nil {
			bad(decodeTransfer(), "transfer: %s", detail(err))
		}
	}
	if !c.Engine.Known() {
		bad([]any{"engine"}, "engine: unknown engine %d", c.Engine)
	}
	// The derived values are made in c.d itself, once the configuration
	// is valid: a judge of logs prepares a configuration per attempt's
	// size, and a copy of them is kilobytes. Until then only the roles'
	// lists are kept, here.
	var roles struct {
		prefill, decode   [MaxWorkers]int
		nPrefill, nDecode int
	}
	for i, w := range c.Workers {
		if i >= MaxWorkers {
			break
		}
		switch w.Role {
		case PrefillWorker:
			roles.prefill[roles.nPrefill] = i
			roles.nPrefill++
		case DecodeWorker:
			roles.decode[roles.nDecode] = i
			roles.nDecode++
		default:
			bad(worker(i, "role"), "worker %d: unknown role %d", i, w.Role)
		}
		// A limit that is itself wrong is reported alone: the background
		// load is judged only against a valid capacity and slot count.
		maxCap, maxSlots := MaxCapacityBlocks, MaxSlots
		if c.Unbounded {
			maxCap, maxSlots = MaxSimCapacityBlocks, MaxSimSlots
		}
		capacityOK := w.Capacity > 0 && w.Capacity <= maxCap
		if !capacityOK {
			bad(worker(i, "capacity_blocks"), "worker %d: capacity_blocks %d, want 1 to %d", i, int64(w.Capacity), int64(maxCap))
		}
		slotsOK := w.Role != DecodeWorker || (w.Slots > 0 && w.Slots <= maxSlots)
		if !slotsOK {
			bad(worker(i, "slots"), "worker %d: slots %d, want 1 to %d", i, w.Slots, maxSlots)
		}
		switch {
		case w.BackgroundBlocks < 0 || w.BackgroundSlots < 0:
			negative := "background_blocks"
			if w.BackgroundBlocks >= 0 {
				negative = "background_slots"
			}
			bad(worker(i, negative), "worker %d: background load of %d blocks and %d slots, want neither negative", i, int64(w.BackgroundBlocks), w.BackgroundSlots)
		case capacityOK && w.BackgroundBlocks > w.Capacity:
			bad(worker(i, "background_blocks"), "worker %d: background_blocks %d, more than its capacity of %d blocks", i, int64(w.BackgroundBlocks), int64(w.Capacity))
		case w.Role == DecodeWorker && slotsOK && w.BackgroundSlots > w.Slots:
			bad(worker(i, "background_slots"), "worker %d: background_slots %d, more than its %d slots", i, w.BackgroundSlots, w.Slots)
		case w.BackgroundSlots > maxSlots:
			bad(worker(i, "background_slots"), "worker %d: background_slots %d, want 0 to %d", i, w.BackgroundSlots, maxSlots)
		}
		if w.Headroom < 0 {
			bad(worker(i, "headroom_tokens"), "worker %d: headroom_tokens %d, want 0 or more", i, int64(w.Headroom))
		}
		if len(w.PrefixHit) > len(c.Handoffs) {
			// The first entry past the handoffs is the one too many.
			bad(worker(i, "prefix_hit_tokens", len(c.Handoffs)), "worker %d: prefix hits for %d handoffs, but there are %d", i, len(w.PrefixHit), len(c.Handoffs))
		}
		for h, hit := range w.PrefixHit {
			at := func() []any { return worker(i, "prefix_hit_tokens", h) }
			switch {
			case hit < 0:
				bad(at(), "worker %d: prefix hit of %d tokens for handoff %d, want 0 or more", i, int64(hit), h)
			case hit > 0 && w.Role != DecodeWorker:
				bad(at(), "worker %d: prefix hit for handoff %d on a prefill worker: prefix hits apply to decode workers only", i, h)
			case h < len(c.Handoffs) && c.Handoffs[h].PromptTokens > 0 && hit > c.Handoffs[h].PromptTokens:
				// A cache holds at most the whole prompt; a larger hit
				// would be priced as more reuse than the prompt has.
				bad(at(), "worker %d: prefix hit of %d tokens for handoff %d, more than its prompt of %d tokens", i, int64(hit), h, int64(c.Handoffs[h].PromptTokens))
			}
		}
	}
	if workerCount && (roles.nPrefill == 0 || roles.nDecode == 0) {
		bad([]any{"workers"}, "workers: %d prefill and %d decode, want at least one of each", roles.nPrefill, roles.nDecode)
	}
	for h, hc := range c.Handoffs {
		if h >= MaxHandoffs {
			break
		}
		if hc.PromptTokens <= 0 {
			bad(handoff(h, "prompt_tokens"), "handoff %d: prompt_tokens %d, want at least 1", h, int64(hc.PromptTokens))
		}
		if hc.HeadroomTokens < 0 {
			bad(handoff(h, "headroom_tokens"), "handoff %d: headroom_tokens %d, want 0 or more", h, int64(hc.HeadroomTokens))
		}
	}
	if len(errs) > 0 {
		return jsonfile.JoinProblems(errs)
	}
	// A configuration that fails below is not prepared.
	d := &c.d
	// Prepared before with these workers' roles and as many handoffs (a
	// judge of logs prepares one per attempt's size), every entry the
	// pricing below does not write is zero already, and the kilobytes are
	// not cleared again: only the sums start over. A handoff priced has a
	// prompt of at least one token, so its quote says which were.
	sameShape := d.ok && d.prefill == roles.prefill && d.decode == roles.decode && d.nPrefill == roles.nPrefill && d.nDecode == roles.nDecode
	for h := range d.source {
		sameShape = sameShape && (d.source[h].PromptTokens > 0) == (h < len(c.Handoffs))
	}
	if sameShape {
		d.ok = false
		for i := 0; i < d.nDecode; i++ {
			d.initCache[d.decode[i]] = 0
		}
	} else {
		*d = derived{}
		d.prefill, d.decode, d.nPrefill, d.nDecode = roles.prefill, roles.decode, roles.nPrefill, roles.nDecode
	}
	// From here on the first problem stops the pricing: the rest would
	// follow from it.
	fail := func(path []any, format string, args ...any) error {
		return jsonfile.Problemf(ErrConfig, path, format, args...)
	}
	for h, hc := range c.Handoffs {
		q, err := c.price(hc.PromptTokens, 0)
		if err != nil {
			return fail(handoff(h), "handoff %d: %s", h, detail(err))
		}
		d.source[h] = q
		d.estimate[h] = q.ComputeBlocks
		for i := 0; i < d.nDecode; i++ {
			w := d.decode[i]
			hit := Tokens(0)
			if h < len(c.Workers[w].PrefixHit) {
				hit = c.Workers[w].PrefixHit[h]
			}
			hq, err := c.priceDest(hc.PromptTokens, hit)
			if err != nil {
				return fail(handoff(h), "handoff %d: %s", h, detail(err))
			}
			d.dest[h][w] = hq
			// Without a hit the cold quote is the same pricing
			// (quotes are only read, so they may share their groups).
			cold := hq
			if hit != 0 {
				cold, err = c.priceDest(hc.PromptTokens, 0)
				if err != nil {
					return fail(handoff(h), "handoff %d: %s", h, detail(err))
				}
			}
			d.coldDest[h][w] = cold
			d.locked[h][w] = hq.LockedBlocks
			d.initCache[w] += d.locked[h][w]
		}
		for i := 0; i < d.nPrefill; i++ {
			p := d.prefill[i]
			if q.ComputeBlocks > c.Workers[p].Capacity {
				return fail(worker(p, "capacity_blocks"), "worker %d: handoff %d needs %d compute blocks, more than its capacity of %d",
					p, h, int64(q.ComputeBlocks), int64(c.Workers[p].Capacity))
			}
		}
	}
	for i := 0; i < d.nDecode; i++ {
		w := d.decode[i]
		// The prefix caches are in the pool from the start, and so is the
		// background load when it starts held: together they must fit,
		// or the initial state already overcommits the pool.
		atStart, what := d.initCache[w], "prefix cache"
		if c.Workers[w].BackgroundAtStart {
			atStart, what = atStart+c.Workers[w].BackgroundBlocks, "prefix cache and background load at start"
		}
		if atStart > c.Workers[w].Capacity {
			return fail(worker(w, "capacity_blocks"), "worker %d: %s (%d blocks) exceed its capacity of %d",
				w, what, int64(atStart), int64(c.Workers[w].Capacity))
		}
		for h := range c.Handoffs {
			if need := d.locked[h][w] + d.dest[h][w].ReservedBlocks; need > c.Workers[w].Capacity {
				return fail(worker(w, "capacity_blocks"), "worker %d: handoff %d needs %d blocks, more than its capacity of %d",
					w, h, int64(need), int64(c.Workers[w].Capacity))
			}
		}
	}
	d.ok = true
	return nil
}

// detail is what a refusal says without its sentinel, to be told as part
// of another's message.
func detail(err error) string {
	if p, ok := err.(*jsonfile.Problem); ok {
		return p.Msg
	}
	return err.Error()
}

func (c *Config) price(n, hit Tokens) (Quote, error) {
	if c.Grouped != nil {
		return c.Grouped.Price(n, hit)
	}
	return c.Linear.Price(n, hit)
}

// priceDest prices a handoff as the decode role sees it: by its own
// profile when it has one.
func (c *Config) priceDest(n, hit Tokens) (Quote, error) {
	switch {
	case c.DecodeGrouped != nil:
		return c.DecodeGrouped.Price(n, hit)
	case c.DecodeLinear != nil:
		return c.DecodeLinear.Price(n, hit)
	}
	return c.price(n, hit)
}

// topology is the pair of profiles, the decode role's defaulting to the
// prefill role's.
func (c *Config) topology() Topology {
	t := Topology{PrefillLinear: c.Linear, PrefillGrouped: c.Grouped, DecodeLinear: c.DecodeLinear, DecodeGrouped: c.DecodeGrouped}
	if t.DecodeLinear == nil && t.DecodeGrouped == nil {
		t.DecodeLinear, t.DecodeGrouped = t.PrefillLinear, t.PrefillGrouped
	}
	return t
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
