package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/handoffcheck/handoffcheck/spec/jsonfile"
)

// GenConfig is what Generate draws a workload from. Its JSON form (the
// header's "generator") records it in the workload, without the seed,
// which is the header's own "seed".
type GenConfig struct {
	// Seed seeds the random draws: the same configuration and seed give
	// the same workload, byte for byte.
	Seed uint64 `json:"-"`
	// Requests is how many requests to draw (1 or more).
	Requests int `json:"requests"`
	// RatePerSec is the long-run mean arrival rate, in requests per
	// second of the virtual clock.
	RatePerSec float64 `json:"rate_per_sec"`
	// Arrival is how requests arrive: "poisson" (independent arrivals at
	// RatePerSec) or "bursty" (see BurstFactor).
	Arrival string `json:"arrival"`
	// Bursty arrivals are a Poisson process whose rate switches between
	// two levels: bursts of BurstOnMS at the high rate alternate with
	// quiet spells of BurstOffMS at the low rate, starting with a burst
	// at time 0. The high rate is BurstFactor times the low one, and the
	// low one is RatePerSec × (on+off) / (BurstFactor×on + off), so that
	// the long-run mean rate is RatePerSec. Zero values take the defaults
	// (DefaultBurstFactor, DefaultBurstOnMS, DefaultBurstOffMS); poisson
	// arrivals take none of them.
	BurstFactor float64 `json:"burst_factor,omitempty"`
	BurstOnMS   float64 `json:"burst_on_ms,omitempty"`
	BurstOffMS  float64 `json:"burst_off_ms,omitempty"`
	// Prompt and Output are the distributions of prompt_tokens and
	// output_tokens.
	Prompt Dist `json:"prompt"`
	Output Dist `json:"output"`
	// PrefixGroups is how many prefix groups there are (0: no request
	// shares a prefix). Each request joins one, chosen uniformly, with
	// probability PrefixShare. Each group draws its prefix length once
	// from PrefixTokens; a request's prefix_tokens is that length, cut to
	// its prompt.
	PrefixGroups int     `json:"prefix_groups,omitempty"`
	PrefixShare  float64 `json:"prefix_share,omitempty"`
	PrefixTokens Dist    `json:"prefix_tokens,omitzero"`
	// CancelFraction is the probability that the client cancels a
	// request; CancelAfter is the distribution of how long after the
	// arrival it does, in milliseconds. A cancel that would fall past
	// MaxMillis is left out.
	CancelFraction float64 `json:"cancel_fraction,omitempty"`
	CancelAfter    Dist    `json:"cancel_after,omitzero"`
}

// The defaults of the bursty arrival parameters.
const (
	DefaultBurstFactor = 4
	DefaultBurstOnMS   = 200
	DefaultBurstOffMS  = 800
)

// MaxPrefixGroups bounds GenConfig.PrefixGroups: the generator keeps one
// prefix length per group.
const MaxPrefixGroups = 1 << 16

// genStream is the second word of the PCG state, fixed so that the seed
// alone chooses the stream ("workload" in ASCII).
const genStream = 0x776f726b6c6f6164

// DefaultGen is the configuration of the embedded default workload: 200
// requests arriving as a Poisson process at 40 per second, prompts
// around 2048 tokens and outputs around 128, half the requests in one of
// 8 prefix groups, and 3% cancelled by the client 5 to 200 ms after they
// arrive. Long prompts make large transfers, several of them in flight
// at once, and the prefix hits and cancels race the handoffs: the load
// under which the memory a source-first handoff keeps pinned matters.
func DefaultGen() GenConfig {
	return GenConfig{
		Seed:           1,
		Requests:       200,
		RatePerSec:     40,
		Arrival:        "poisson",
		Prompt:         Dist{Kind: "lognormal", Mean: 2048, Sigma: 0.6, Min: 64, Max: 8192},
		Output:         Dist{Kind: "lognormal", Mean: 128, Sigma: 0.8, Min: 8, Max: 1024},
		PrefixGroups:   8,
		PrefixShare:    0.5,
		PrefixTokens:   Dist{Kind: "lognormal", Mean: 512, Sigma: 0.5, Min: 16, Max: 4096},
		CancelFraction: 0.03,
		CancelAfter:    Dist{Kind: "uniform", Min: 5, Max: 200},
	}
}

// Header is the header that records cfg in the workload Generate writes:
// its name, seed and parameters (defaults filled in).
func (cfg GenConfig) Header(name string) Header {
	g := cfg.withDefaults()
	return Header{Format: FormatV1, Name: name, Seed: cfg.Seed, HasSeed: true, Generator: &g}
}

// withDefaults fills in the bursty parameters left zero.
func (cfg GenConfig) withDefaults() GenConfig {
	if cfg.Arrival == "bursty" {
		if cfg.BurstFactor == 0 {
			cfg.BurstFactor = DefaultBurstFactor
		}
		if cfg.BurstOnMS == 0 {
			cfg.BurstOnMS = DefaultBurstOnMS
		}
		if cfg.BurstOffMS == 0 {
			cfg.BurstOffMS = DefaultBurstOffMS
		}
	}
	return cfg
}

// GenError is a refusal of a generator configuration: the field, by its
// JSON name, and what is wrong with it, phrased to follow the name
// ("-1, want a positive number of requests per second"), so that a
// command can name its own flag instead.
type GenError struct {
	Field   string
	Problem string
}

func (e *GenError) Error() string { return e.Field + " " + e.Problem }

// Unwrap makes a GenError an ErrWorkload.
func (e *GenError) Unwrap() error { return ErrWorkload }

func genError(field, format string, args ...any) error {
	return &GenError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// Validate says what is wrong with cfg (the bursty defaults filled in),
// as a *GenError, or nil.
func (cfg GenConfig) Validate() error {
	cfg = cfg.withDefaults()
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case cfg.Requests < 1:
		return genError("requests", "%d, want 1 or more", cfg.Requests)
	case !(cfg.RatePerSec > 0) || !finite(cfg.RatePerSec):
		return genError("rate_per_sec", "%v, want a positive number of requests per second", cfg.RatePerSec)
	}
	switch cfg.Arrival {
	case "poisson":
		for _, f := range []struct {
			name string
			v    float64
		}{{"burst_factor", cfg.BurstFactor}, {"burst_on_ms", cfg.BurstOnMS}, {"burst_off_ms", cfg.BurstOffMS}} {
			if f.v != 0 {
				return genError(f.name, "%v applies to bursty arrivals only; want it left out with poisson arrivals", f.v)
			}
		}
	case "bursty":
		switch {
		case !(cfg.BurstFactor >= 1 && cfg.BurstFactor <= 1e6):
			return genError("burst_factor", "%v, want 1 to 1000000 (the rate in a burst over the rate between bursts)", cfg.BurstFactor)
		case !(cfg.BurstOnMS >= 0.001 && cfg.BurstOnMS <= MaxMillis):
			return genError("burst_on_ms", "%v, want 0.001 to %d milliseconds", cfg.BurstOnMS, MaxMillis)
		case !(cfg.BurstOffMS >= 0.001 && cfg.BurstOffMS <= MaxMillis):
			return genError("burst_off_ms", "%v, want 0.001 to %d milliseconds", cfg.BurstOffMS, MaxMillis)
		}
	default:
		return genError("arrival", "%q, want poisson or bursty", cfg.Arrival)
	}
	if err := cfg.Prompt.checkTokens("prompt", 1); err != nil {
		return err
	}
	if err := cfg.Output.checkTokens("output", 1); err != nil {
		return err
	}
	switch {
	case cfg.PrefixGroups < 0 || cfg.PrefixGroups > MaxPrefixGroups:
		return genError("prefix_groups", "%d, want 0 to %d", cfg.PrefixGroups, MaxPrefixGroups)
	case cfg.PrefixGroups == 0 && cfg.PrefixShare != 0:
		return genError("prefix_share", "%v needs prefix_groups above 0; want it left out without prefix groups", cfg.PrefixShare)
	case cfg.PrefixGroups == 0 && cfg.PrefixTokens != (Dist{}):
		return genError("prefix_tokens", "%s needs prefix_groups above 0; want it left out without prefix groups", cfg.PrefixTokens)
	case cfg.PrefixGroups > 0 && !(cfg.PrefixShare > 0 && cfg.PrefixShare <= 1):
		return genError("prefix_share", "%v, want a probability above 0, at most 1", cfg.PrefixShare)
	}
	if cfg.PrefixGroups > 0 {
		if err := cfg.PrefixTokens.checkTokens("prefix_tokens", 1); err != nil {
			return err
		}
	}
	switch {
	case !(cfg.CancelFraction >= 0 && cfg.CancelFraction <= 1):
		return genError("cancel_fraction", "%v, want a probability from 0 to 1", cfg.CancelFraction)
	case cfg.CancelFraction == 0 && cfg.CancelAfter != (Dist{}):
		return genError("cancel_after", "%s needs cancel_fraction above 0; want it left out without cancels", cfg.CancelAfter)
	case cfg.CancelFraction > 0:
		if cfg.CancelAfter == (Dist{}) {
			return genError("cancel_after", "missing, want the distribution of the time from arrival to cancel, in milliseconds")
		}
		if why := cfg.CancelAfter.check(); why != "" {
			return genError("cancel_after", "%s", why)
		}
	}
	return nil
}

// decodeGenerator reads the header's record of a generator configuration.
func decodeGenerator(raw json.RawMessage) (GenConfig, error) {
	var g GenConfig
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		var de *distError
		if errors.As(err, &de) {
			return g, de
		}
		return g, errors.New(jsonfile.Clean(err))
	}
	if err := g.Validate(); err != nil {
		return g, errors.New(err.Error())
	}
	return g, nil
}

// Generate draws the workload cfg describes and writes it to w, one
// request at a time: its memory does not grow with cfg.Requests. Requests
// have no id; prefix groups are named g0, g1, ...
//
// The draws come from math/rand/v2's PCG seeded with cfg.Seed, so the
// same configuration gives the same workload, byte for byte. (Lognormal
// draws go through math.Exp and math.Log, whose last bit may differ
// between processor architectures; the rounding to whole tokens and
// microseconds hides that but for a draw on the edge.)
func Generate(cfg GenConfig, w *Writer) error {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, genStream))
	prefix := make([]int, cfg.PrefixGroups)
	for g := range prefix {
		prefix[g] = cfg.PrefixTokens.tokens(rng, 1)
	}
	arr := newArrivals(cfg)
	for i := range cfg.Requests {
		at := arr.next(rng)
		us, ok := MillisToMicros(at)
		if !ok {
			return fmt.Errorf("%w: request %d would arrive at %.0f ms, past the %d ms a workload may last; want a higher rate_per_sec or fewer requests",
				ErrWorkload, i, at, MaxMillis)
		}
		r := Request{Index: i, ArrivalUS: us}
		r.PromptTokens = cfg.Prompt.tokens(rng, 1)
		r.OutputTokens = cfg.Output.tokens(rng, 1)
		if cfg.PrefixGroups > 0 && rng.Float64() < cfg.PrefixShare {
			g := rng.Int64N(int64(cfg.PrefixGroups))
			r.PrefixGroup = "g" + strconv.FormatInt(g, 10)
			r.PrefixTokens = min(prefix[g], r.PromptTokens)
		}
		if cfg.CancelFraction > 0 && rng.Float64() < cfg.CancelFraction {
			after, ok := MillisToMicros(cfg.CancelAfter.sample(rng))
			if ok && after <= MaxMicros-us {
				r.CancelUS, r.HasCancel = us+after, true
			}
		}
		if err := w.Write(r); err != nil {
			return err
		}
	}
	return nil
}

// arrivals draws arrival times, in milliseconds: a Poisson process whose
// rate is constant (poisson) or switches between a burst rate and a quiet
// rate (bursty). A draw takes one exponential variate of unit mean and
// spends it against the rate over time, which is exact for a rate that is
// constant piecewise.
type arrivals struct {
	t    float64 // the last arrival
	rate float64 // the mean rate, per millisecond
	// Bursty only:
	bursty          bool
	onRate, offRate float64 // per millisecond
	on, off         float64 // phase lengths, ms
	inBurst         bool
	end             float64 // the end of the current phase
	cycleWork       float64 // onRate×on + offRate×off: the work of one whole cycle
}

func newArrivals(cfg GenConfig) *arrivals {
	a := &arrivals{rate: cfg.RatePerSec / 1000}
	if cfg.Arrival == "bursty" {
		a.bursty = true
		a.on, a.off = cfg.BurstOnMS, cfg.BurstOffMS
		a.offRate = a.rate * (a.on + a.off) / (float64(cfg.BurstFactor*a.on) + a.off)
		a.onRate = cfg.BurstFactor * a.offRate
		a.cycleWork = float64(a.onRate*a.on) + float64(a.offRate*a.off)
		a.inBurst, a.end = true, a.on
	}
	return a
}

func (a *arrivals) next(rng *rand.Rand) float64 {
	e := rng.ExpFloat64()
	if !a.bursty {
		a.t += e / a.rate
		return a.t
	}
	for {
		rate := a.offRate
		if a.inBurst {
			rate = a.onRate
		}
		// The float64 conversions keep products from being fused with
		// the sums around them, which some processors would round
		// differently.
		work := float64(rate * (a.end - a.t))
		if e <= work {
			a.t += e / rate
			return a.t
		}
		e -= work
		a.t, a.inBurst = a.end, !a.inBurst
		if a.inBurst {
			// At the start of a cycle: skip the whole cycles the
			// variate spans at once, however small the rate.
			if k := math.Floor(e / a.cycleWork); k > 0 {
				a.t += float64(k * (a.on + a.off))
				e = max(e-float64(k*a.cycleWork), 0)
			}
			a.end = a.t + a.on
		} else {
			a.end = a.t + a.off
		}
	}
}

// Dist is a distribution of lengths (tokens) or durations (milliseconds).
type Dist struct {
	// Kind is "fixed", "uniform" or "lognormal"; "" is no distribution.
	Kind string
	// Mean is the value of a fixed distribution, and the mean of a
	// lognormal one before it is clamped.
	Mean float64
	// Min and Max are the range of a uniform distribution, and the
	// bounds a lognormal draw is clamped to (Max 0: no upper bound).
	Min, Max float64
	// Sigma is the standard deviation of the logarithm of a lognormal
	// draw: 0.5 keeps most draws within a factor of 2.7 of the median.
	Sigma float64
}

// MaxSigma bounds a lognormal distribution's Sigma.
const MaxSigma = 10

// distSyntax is what ParseDist accepts.
const distSyntax = "fixed:V, uniform:MIN-MAX or lognormal:mean=M,sigma=S[,min=A][,max=B]"

// distError is a refusal of a distribution's text.
type distError struct{ text, why string }

func (e *distError) Error() string { return fmt.Sprintf("distribution %q: %s", e.text, e.why) }

func (e *distError) Unwrap() error { return ErrWorkload }

// ParseDist reads a distribution: "fixed:512", "uniform:128-4096",
// "lognormal:mean=1024,sigma=0.8,min=16,max=8192" (min and max are
// optional). Numbers are plain decimals, 0 or more.
func ParseDist(s string) (Dist, error) {
	bad := func(format string, args ...any) (Dist, error) {
		return Dist{}, &distError{text: s, why: fmt.Sprintf(format, args...)}
	}
	num := func(v string) (float64, bool) {
		x, err := strconv.ParseFloat(v, 64)
		return x, err == nil && x >= 0 && !math.IsInf(x, 0)
	}
	kind, rest, ok := strings.Cut(s, ":")
	if !ok {
		return bad("want %s", distSyntax)
	}
	d := Dist{Kind: kind}
	switch kind {
	case "fixed":
		x, ok := num(rest)
		if !ok {
			return bad("value %q, want a number, 0 or more", rest)
		}
		d.Mean = x
	case "uniform":
		lo, hi, ok := strings.Cut(rest, "-")
		if !ok {
			return bad("want uniform:MIN-MAX")
		}
		if d.Min, ok = num(lo); !ok {
			return bad("min %q, want a number, 0 or more", lo)
		}
		if d.Max, ok = num(hi); !ok {
			return bad("max %q, want a number, 0 or more", hi)
		}
	case "lognormal":
		seen := map[string]bool{}
		for _, kv := range strings.Split(rest, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return bad("%q, want key=value (keys mean, sigma, min, max)", kv)
			}
			if seen[k] {
				return bad("%s given twice", k)
			}
			seen[k] = true
			x, ok := num(v)
			if !ok {
				return bad("%s %q, want a number, 0 or more", k, v)
			}
			switch k {
			case "mean":
				d.Mean = x
			case "sigma":
				d.Sigma = x
			case "min":
				d.Min = x
			case "max":
				d.Max = x
			default:
				return bad("unknown key %q, want mean, sigma, min or max", k)
			}
		}
		if !seen["mean"] || !seen["sigma"] {
			return bad("want mean and sigma: lognormal:mean=M,sigma=S[,min=A][,max=B]")
		}
	default:
		return bad("kind %q, want %s", kind, distSyntax)
	}
	if why := d.check(); why != "" {
		return bad("%s", why)
	}
	return d, nil
}

// String writes d in the syntax ParseDist reads.
func (d Dist) String() string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	switch d.Kind {
	case "fixed":
		return "fixed:" + f(d.Mean)
	case "uniform":
		return "uniform:" + f(d.Min) + "-" + f(d.Max)
	case "lognormal":
		s := "lognormal:mean=" + f(d.Mean) + ",sigma=" + f(d.Sigma)
		if d.Min != 0 {
			s += ",min=" + f(d.Min)
		}
		if d.Max != 0 {
			s += ",max=" + f(d.Max)
		}
		return s
	}
	return d.Kind
}

// MarshalText writes d as String does, so that a generator configuration
// reads as the command line that made it.
func (d Dist) MarshalText() ([]byte, error) {
	if why := d.check(); why != "" {
		return nil, &distError{text: d.String(), why: why}
	}
	return []byte(d.String()), nil
}

// UnmarshalText reads d as ParseDist does.
func (d *Dist) UnmarshalText(b []byte) error {
	v, err := ParseDist(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// check says what is wrong with a distribution, or "".
func (d Dist) check() string {
	ok := func(x float64) bool { return x >= 0 && x <= math.MaxFloat64 }
	if !ok(d.Mean) || !ok(d.Min) || !ok(d.Max) || !ok(d.Sigma) {
		return "want finite numbers, 0 or more"
	}
	switch d.Kind {
	case "fixed":
		if d.Min != 0 || d.Max != 0 || d.Sigma != 0 {
			return "a fixed distribution has only a value"
		}
	case "uniform":
		if d.Mean != 0 || d.Sigma != 0 {
			return "a uniform distribution has only min and max"
		}
		if d.Min > d.Max {
			return fmt.Sprintf("min %v above max %v", d.Min, d.Max)
		}
	case "lognormal":
		switch {
		case d.Mean <= 0:
			return "mean 0, want a positive mean"
		case d.Sigma > MaxSigma:
			return fmt.Sprintf("sigma %v, want 0 to %d", d.Sigma, MaxSigma)
		case d.Max != 0 && d.Min > d.Max:
			return fmt.Sprintf("min %v above max %v", d.Min, d.Max)
		case d.Mean < d.Min || (d.Max != 0 && d.Mean > d.Max):
			return fmt.Sprintf("mean %v outside min %v to max %v", d.Mean, d.Min, d.Max)
		}
	case "":
		return "missing, want " + distSyntax
	default:
		return fmt.Sprintf("kind %q, want %s", d.Kind, distSyntax)
	}
	return ""
}

// checkTokens checks a distribution of token counts: every value it can
// give, rounded, within lo to MaxTokens (a lognormal is clamped there).
func (d Dist) checkTokens(field string, lo int) error {
	if why := d.check(); why != "" {
		return genError(field, "%s", why)
	}
	in := func(x float64) bool { return x >= float64(lo) && x <= MaxTokens }
	switch d.Kind {
	case "fixed":
		if !in(math.Round(d.Mean)) {
			return genError(field, "%s gives %v tokens, want %d to %d", d, math.Round(d.Mean), lo, MaxTokens)
		}
	case "uniform":
		if !in(math.Ceil(d.Min)) || !in(math.Floor(d.Max)) || math.Ceil(d.Min) > math.Floor(d.Max) {
			return genError(field, "%s, want whole token counts within %d to %d", d, lo, MaxTokens)
		}
	case "lognormal":
		if (d.Min != 0 && !in(d.Min)) || (d.Max != 0 && !in(d.Max)) {
			return genError(field, "%s, want min and max within %d to %d tokens", d, lo, MaxTokens)
		}
	}
	return nil
}

// sample draws one value.
func (d Dist) sample(rng *rand.Rand) float64 {
	switch d.Kind {
	case "uniform":
		return d.Min + float64(rng.Float64()*(d.Max-d.Min))
	case "lognormal":
		mu := math.Log(d.Mean) - float64(d.Sigma*d.Sigma)/2
		x := math.Exp(mu + float64(d.Sigma*rng.NormFloat64()))
		if x < d.Min {
			x = d.Min
		}
		if d.Max != 0 && x > d.Max {
			x = d.Max
		}
		return x
	}
	return d.Mean
}

// tokens draws a token count within lo to MaxTokens: a uniform one among
// the whole counts of its range, the others rounded.
func (d Dist) tokens(rng *rand.Rand, lo int) int {
	var x float64
	if d.Kind == "uniform" {
		a, b := int64(math.Ceil(d.Min)), int64(math.Floor(d.Max))
		x = float64(a + rng.Int64N(b-a+1))
	} else {
		x = math.Round(d.sample(rng))
	}
	return int(min(max(x, float64(lo)), MaxTokens))
}
