package system

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/model"
)

// faultsConfig is a one-handoff configuration whose "faults" object the
// tests fill in.
const faultsConfig = `{
  "schema": "handoffcheck.config/v1",
  "runs": [{"name": "vllm", "policy": "source-first", "engine": "vllm"}],
  "workers": [
    {"role": "prefill", "capacity_blocks": 8},
    {"role": "decode", "capacity_blocks": 8, "slots": 2, "headroom_tokens": 1024}
  ],
  "handoffs": [{"prompt_tokens": 48, "headroom_tokens": 512}],
  "transfer": {"bytes_per_token": 131072, "block_size_tokens": 16},
  "faults": {%s}
}`

// Every fault kind is one row of FaultKinds; its names are unique and
// lead back to it.
func TestFaultKinds_Table(t *testing.T) {
	configs, moves := map[string]Fault{}, map[string]MoveKind{}
	for k := MoveKind(1); k < numProtocolMoveKinds; k++ {
		moves[k.String()] = k
	}
	owner := map[MoveKind]Fault{}
	for f := Fault(0); f < NumFaults; f++ {
		fk := FaultKinds[f]
		if fk.Config == "" || fk.Meaning == "" {
			t.Errorf("fault %d: config name %q, meaning %q: both are needed", f, fk.Config, fk.Meaning)
		}
		if g, dup := configs[fk.Config]; dup {
			t.Errorf("faults %s and %s share the configuration name %q", g, f, fk.Config)
		}
		configs[fk.Config] = f
		if fk.LeftOut && (fk.Unplanned == "" || f.Move() == 0) {
			t.Errorf("fault %s: left out of a reproduced trace, yet a plan may schedule it or it has no move to leave out", f)
		}
		if got, ok := ParseFault(fk.Config); !ok || got != f || f.String() != fk.Config {
			t.Errorf("fault %s: ParseFault(%q) = %v, %v", f, fk.Config, got, ok)
		}
		mv := f.Move()
		if mv == 0 {
			if fk.Syntax != "" || fk.Swarm {
				t.Errorf("fault %s has no move of its own but a step syntax or a swarm switch", f)
			}
			continue
		}
		if g, dup := owner[mv]; dup {
			t.Errorf("faults %s and %s share move kind %d", g, f, mv)
		}
		owner[mv] = f
		name := strings.Fields(fk.Syntax)[0]
		if k, dup := moves[name]; dup {
			t.Errorf("fault %s: move name %q is taken by %d", f, name, k)
		}
		moves[name] = mv
		if got, ok := mv.Spends(); !ok || got != f || mv.String() != name {
			t.Errorf("fault %s: move %q spends %v (%v)", f, mv, got, ok)
		}
	}
	// A number after the protocol moves that belongs to no fault move
	// (a kind spent out of order) names no move and is no fault.
	for k := numProtocolMoveKinds; k < NumMoveKinds; k++ {
		if _, ok := owner[k]; !ok {
			if _, fault := k.Spends(); fault || k.String() != fmt.Sprintf("MoveKind(%d)", k) {
				t.Errorf("move kind %d belongs to no fault kind but is named %q (fault %v)", k, k, fault)
			}
		}
	}
	for k := MoveKind(1); k < numProtocolMoveKinds; k++ {
		if _, fault := k.Spends(); fault {
			t.Errorf("protocol move %s counts as a fault", k)
		}
	}
}

// Packing a budget gives every kind its own slot: a budget of one kind
// unpacks to exactly itself, from the packed word and from a state's key,
// and no two kinds (or amounts) share a key.
func TestFaultKinds_BudgetPacking(t *testing.T) {
	cfg := mustConfig(t, fmt.Sprintf(faultsConfig, ""))
	c, err := New(Generated(), cfg, cfg.Runs[0])
	if err != nil {
		t.Fatal(err)
	}
	keys := map[Key]string{}
	for f := Fault(0); f < NumFaults; f++ {
		for n := uint8(1); n <= MaxBudget; n++ {
			var b Budget
			b[f] = n
			r := b.pack()
			for g := Fault(0); g < NumFaults; g++ {
				want := 0
				if g == f {
					want = int(n)
				}
				if r.Left(g) != want || r.has(g) != (want > 0) {
					t.Fatalf("budget %s=%d packed: %s left %d, has %v", f, n, g, r.Left(g), r.has(g))
				}
			}
			if r.budget() != b {
				t.Fatalf("budget %s=%d unpacks to %v", f, n, r.budget())
			}
			s := c.Initial()
			s.B = r
			k := c.Key(&s)
			name := fmt.Sprintf("%s=%d", f, n)
			if other, dup := keys[k]; dup {
				t.Fatalf("budgets %s and %s pack to the same key", other, name)
			}
			keys[k] = name
			var back State
			if c.UnpackTo(&k, &back); back.B != r {
				t.Fatalf("budget %s: key unpacks to %v", name, back.B.budget())
			}
			spent := r
			spent.spend(f)
			if spent.Left(f) != int(n)-1 || spent.budget()[f] != n-1 {
				t.Fatalf("spending %s from %d leaves %d", f, n, spent.Left(f))
			}
		}
	}
	over := Budget{}
	over[reorder] = MaxBudget + 1
	cfg.Budget = over
	if _, err := New(Generated(), cfg, cfg.Runs[0]); err == nil || !strings.Contains(err.Error(), "reorder=16") {
		t.Fatalf("a budget that does not fit its slot was accepted: %v", err)
	}
}

// sampleMove is a move of kind k with every argument its syntax takes.
func sampleMove(k MoveKind) Move {
	m := Move{Kind: k, H: -1}
	for _, a := range k.args() {
		switch a {
		case argH:
			m.H = 1
		case argWorker:
			m.Arg = 2
		case argTo, argSide:
			m.Arg = int8(model.DestinationSide)
		case argMsg:
			m.Msg = model.MsgCancelled
		case argTimer:
			m.Arg = int8(model.TimerHeartbeat)
		}
	}
	return m
}

// Every move kind, protocol or fault, prints in its syntax and parses back,
// and refuses a missing or an extra argument.
func TestMoves_SyntaxRoundTrips(t *testing.T) {
	for _, k := range MoveKinds() {
		m := sampleMove(k)
		got, err := ParseMove(m.String(), nil)
		if err != nil || got != m {
			t.Errorf("%s: %q parses to %+v, %v", k, m.String(), got, err)
		}
		syntax := k.String()
		for _, a := range k.args() {
			syntax += " " + argKeys[a] + "=" + argPlaceholders[a]
		}
		if f, fault := k.Spends(); fault && FaultKinds[f].Syntax != syntax {
			t.Errorf("%s: the fault table's syntax %q, the move's %q", k, FaultKinds[f].Syntax, syntax)
		}
		fields := strings.Fields(m.String())
		if k == mvApply {
			// A trace written when only the decode worker's core took
			// commands says apply h=H: the side is the destination.
			if got, err := ParseMove("apply h=0", nil); err != nil || got != (Move{Kind: mvApply, Arg: int8(model.DestinationSide)}) {
				t.Errorf("apply h=0 parses to %+v, %v, want the destination's core", got, err)
			}
			continue
		}
		if _, err := ParseMove(strings.Join(fields[:len(fields)-1], " "), nil); err == nil {
			t.Errorf("%s: parsed without its last argument", k)
		}
		extra := "worker=1"
		if slices.Contains(k.args(), argWorker) {
			extra = "timer=lease"
		}
		if _, err := ParseMove(m.String()+" "+extra, nil); err == nil {
			t.Errorf("%s: parsed with an extra argument", k)
		}
	}
}

// A configuration sets exactly the budget slot its fault name names, and
// an unknown name is refused with every known one listed.
func TestFaultKinds_Config(t *testing.T) {
	for f := Fault(0); f < NumFaults; f++ {
		cfg := mustConfig(t, fmt.Sprintf(faultsConfig, fmt.Sprintf("%q: 3", FaultKinds[f].Config)))
		var want Budget
		want[f] = 3
		if cfg.Budget != want {
			t.Errorf("faults {%q: 3} gives budget %v", FaultKinds[f].Config, cfg.Budget)
		}
	}
	_, err := ParseConfig("x.json", []byte(fmt.Sprintf(faultsConfig, `"gremlins": 1`)))
	if err == nil || !strings.Contains(err.Error(), strings.Join(faultConfigNames(), ", ")) {
		t.Errorf("an unknown fault was not refused with the known names: %v", err)
	}
	_, err = ParseConfig("x.json", []byte(fmt.Sprintf(faultsConfig, `"loss": 16`)))
	if err == nil || !strings.Contains(err.Error(), "at most 15") {
		t.Errorf("a budget over %d was not refused: %v", MaxBudget, err)
	}
}

// A kind struck in place of a delivery does to the fact what its row's
// Delivers tells a driver's proxy to do: the fact leaves the channel
// unless it arrives twice (Delivers 2: kept in flight), and its record
// moves as the delivery moves it unless it never arrives (Delivers 0).
// A driver reads Delivers instead of naming the kinds, so a row whose
// Delivers disagrees with applyFault fails here.
func TestFaultKinds_DeliversIsWhatApplyFaultDoes(t *testing.T) {
	for f := range NumFaults {
		fk := &FaultKinds[f]
		if fk.Instead != MvDeliver {
			continue
		}
		c := checkerFor(t, Generated(), mustConfig(t, fmt.Sprintf(faultsConfig, fmt.Sprintf("%q: 1", fk.Config))), "vllm")
		in := func(s *State, m Move) int {
			ch := &s.W.H[m.H].Ch[m.Arg]
			n := 0
			for _, g := range ch.M[:ch.N] {
				if g == m.Msg {
					n++
				}
			}
			return n
		}
		var fault, deliver Move
		var afterDeliver State
		s := findState(t, c, func(s *State) bool {
			var ms MoveSet
			c.Enabled(s, &ms)
			for _, m := range ms.M[:ms.N] {
				if m.Kind != f.Move() || !slices.Contains(ms.M[:ms.N], Move{Kind: MvDeliver, H: m.H, Arg: m.Arg, Msg: m.Msg}) {
					continue
				}
				d := *s
				deliver = Move{Kind: MvDeliver, H: m.H, Arg: m.Arg, Msg: m.Msg}
				if _, _, err := c.Step(&d, deliver, nil); err != nil {
					t.Fatal(err)
				}
				r := roleOf(model.Side(m.Arg))
				if d.Role(r, int(m.H)) != s.Role(r, int(m.H)) {
					fault, afterDeliver = m, d
					return true
				}
			}
			return false
		})
		next := s
		if _, _, err := c.Step(&next, fault, nil); err != nil {
			t.Fatal(err)
		}
		r, h := roleOf(model.Side(fault.Arg)), int(fault.H)
		if arrived := next.Role(r, h) == afterDeliver.Role(r, h); arrived != (fk.Delivers > 0) {
			t.Errorf("%s (Delivers %d): %s moved the %s record as the delivery does: %v", f, fk.Delivers, fault, r, arrived)
		}
		if kept := in(&next, fault) == in(&s, fault); kept != (fk.Delivers > 1) {
			t.Errorf("%s (Delivers %d): %s kept the fact in flight: %v", f, fk.Delivers, fault, kept)
		}
	}
}

// The rows' striking and logging fields are consistent: a kind struck
// where offered whose move names no side has one striker where the roles
// run as processes (the frontend or the transfer's runner), and no other
// kind has either; a log shows a kind in at most one way (Silent, Logs,
// Shown); Delivers speaks only of a kind struck in place of a delivery.
func TestFaultKinds_OneStrikerOneLogging(t *testing.T) {
	for f := range NumFaults {
		fk := &FaultKinds[f]
		_, _, side, _ := f.Move().Names()
		if need := fk.Offered && !side; (fk.Frontend || fk.Runner) != need || (fk.Frontend && fk.Runner) {
			t.Errorf("%s: Frontend %v, Runner %v; want exactly one for a kind struck where offered whose move names no side, neither otherwise", f, fk.Frontend, fk.Runner)
		}
		n := 0
		for _, b := range []bool{fk.Silent, fk.Logs != "", fk.Shown} {
			if b {
				n++
			}
		}
		if n > 1 {
			t.Errorf("%s: Silent %v, Logs %q, Shown %v; a log shows a fault in at most one way", f, fk.Silent, fk.Logs, fk.Shown)
		}
		if fk.Delivers != 0 && fk.Instead != MvDeliver {
			t.Errorf("%s: Delivers %d for a kind not struck in place of a delivery", f, fk.Delivers)
		}
		if f.Move() == 0 && (n > 0 || fk.Frontend || fk.Runner) {
			t.Errorf("%s has no move of its own, yet says how a log shows it or who strikes it", f)
		}
	}
}

// A fault kind's step syntax is read at start: a row whose syntax names
// no move or an argument that is not key=placeholder stops the program
// instead of giving the move no or the wrong arguments.
func TestParseSyntax_RefusesARowItCannotRead(t *testing.T) {
	if name, args := parseSyntax("duplicate h=H to=S msg=M"); name != "duplicate" || !slices.Equal(args, []arg{argH, argTo, argMsg}) {
		t.Errorf("duplicate's syntax reads as %q %v", name, args)
	}
	for _, bad := range []string{"", "  ", "stall h=X", "stall q=H", "stall h", "stall side=W"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("syntax %q was read", bad)
				}
			}()
			parseSyntax(bad)
		}()
	}
}
