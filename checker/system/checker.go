package system

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// options are switches of a run that are not part of the state.
type options struct {
	// Renewal lets destination heartbeats renew the source lease.
	Renewal bool
	// Symmetry keeps one state per orbit of interchangeable handoffs and workers.
	Symmetry bool
}

// System composes a protocol (the role machines), the model's world and
// the environment's moves for one run.
type System struct {
	proto   *Protocol
	run     Run
	policy  spec.Policy
	world   *model.Config
	budget  Remaining
	opts    options
	nH, nW  int
	prefill []int
	decode  []int
	sym     symmetry
	// cmds: how each command takes effect (commandModes).
	cmds [2][model.NumCmds]cmdMode
	// atOnce: some command of the side is applied at once, so the delay
	// fault can hold it back.
	atOnce [2]bool
	// DelayAnywhere offers the delay fault wherever a side's core keeps up
	// and its record is live, not only just before a command: the
	// unreduced search, which tests compare the reduced one with.
	DelayAnywhere bool
	// ranks orders each role's states for partial-order reduction, and
	// sharedAfterEnd says a role's table has a row from a terminal state
	// that touches more than the handoff's record (por.go).
	ranks          [2][]uint8
	sharedAfterEnd [2]bool
	// judge is Config.Judge.
	judge StateJudge
	// rows[r][state] has bit ev set when role r's table has a row for
	// event ev in that state under this run's policy, and terminals[r]
	// bit state set when the state is terminal: Enabled asks both of every
	// handoff of every state expanded, and a bit of a word read here costs
	// less than the chain of slices (role, policy, state, event) to a
	// transition of the protocol's tables, whose rows lie a few hundred
	// bytes apart.
	rows      [2][maxStates]uint32
	terminals [2]uint32
}

// tablesInBits fills rows and terminals from the protocol's tables.
func (c *System) tablesInBits() {
	for r := range c.rows {
		for st, row := range c.proto.tables[r][c.policy] {
			for ev := range row {
				if row[ev].Row != 0 {
					c.rows[r][st] |= 1 << ev
				}
			}
		}
		for st, t := range c.proto.terminal[r] {
			if t {
				c.terminals[r] |= 1 << st
			}
		}
	}
}

// New prepares a run of a configuration with a protocol.
func New(p *Protocol, cfg *Config, run Run) (*System, error) {
	w := cfg.World
	w.Policy, w.Engine = run.Policy, run.Engine
	if err := w.Prepare(); err != nil {
		return nil, fmt.Errorf("run %s: %w", run.Name, err)
	}
	if err := cfg.Budget.check(); err != nil {
		return nil, fmt.Errorf("run %s: %w", run.Name, err)
	}
	c := &System{
		proto: p, run: run, policy: run.Policy, world: &w, budget: cfg.Budget.pack(),
		opts: options{Renewal: cfg.Renewal, Symmetry: cfg.Symmetry},
		nH:   w.NumHandoffs(), nW: w.NumWorkers(),
		prefill: w.PrefillWorkers(), decode: w.DecodeWorkers(),
		judge: cfg.Judge,
	}
	c.tablesInBits()
	c.sym = newSymmetry(&w, cfg.Symmetry, cfg.Symmetry)
	c.cmds = commandModes(p, cfg.Commands)
	c.ranks = porRanks(p, run.Policy)
	c.sharedAfterEnd = sharedAfterEnd(p, run.Policy)
	for sd := range c.cmds {
		for _, m := range c.cmds[sd] {
			c.atOnce[sd] = c.atOnce[sd] || m == cmdAtOnce
		}
	}
	return c, nil
}

// attemptNamespace roots the attempt ids the checker derives, so that they
// never collide with ids an engine makes.
var attemptNamespace = uuid.MustParse("5bd09d9a-bd43-4f66-ba01-772256a2acf9")

// attemptID is the handoff attempt id of handoff h in this run: facts are
// keyed by it (docs/lifecycle.md section 3) and reports name it so that a trace
// can be matched with engine logs. It is a name-based UUID of the run and
// the handoff: never shared by two attempts of a run, and the same on every
// run of the same configuration, so output stays deterministic.
func (c *System) attemptID(h int) uuid.UUID {
	name := fmt.Sprintf("%s/%s/%s/handoff-%d", c.run.Name, c.run.Policy, c.run.Engine, h)
	return uuid.NewSHA1(attemptNamespace, []byte(name))
}

// Attempts lists the attempt id of every handoff, as "h0=<uuid>".
func (c *System) Attempts() []string {
	out := make([]string, c.nH)
	for h := range out {
		out[h] = fmt.Sprintf("h%d=%s", h, c.attemptID(h))
	}
	return out
}

// Run is the run this checker explores.
func (c *System) Run() Run { return c.run }

// Protocol is the role machines this checker runs.
func (c *System) Protocol() *Protocol { return c.proto }

// World is the run's prepared world configuration; it says how many
// handoffs and workers the run has (NumHandoffs, NumWorkers).
func (c *System) World() *model.Config { return c.world }

// Initial is the state every exploration starts from: nothing routed,
// every machine in its initial state, the full fault budget.
func (c *System) Initial() State {
	s := State{W: model.NewWorld(c.world), B: c.budget}
	for h := 0; h < c.nH; h++ {
		s.Src[h] = c.proto.initialState(spec.Source)
		s.Dst[h] = c.proto.initialState(spec.Destination)
	}
	return s
}

// CheckState runs the state invariants on a state, then the
// configuration's judge, if any.
func (c *System) CheckState(s *State) *model.Violation {
	rec := c.Records(s)
	if v := model.CheckState(&s.W, &rec); v != nil || c.judge == nil {
		return v
	}
	return c.judge.Judge(c, s)
}

// Quiescence reports whether no protocol, timer or delivery move is
// enabled (faults do not count: the environment may stop faulting) and,
// on a quiescent state, judges it: the Quiescence invariant, then
// FaultFreeCompletion when the environment spent none of its budget.
// Asked as one question, the quiescence invariants are never judged on a
// state that is not quiescent.
func (c *System) Quiescence(s *State) (quiescent bool, v *model.Violation) {
	var ms MoveSet
	if c.Enabled(s, &ms) != 0 {
		return false, nil
	}
	rec := c.Records(s)
	if v := model.Quiescence(&s.W, &rec); v != nil {
		return true, v
	}
	if s.B == c.budget {
		return true, model.FaultFreeCompletion(&s.W)
	}
	return true, nil
}

// Drained reports whether a state is fully drained: every placed record
// terminal and nothing held, booked or counted.
func (c *System) Drained(s *State) bool {
	for h := 0; h < c.nH; h++ {
		x := &s.W.H[h]
		if x.Prefill >= 0 && !c.terminal(s, spec.Source, h) {
			return false
		}
		if x.Decode >= 0 && !c.terminal(s, spec.Destination, h) {
			return false
		}
	}
	return s.W.Drained()
}

// Key is the canonical key of a state. Without symmetry it is the plain
// packing. With symmetry it is the smallest packing over every renaming
// of interchangeable workers, each with its interchangeable handoffs
// sorted: the least element of the orbit, so equal for all renamings of
// one state. The explorer's successors ask CanonicalFrom, which reuses
// their parent's packing.
func (c *System) Key(s *State) Key {
	var k Key
	c.canonical(s, &k)
	return k
}

// DescribeState renders a state's role machines and world, one line per
// handoff and worker, deterministically.
func (c *System) DescribeState(s *State) []string {
	var out []string
	for h := 0; h < c.nH; h++ {
		out = append(out, strings.TrimSpace(fmt.Sprintf("h%d source=%s destination=%s %s", h,
			c.proto.StateName(spec.Source, s.Src[h]), c.proto.StateName(spec.Destination, s.Dst[h]), s.W.DescribeHandoff(h))))
	}
	for w := 0; w < c.nW; w++ {
		out = append(out, s.W.DescribeWorker(w))
	}
	return out
}

// WriteIdentity encodes what a run's checkpoint must match to be resumed
// by this run: the run, the protocol and its spec, the world, the budget,
// the options and the symmetry's renamings.
func (c *System) WriteIdentity(enc *json.Encoder) {
	_ = enc.Encode(c.run)
	_ = enc.Encode(c.proto.Name())
	_ = enc.Encode(c.proto.spec)
	_ = enc.Encode(c.world)
	_ = enc.Encode(c.budget)
	_ = enc.Encode(c.opts)
	_ = enc.Encode(c.sym.perms)
	_ = enc.Encode(c.sym.classes)
}

// Symmetric reports whether the canonical form renames interchangeable
// handoffs or workers.
func (c *System) Symmetric() bool { return c.sym.any() }
