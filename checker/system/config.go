package system

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
	"github.com/handoffcheck/handoffcheck/spec/jsonfile"
)

// ErrConfig is wrapped by every refusal of a checker configuration.
var ErrConfig = errors.New("checker: bad configuration")

// configSchemaV1 names the JSON form of a configuration.
const configSchemaV1 = "handoffcheck.config/v1"

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
	// Commands is the command path: the kinds of scheduler command that
	// a worker's core applies later, in its own task, and answers
	// (applied or no-op). A command of any other kind is applied and
	// answered in the step that sends it.
	Commands Commands
	// Judge, when set, judges every state after the built-in state
	// invariants (properties written in a file, package props): every
	// driver that checks a state through CheckState checks it too.
	Judge StateJudge `json:"-"`
}

// StateJudge judges a state of a system beyond the built-in invariants.
// It is called from every worker at once: it must be safe for that.
type StateJudge interface {
	Judge(c *System, s *State) *model.Violation
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
	Commands json.RawMessage `json:"commands"`
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
	// Decode gives the decode role a profile of its own, in the same form;
	// without it both roles share this one.
	Decode *fileDecodeTransfer `json:"decode"`
}

// fileDecodeTransfer is the decode role's own profile.
type fileDecodeTransfer struct {
	BytesPerToken model.Bytes       `json:"bytes_per_token"`
	BlockSize     model.Tokens      `json:"block_size_tokens"`
	Groups        *model.GroupsFile `json:"groups"`
}

// ParseConfig reads a configuration from its JSON form. Errors name the
// file and the line of the entry they are about (the run, worker or
// handoff object, or its key) and say what was expected. Problems are
// reported together, in file order, leaving out those that would only
// follow from another (the world's checks wait for known worker roles and
// a readable transfer). A key given twice in one object is refused. Runs,
// workers and handoffs are numbered from 0, as reports name them.
func ParseConfig(file string, data []byte) (*Config, error) {
	var f fileConfig
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, jsonfile.DecodeError(file, data, err, ErrConfig, fmt.Sprintf("a configuration object with schema %q", configSchemaV1))
	}
	if dec.More() {
		return nil, fmt.Errorf("%s:%d: %w: trailing data after the configuration object", file, jsonfile.Line(data, int(dec.InputOffset())), ErrConfig)
	}
	pos, err := jsonfile.Scan(file, data, ErrConfig)
	if err != nil {
		return nil, err
	}
	// Every problem carries the path of the value it is about; the lines
	// come from the paths alone, never from what a message says.
	var errs []*jsonfile.Problem
	add := func(path []any, format string, args ...any) {
		errs = append(errs, jsonfile.Problemf(ErrConfig, path, format, args...))
	}
	if f.Schema != configSchemaV1 {
		add([]any{"schema"}, "schema is %q, want %q", f.Schema, configSchemaV1)
	}
	c := &Config{Renewal: true, Symmetry: true}
	if f.Renewal != nil {
		c.Renewal = *f.Renewal
	}
	if f.Symmetry != nil {
		c.Symmetry = *f.Symmetry
	}
	if f.Commands != nil {
		cmds, err := ParseCommands(f.Commands)
		if err != nil {
			add([]any{"commands"}, "%v", err)
		}
		c.Commands = cmds
	}
	if len(f.Runs) == 0 {
		add([]any{"runs"}, "runs is empty, want at least one {name, policy, engine}")
	}
	names := map[string]int{}
	// usable lists the runs whose policy and engine are known; worldOK
	// says the workers and the transfer read well enough for the world's
	// own checks, whose problems would otherwise follow from these.
	var usable []int
	worldOK := true
	for i, r := range f.Runs {
		run := runLabel(i, r.Name)
		p, perr := spec.ParsePolicy(r.Policy)
		if perr != nil {
			add([]any{"runs", i, "policy"}, "%s: policy %q is not source-first or destination-first", run, r.Policy)
		}
		e, eerr := model.ParseEngine(r.Engine)
		if eerr != nil {
			add([]any{"runs", i, "engine"}, "%s: engine %q is not one of %s", run, r.Engine, strings.Join(model.EngineNames(), ", "))
		}
		if perr == nil && eerr == nil {
			usable = append(usable, i)
		}
		if why := runNameProblem(r.Name); why != "" {
			add([]any{"runs", i, "name"}, "%s: %s", run, why)
		} else if prev, dup := names[r.Name]; dup {
			add([]any{"runs", i, "name"}, "%s: name is also the name of run %d; --run selects runs by name, so names must be unique", run, prev)
		} else {
			names[r.Name] = i
		}
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
			add([]any{"workers", i, "role"}, "worker %d: role %q is not prefill or decode", i, w.Role)
			worldOK = false
		}
		c.World.Workers = append(c.World.Workers, wc)
	}
	for _, h := range f.Handoffs {
		c.World.Handoffs = append(c.World.Handoffs, model.HandoffConfig{PromptTokens: h.PromptTokens, HeadroomTokens: h.HeadroomTokens})
	}
	// groupsProblems adds the problems of a groups object at path, whose
	// paths are in the groups file's own form.
	groupsProblems := func(err error, what string, path ...any) {
		probs, ok := jsonfile.ProblemsOf(err)
		if !ok {
			add(path, "%s: %v", what, err)
		}
		for _, p := range probs {
			add(p.Under(path...).Path, "%s: %s", what, p.Msg)
		}
	}
	switch {
	case f.Transfer.Groups != nil && (f.Transfer.BytesPerToken != 0 || f.Transfer.BlockSize != 0):
		add([]any{"transfer"}, "transfer takes either groups or bytes_per_token with block_size_tokens, not both")
		worldOK = false
	case f.Transfer.Groups != nil:
		g, err := f.Transfer.Groups.Profile("prefill")
		if err != nil {
			worldOK = false
			groupsProblems(err, "transfer groups", "transfer", "groups")
		}
		c.World.Grouped = g
	default:
		c.World.Linear = &model.LinearProfile{BytesPerToken: f.Transfer.BytesPerToken, BlockSize: f.Transfer.BlockSize}
	}
	if d := f.Transfer.Decode; d != nil {
		switch {
		case d.Groups != nil && (d.BytesPerToken != 0 || d.BlockSize != 0):
			add([]any{"transfer", "decode"}, "transfer decode takes either groups or bytes_per_token with block_size_tokens, not both")
			worldOK = false
		case d.Groups != nil:
			g, err := d.Groups.Profile("decode")
			if err != nil {
				worldOK = false
				groupsProblems(err, "transfer decode groups", "transfer", "decode", "groups")
			}
			c.World.DecodeGrouped = g
		default:
			c.World.DecodeLinear = &model.LinearProfile{BytesPerToken: d.BytesPerToken, BlockSize: d.BlockSize}
		}
	}
	for _, k := range sortedKeys(f.Faults) {
		if err := c.Budget.set(k, f.Faults[k]); err != nil {
			add([]any{"faults", k}, "%v", err)
		}
	}
	if worldOK {
		// The world's own checks run per run, since the policy and the
		// engine are part of the world. A problem every run has is
		// reported once; one only some runs have names them. Without a
		// usable run they run once, on the first policy and engine.
		type worldProblem struct {
			p    *jsonfile.Problem
			runs []int
		}
		var order []*worldProblem
		byKey := map[string]*worldProblem{}
		checked := usable
		if len(checked) == 0 {
			checked = []int{-1}
		}
		for _, i := range checked {
			w := c.World
			if i >= 0 {
				w.Policy, w.Engine = c.Runs[i].Policy, c.Runs[i].Engine
			}
			err := w.Prepare()
			if err == nil {
				continue
			}
			probs, ok := jsonfile.ProblemsOf(err)
			if !ok {
				probs = append(probs, &jsonfile.Problem{Msg: err.Error()})
			}
			for _, p := range probs {
				// Two runs have the same problem when it is about the
				// same value and says the same.
				key := fmt.Sprintf("%q %s", p.Path, p.Msg)
				wp := byKey[key]
				if wp == nil {
					wp = &worldProblem{p: p}
					byKey[key] = wp
					order = append(order, wp)
				}
				wp.runs = append(wp.runs, i)
			}
		}
		for _, wp := range order {
			if len(wp.runs) == len(checked) {
				add(runPath(wp.p.Path, -1), "%s", wp.p.Msg)
				continue
			}
			for _, i := range wp.runs {
				add(runPath(wp.p.Path, i), "%s: %s", runLabel(i, c.Runs[i].Name), wp.p.Msg)
			}
		}
	}
	if len(errs) > 0 {
		type located struct {
			line int
			what string
		}
		var lines []located
		for _, p := range errs {
			lines = append(lines, located{pos.Line(p.Path...), p.Msg})
		}
		slices.SortStableFunc(lines, func(a, b located) int { return a.line - b.line })
		var text []string
		for _, l := range lines {
			text = append(text, fmt.Sprintf("%s:%d: %s", file, l.line, l.what))
		}
		return nil, fmt.Errorf("%w:\n%s", ErrConfig, strings.Join(text, "\n"))
	}
	return c, nil
}

// runPath is where a problem of the world's checks is in the
// configuration file: the world's paths are the file's, except that the
// policy and the engine are a run's (run i's, or the runs list for a
// problem every run has).
func runPath(path []any, i int) []any {
	if len(path) == 0 || (path[0] != "engine" && path[0] != "policy") {
		return path
	}
	if i < 0 {
		return []any{"runs"}
	}
	return append([]any{"runs", i}, path...)
}

// runLabel names a run in messages: its index, from 0 like workers and
// handoffs, and its name, e.g. run 0 ("vllm").
func runLabel(i int, name string) string { return fmt.Sprintf("run %d (%q)", i, name) }

// runNameProblem says why --run could not select a run of this name, or
// "" for a good name: --run takes a comma-separated list of names.
func runNameProblem(name string) string {
	switch {
	case name == "":
		return "name is empty; --run selects runs by name"
	case strings.Contains(name, ","):
		return "name contains a comma, which --run cannot select (it takes comma-separated names)"
	case strings.IndexFunc(name, unicode.IsSpace) >= 0:
		return "name contains white space, which --run cannot select; want one word"
	}
	return ""
}

func sortedKeys(m map[string]uint) []string { return slices.Sorted(maps.Keys(m)) }
