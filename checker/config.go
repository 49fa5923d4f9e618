package checker

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
	"github.com/handoffcheck/handoffcheck/spec/jsonfile"
)

// ErrConfig is wrapped by every refusal of a checker configuration.
var ErrConfig = errors.New("checker: bad configuration")

// ConfigSchemaV1 names the JSON form of a configuration.
const ConfigSchemaV1 = "handoffcheck.config/v1"

//go:embed default.json
var defaultConfig []byte

//go:embed mutation.json
var mutationConfig []byte

// MutationConfigJSON is the configuration mutants are checked against by
// default: small enough to check hundreds of mutants in a minute, with
// every fault kind, so that a mutant survives only if it is equivalent or
// the invariants miss what it breaks.
func MutationConfigJSON() []byte { return bytes.Clone(mutationConfig) }

// DefaultConfigJSON is the embedded default configuration, as written.
func DefaultConfigJSON() []byte { return bytes.Clone(defaultConfig) }

// DefaultConfig is the embedded default configuration that `make check` runs.
func DefaultConfig() *Config {
	c, err := ParseConfig("default.json", defaultConfig)
	if err != nil {
		panic("checker: the embedded default configuration is broken: " + err.Error())
	}
	return c
}

// Run is one exploration: a policy with a decode engine.
type Run struct {
	Name   string
	Policy spec.Policy
	Engine model.Engine
}

// Config is what one `check` explores: the runs, the world they share, and
// what the environment may do.
type Config struct {
	Runs     []Run
	World    model.Config // Policy and Engine are set per run
	Budget   Budget
	Renewal  bool // destination heartbeats renew the source lease
	Symmetry bool // reduce by interchangeable handoffs and workers
}

type fileConfig struct {
	Schema   string          `json:"schema"`
	Runs     []fileRun       `json:"runs"`
	Workers  []fileWorker    `json:"workers"`
	Handoffs []fileHandoff   `json:"handoffs"`
	Transfer fileTransfer    `json:"transfer"`
	Faults   map[string]uint `json:"faults"`
	Renewal  *bool           `json:"renewal"`
	Symmetry *bool           `json:"symmetry"`
}

type fileRun struct {
	Name   string `json:"name"`
	Policy string `json:"policy"`
	Engine string `json:"engine"`
}

type fileWorker struct {
	Role             string         `json:"role"`
	Capacity         model.Blocks   `json:"capacity_blocks"`
	Slots            int            `json:"slots"`
	Headroom         model.Tokens   `json:"headroom_tokens"`
	BackgroundBlocks model.Blocks   `json:"background_blocks"`
	BackgroundSlots  int            `json:"background_slots"`
	BackgroundStart  *bool          `json:"background_at_start"`
	PrefixHit        []model.Tokens `json:"prefix_hit_tokens"`
}

type fileHandoff struct {
	PromptTokens   model.Tokens `json:"prompt_tokens"`
	HeadroomTokens model.Tokens `json:"headroom_tokens"`
}

type fileTransfer struct {
	BytesPerToken model.Bytes       `json:"bytes_per_token"`
	BlockSize     model.Tokens      `json:"block_size_tokens"`
	Groups        *model.GroupsFile `json:"groups"`
}

// ParseConfig reads a configuration from its JSON form. Errors name the
// file and line and say what was expected.
func ParseConfig(file string, data []byte) (*Config, error) {
	var f fileConfig
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, jsonfile.DecodeError(file, data, err, ErrConfig, fmt.Sprintf("a configuration object with schema %q", ConfigSchemaV1))
	}
	if dec.More() {
		return nil, fmt.Errorf("%s:%d: %w: trailing data after the configuration object", file, jsonfile.Line(data, int(dec.InputOffset())), ErrConfig)
	}
	at := func(key string) string { return fmt.Sprintf("%s:%d", file, jsonfile.LineOfKey(data, key, 0)) }
	var errs []string
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Sprintf("%s: %s", at(key), fmt.Sprintf(format, args...)))
	}
	if f.Schema != ConfigSchemaV1 {
		bad("schema", "schema is %q, want %q", f.Schema, ConfigSchemaV1)
	}
	c := &Config{Renewal: true, Symmetry: true}
	if f.Renewal != nil {
		c.Renewal = *f.Renewal
	}
	if f.Symmetry != nil {
		c.Symmetry = *f.Symmetry
	}
	if len(f.Runs) == 0 {
		bad("runs", "runs is empty, want at least one {name, policy, engine}")
	}
	names := map[string]bool{}
	for i, r := range f.Runs {
		p, err := spec.ParsePolicy(r.Policy)
		if err != nil {
			bad("policy", "run %d: policy %q is not source-first or destination-first", i+1, r.Policy)
		}
		e, err := model.ParseEngine(r.Engine)
		if err != nil {
			bad("engine", "run %d: engine %q is not vllm, sglang or trtllm", i+1, r.Engine)
		}
		if r.Name == "" || names[r.Name] {
			bad("runs", "run %d: name %q is empty or not unique", i+1, r.Name)
		}
		names[r.Name] = true
		c.Runs = append(c.Runs, Run{Name: r.Name, Policy: p, Engine: e})
	}
	for i, w := range f.Workers {
		wc := model.WorkerConfig{Capacity: w.Capacity, Slots: w.Slots, Headroom: w.Headroom,
			BackgroundBlocks: w.BackgroundBlocks, BackgroundSlots: w.BackgroundSlots, PrefixHit: w.PrefixHit,
			BackgroundAtStart: w.BackgroundBlocks > 0 || w.BackgroundSlots > 0}
		if w.BackgroundStart != nil {
			// Background load held from the start unless told otherwise;
			// without it, only the background_load fault brings it.
			wc.BackgroundAtStart = *w.BackgroundStart
		}
		switch w.Role {
		case "prefill":
			wc.Role = model.PrefillWorker
		case "decode":
			wc.Role = model.DecodeWorker
		default:
			bad("role", "worker %d: role %q is not prefill or decode", i, w.Role)
		}
		c.World.Workers = append(c.World.Workers, wc)
	}
	for _, h := range f.Handoffs {
		c.World.Handoffs = append(c.World.Handoffs, model.HandoffConfig{PromptTokens: h.PromptTokens, HeadroomTokens: h.HeadroomTokens})
	}
	switch {
	case f.Transfer.Groups != nil && (f.Transfer.BytesPerToken != 0 || f.Transfer.BlockSize != 0):
		bad("transfer", "transfer takes either groups or bytes_per_token with block_size_tokens, not both")
	case f.Transfer.Groups != nil:
		g, err := f.Transfer.Groups.Profile("prefill")
		if err != nil {
			bad("groups", "%v", err)
		}
		c.World.Grouped = g
	default:
		c.World.Linear = &model.LinearProfile{BytesPerToken: f.Transfer.BytesPerToken, BlockSize: f.Transfer.BlockSize}
	}
	for _, k := range sortedKeys(f.Faults) {
		i := indexOf(budgetFields, k)
		if i < 0 {
			bad(k, "unknown fault %q (want %s)", k, strings.Join(budgetFields, ", "))
			continue
		}
		if f.Faults[k] > 15 {
			bad(k, "fault budget %s=%d, at most 15", k, f.Faults[k])
			continue
		}
		*c.Budget.field(i) = uint8(f.Faults[k])
	}
	if len(errs) == 0 {
		for _, r := range c.Runs {
			w := c.World
			w.Policy, w.Engine = r.Policy, r.Engine
			if err := w.Prepare(); err != nil {
				for _, e := range strings.Split(err.Error(), "\n") {
					errs = append(errs, fmt.Sprintf("%s: run %s: %s", at("workers"), r.Name, strings.TrimPrefix(e, "model: bad configuration: ")))
				}
				break
			}
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w:\n%s", ErrConfig, strings.Join(errs, "\n"))
	}
	return c, nil
}

func sortedKeys(m map[string]uint) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}
