package conform

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// RejectionTrace is what a reproduction of a rejected attempt needs, taken
// from the judge's own structures: the world the attempt was judged in, as
// a configuration file a search or a replay reads, and the steps of its
// furthest explanation.
type RejectionTrace struct {
	// ConfigJSON is the attempt's world (its prefill and decode worker,
	// its one handoff, the unlogged faults the explanation spent) as a
	// configuration (handoffcheck.config/v1) of one run, Run, of the
	// log's policy and engine. Nil when the world has no such form; Why
	// says why.
	ConfigJSON []byte
	Run        string
	Why        string
	// Moves are the explanation's steps in order: those that explain a
	// fact and the unlogged ones. Facts[i] is the fact Moves[i] explains
	// ("file:line description"), "" for an unlogged step.
	Moves []system.Move
	Facts []string
	// Side is the side whose process logged the rejected fact; Router
	// when a router logged it (no side's operation).
	Side   model.Side
	Router bool
	// Kind is the rejected fact's kind.
	Kind obslog.Kind
}

// rejectionTrace is the trace of explanation n of attempt a, whose next
// fact f no behavior explains.
func (j *judge) rejectionTrace(a *attempt, n *node, f *obslog.Fact) *RejectionTrace {
	if n == nil || a.wcfg == nil {
		return nil
	}
	t := &RejectionTrace{Run: "conform", Kind: f.Kind, Router: j.h.Processes[f.Proc].Role == obslog.RoleRouter}
	if j.h.Processes[f.Proc].Role == obslog.RoleDecode {
		t.Side = model.DestinationSide
	}
	for x := n; x != nil && x.parent != nil; x = x.parent {
		if x.move.Kind == 0 {
			continue // a fact an earlier step owed: no step of its own
		}
		t.Moves = append(t.Moves, x.move)
		fact := ""
		if x.fact != nil {
			fact = fmt.Sprintf("%s %s", x.fact.Where(), Describe(j.h, x.fact))
		}
		t.Facts = append(t.Facts, fact)
	}
	slices.Reverse(t.Moves)
	slices.Reverse(t.Facts)
	// The faults the explanation spent: its fault moves, and the kinds
	// that a protocol move spends by coming out of order (a reorder, an
	// early timer), which only the state's budget records.
	var spent system.Budget
	for k := range spent {
		if system.Fault(k).Move() == 0 {
			spent[k] = uint8(system.MaxBudget - n.st.B.Left(system.Fault(k)))
		}
	}
	for _, m := range t.Moves {
		if f, ok := m.Kind.Spends(); ok && spent[f] < system.MaxBudget {
			spent[f]++
		}
	}
	t.ConfigJSON, t.Why = j.worldJSON(a.wcfg, t.Run, spent)
	return t
}

// The configuration file form of a world, as system.ParseConfig reads it.
type worldFile struct {
	Schema   string          `json:"schema"`
	Runs     []worldRun      `json:"runs"`
	Workers  []worldWorker   `json:"workers"`
	Handoffs []worldHandoff  `json:"handoffs"`
	Transfer worldTransfer   `json:"transfer"`
	Faults   map[string]uint `json:"faults"`
	Renewal  bool            `json:"renewal"`
	Symmetry bool            `json:"symmetry"`
	Commands []string        `json:"commands"`
}

type worldRun struct {
	Name   string `json:"name"`
	Policy string `json:"policy"`
	Engine string `json:"engine"`
}

type worldWorker struct {
	Role      string         `json:"role"`
	Capacity  model.Blocks   `json:"capacity_blocks"`
	Slots     int            `json:"slots,omitempty"`
	Headroom  model.Tokens   `json:"headroom_tokens,omitempty"`
	PrefixHit []model.Tokens `json:"prefix_hit_tokens,omitempty"`
}

type worldHandoff struct {
	PromptTokens   model.Tokens `json:"prompt_tokens"`
	HeadroomTokens model.Tokens `json:"headroom_tokens"`
}

type worldTransfer struct {
	BytesPerToken model.Bytes       `json:"bytes_per_token,omitempty"`
	BlockSize     model.Tokens      `json:"block_size_tokens,omitempty"`
	Groups        *model.GroupsFile `json:"groups,omitempty"`
	Decode        *worldTransfer    `json:"decode,omitempty"`
}

// worldJSON writes an attempt's world as a configuration file. A real
// worker's capacity exceeds what an explored world packs: capacities and
// slots are cut to the packing's limits, which change nothing for a world
// of one handoff that fits them (a replay of the explanation says whether
// it does). Admission deferred to a step of its own (the judge's, since no
// fact says whether a worker queued a prefill) has no file form: a
// reproduction leaves those admit steps out when the world admits at
// dispatch anyway.
func (j *judge) worldJSON(c *model.Config, run string, spent system.Budget) ([]byte, string) {
	f := worldFile{Schema: "handoffcheck.config/v1", Faults: map[string]uint{}, Renewal: j.cfg.Renewal, Commands: []string{},
		Runs: []worldRun{{Name: run, Policy: c.Policy.String(), Engine: c.Engine.String()}}}
	for k := model.CmdNone + 1; k < model.NumCmds; k++ {
		if j.cfg.Commands.Has(k) {
			f.Commands = append(f.Commands, k.String())
		}
	}
	for k, n := range spent {
		if n > 0 {
			f.Faults[system.FaultKinds[k].Config] = uint(n)
		}
	}
	for _, h := range c.Handoffs {
		f.Handoffs = append(f.Handoffs, worldHandoff{PromptTokens: h.PromptTokens, HeadroomTokens: h.HeadroomTokens})
	}
	for _, w := range c.Workers {
		ww := worldWorker{Role: "prefill", Capacity: min(w.Capacity, model.MaxCapacityBlocks)}
		if w.Role == model.DecodeWorker {
			ww.Role, ww.Slots, ww.Headroom, ww.PrefixHit = "decode", min(w.Slots, model.MaxSlots), w.Headroom, w.PrefixHit
		}
		f.Workers = append(f.Workers, ww)
	}
	switch {
	case c.Grouped != nil:
		f.Transfer.Groups = c.Grouped.File()
	case c.Linear != nil:
		f.Transfer.BytesPerToken, f.Transfer.BlockSize = c.Linear.BytesPerToken, c.Linear.BlockSize
	}
	switch {
	case c.DecodeGrouped != nil:
		f.Transfer.Decode = &worldTransfer{Groups: c.DecodeGrouped.File()}
	case c.DecodeLinear != nil:
		f.Transfer.Decode = &worldTransfer{BytesPerToken: c.DecodeLinear.BytesPerToken, BlockSize: c.DecodeLinear.BlockSize}
	}
	b, err := json.Marshal(f)
	if err != nil {
		return nil, "The world does not marshal: " + err.Error()
	}
	if _, err := system.ParseConfig("the attempt's world", b); err != nil {
		return nil, fmt.Sprintf("The attempt's world has no form an explored world takes: %v", err)
	}
	return b, ""
}
