package cluster

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// Planned reports whether a plan may schedule fault kind k: the fault
// table says where a driver strikes it. The others are the drivers' own
// doing (reorder by latency jitter, early_timer by the clock, no_show by
// the router, background_load by the other requests).
func Planned(k system.Fault) bool {
	return k < system.NumFaults && system.FaultKinds[k].Unplanned == ""
}

// AtTime reports whether a planned fault of kind k strikes at the plan's
// time, on the worker it names (the fault table has it struck neither
// where its move is offered nor in place of a protocol move).
func AtTime(k system.Fault) bool {
	kind := &system.FaultKinds[k]
	return Planned(k) && !kind.Offered && kind.Instead == 0
}

// NamesSide reports whether fault kind k's move, and so a plan's line of
// the kind, names the side that acts: a mark of the kind is held per side.
func NamesSide(k system.Fault) bool {
	_, _, side, _ := k.Move().Names()
	return side
}

// NamesFact reports whether fault kind k's move, and so a plan's line of
// the kind, names a fact in flight (the side it goes to and the fact): a
// mark of the kind is held per fact.
func NamesFact(k system.Fault) bool {
	_, _, _, fact := k.Move().Names()
	return fact
}

// FaultKind is the kind of a planned fault, read from the plan's name of
// it: the one place a driver turns a plan's string into the checker's
// fault. A name the checker does not know, or a kind no plan schedules,
// is an input error naming the plan's file and line.
func (f *Fault) FaultKind() (system.Fault, error) {
	k, ok := system.ParseFault(f.Kind)
	if !ok || !Planned(k) {
		var names []string
		for k := range system.NumFaults {
			if Planned(k) {
				names = append(names, k.String())
			}
		}
		return 0, fmt.Errorf("%s:%d: %w: fault kind %q, want one of %s", f.File, f.Line, ErrInput, f.Kind, strings.Join(names, ", "))
	}
	return k, nil
}

// WorkerRestart reports whether f restarts a worker at its time (not a
// side of a request at a phase).
func (f *Fault) WorkerRestart() bool {
	k, err := f.FaultKind()
	return err == nil && k == system.Restart && f.Request < 0
}

// sides is a mark's sides: a bit per side, for a kind whose move names
// one, and either for a kind whose move names none.
type sides uint8

const either sides = 1 << 2

// Marks are the faults a plan holds for one request until they can
// strike, the same record in every driver, keyed by the typed fault
// kind. Where each strikes is the fault table's: at the
// first state that offers its move (Offered), in place of a protocol move
// (Instead), or at a phase of the handoff (RestartAfter; Logged for a
// kind struck where offered, which is marked at the phase).
type Marks struct {
	// facts holds the marks of kinds whose move takes a fact (to, msg):
	// each planned fault strikes one fact.
	facts [system.NumFaults]FactMark
	// on holds the marks of the other kinds aimed at a request. A second
	// mark of a kind on a side it already marks is the same mark.
	on [system.NumFaults]sides
	// RestartAfter is, per side, the log kind after which that side's
	// worker restarts ("" for none): the phase of a fault aimed at one
	// (FaultKind.Phase).
	RestartAfter [2]string
	// after holds, per kind struck where offered and side, the log kind
	// after which the kind's mark is set ("" for none): a fault aimed at
	// a phase of the handoff (FaultKind.Phase), held until the side logs
	// the fact (Logged).
	after [system.NumFaults][2]string
	// by is, per kind and side the mark is set for, the side whose
	// logging of the fact sets it (Fault.AfterSide; the side itself by
	// default).
	by [system.NumFaults][2]model.Side
	// rank and phase order the marks one phase sets: rank is, per kind
	// and side, a fault's place among the plan's faults aimed at a phase
	// (aimed counts them); phase is, per kind and mark (a side's, or
	// either's, as the on bits), which phase set it (phases counts the
	// phases that set one; 0: none did). Marks one phase sets strike in
	// the plan's order, as faults a plan places by time strike in time
	// order (a delay before the abort whose command it slows): a mark
	// waits while one set with it, earlier in the plan, is held.
	rank           [system.NumFaults][2]uint16
	phase, setRank [system.NumFaults][3]uint16
	aimed, phases  uint16
}

// markIndex is the index of a mark's bit in Marks.phase.
func markIndex(b sides) int {
	switch b {
	case 1 << model.SourceSide:
		return 0
	case 1 << model.DestinationSide:
		return 1
	}
	return 2
}

// waits reports whether the mark b of kind k waits for a mark the same
// phase set, earlier in the plan, that is still held.
func (m *Marks) waits(k system.Fault, b sides) bool {
	i := markIndex(b)
	g, r := m.phase[k][i], m.setRank[k][i]
	if g == 0 {
		return false
	}
	for o := range system.NumFaults {
		for j, ob := range []sides{1 << model.SourceSide, 1 << model.DestinationSide, either} {
			if m.on[o]&ob != 0 && m.phase[o][j] == g && m.setRank[o][j] < r {
				return true
			}
		}
	}
	return false
}

// Logged sets the marks aimed at the phase side sd just reached, by
// logging a fact of kind name for the request: each is then held as a
// mark of its kind (on the side it is set for, for a kind whose move
// names one: sd's own, or the other side's for a fault aimed at sd's
// facts by after_side), and strikes where the request next offers its
// move. It returns the kinds set, in the fault table's order.
func (m *Marks) Logged(sd model.Side, name string) []system.Fault {
	var out []system.Fault
	g := m.phases + 1
	for k := range system.NumFaults {
		for on := model.SourceSide; on <= model.DestinationSide; on++ {
			if m.after[k][on] == "" || m.after[k][on] != name || m.by[k][on] != sd {
				continue
			}
			m.after[k][on] = ""
			m.MarkSide(k, on)
			b := either
			if NamesSide(k) {
				b = 1 << on
			}
			m.phase[k][markIndex(b)], m.setRank[k][markIndex(b)] = g, m.rank[k][on]
			m.phases = g
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}

// AwaitsPhase reports whether a mark waits for a side to log a fact
// (Logged), so that a driver looks at what the side logs.
func (m *Marks) AwaitsPhase() bool {
	for k := range system.NumFaults {
		if m.after[k] != [2]string{} {
			return true
		}
	}
	return false
}

// PhaseMarks calls fn for every mark waiting for a side to log a fact:
// its kind, the side it is set for and the fact's log kind, in the
// plan's order (a driver that hands the marks on keeps the order one
// phase strikes them in).
func (m *Marks) PhaseMarks(fn func(k system.Fault, sd model.Side, after string)) {
	m.PhaseMarksBy(func(k system.Fault, sd, _ model.Side, after string) { fn(k, sd, after) })
}

// PhaseMarksBy is PhaseMarks with the side whose logging of the fact
// sets each mark (by): sd itself, or the other side for a fault aimed at
// the other side's facts (Fault.AfterSide).
func (m *Marks) PhaseMarksBy(fn func(k system.Fault, sd, by model.Side, after string)) {
	for r := uint16(1); r <= m.aimed; r++ {
		for k := range system.NumFaults {
			for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
				if a := m.after[k][sd]; a != "" && m.rank[k][sd] == r {
					fn(k, sd, m.by[k][sd], a)
				}
			}
		}
	}
}

// CheckPhase refuses a fault aimed at a phase that no run could strike:
// a fact that is no kind a worker logs for a request, a side or an
// after_side that names no side, a fact the side that should log it
// never logs (a source's "reserved"), or a restart aimed at the other
// side's fact (a worker restarts at its own phases). Simulator and live
// both ask it, so that a plan means one thing to both. A fault not aimed
// at a phase passes.
func CheckPhase(f *Fault) error {
	k, err := f.FaultKind()
	if err != nil {
		return err
	}
	if !system.FaultKinds[k].Phase || f.Request < 0 || (k != system.Restart && f.After == "") {
		if f.AfterSide != "" {
			return fmt.Errorf("%s:%d: %w: after_side %q without after; want after_side only with a fact after which the fault strikes", f.File, f.Line, ErrInput, f.AfterSide)
		}
		return nil
	}
	kind, ok := obslog.KindNamed(f.After)
	if !ok || !slices.Contains(obslog.AttemptKindNames(), f.After) {
		return fmt.Errorf("%s:%d: %w: after %q, want a kind of the observation log a worker logs for a request: %s", f.File, f.Line, ErrInput, f.After, strings.Join(obslog.AttemptKindNames(), ", "))
	}
	sd, ok := SideNamed(f.Side)
	if !ok {
		return fmt.Errorf("%s:%d: %w: side %q, want source or destination", f.File, f.Line, ErrInput, f.Side)
	}
	by := sd
	if f.AfterSide != "" {
		if by, ok = SideNamed(f.AfterSide); !ok {
			return fmt.Errorf("%s:%d: %w: after_side %q, want source or destination (the side that logs %q)", f.File, f.Line, ErrInput, f.AfterSide, f.After)
		}
	}
	if k == system.Restart && by != sd {
		return fmt.Errorf("%s:%d: %w: a restart of the %s after the %s logs %q; want a restart aimed at its own side's facts (after_side left out or %q)", f.File, f.Line, ErrInput, f.Side, f.AfterSide, f.After, f.Side)
	}
	if w := obslog.Kinds[kind].Who; (w == obslog.BySource && by != model.SourceSide) || (w == obslog.ByDestination && by != model.DestinationSide) {
		other := "source"
		if by == model.SourceSide {
			other = "destination"
		}
		return fmt.Errorf("%s:%d: %w: after %q, but the %s never logs it; want a fact the %s logs, or after_side %q", f.File, f.Line, ErrInput, f.After, sideName(by), sideName(by), other)
	}
	return nil
}

func sideName(sd model.Side) string {
	if sd == model.SourceSide {
		return "source"
	}
	return "destination"
}

// Mark holds the planned fault f, aimed at the request, until it can
// strike: the one dispatch on a plan's fault kinds, by the fault table's
// rules. A kind it does not handle is an error, never a fault silently
// dropped.
func (m *Marks) Mark(f *Fault) error {
	k, err := f.FaultKind()
	if err != nil {
		return err
	}
	sd, hasSide := SideNamed(f.Side)
	switch {
	case system.FaultKinds[k].Phase && f.Request >= 0 && k == system.Restart:
		if f.AfterSide != "" && f.AfterSide != f.Side {
			return fmt.Errorf("%s:%d: %w: a restart aimed at the other side's fact %q; want after_side left out", f.File, f.Line, ErrInput, f.After)
		}
		if hasSide {
			m.RestartAfter[sd] = f.After
		}
	case system.FaultKinds[k].Phase && f.After != "":
		if !hasSide || !system.FaultKinds[k].Offered {
			return fmt.Errorf("%s:%d: %w: a %s aimed at a phase needs the side that logs %q and a kind struck where offered", f.File, f.Line, ErrInput, k, f.After)
		}
		by := sd
		if f.AfterSide != "" {
			var ok bool
			if by, ok = SideNamed(f.AfterSide); !ok {
				return fmt.Errorf("%s:%d: %w: after_side %q, want source or destination", f.File, f.Line, ErrInput, f.AfterSide)
			}
		}
		m.after[k][sd], m.by[k][sd] = f.After, by
		m.aimed++
		m.rank[k][sd] = m.aimed
	case AtTime(k):
		return fmt.Errorf("%s:%d: %w: a %s of worker %d holds no mark on a request", f.File, f.Line, ErrInput, k, f.Worker)
	case NamesFact(k):
		to, hasTo := SideNamed(f.To)
		m.facts[k].Add(to, hasTo, f.Msg)
	case NamesSide(k):
		if hasSide {
			m.on[k] |= 1 << sd
		}
	default:
		m.on[k] |= either
	}
	return nil
}

// MarkSide holds a mark of kind k for the request, on side sd if the
// kind's move names a side: what a worker holds for the side it serves.
// It reports false for a kind no such mark strikes (a fact's, a worker's
// at a time, one no plan schedules).
func (m *Marks) MarkSide(k system.Fault, sd model.Side) bool {
	if !Planned(k) || AtTime(k) || NamesFact(k) {
		return false
	}
	if NamesSide(k) {
		m.on[k] |= 1 << sd
	} else {
		m.on[k] |= either
	}
	return true
}

// bit is the mark of kind k that its move mv strikes.
func bit(k system.Fault, mv system.Move) sides {
	if NamesSide(k) {
		return 1 << uint8(mv.Arg)
	}
	return either
}

// Offered strikes a mark where its move is first offered: the first of
// moves (the checker's order) that is the move of a kind struck where
// offered (FaultKind.Offered),
// on a side the request holds a mark of that kind for, that only allows
// (nil: any), and that waits for no mark its phase set earlier in the
// plan. It spends the mark and returns the move and its kind; the driver
// takes the move.
func (m *Marks) Offered(moves []system.Move, only func(system.Fault, system.Move) bool) (system.Move, system.Fault, bool) {
	for _, mv := range moves {
		k, ok := mv.Kind.Spends()
		if !ok || k.Move() != mv.Kind || !system.FaultKinds[k].Offered {
			continue
		}
		b := bit(k, mv)
		if m.on[k]&b == 0 || (only != nil && !only(k, mv)) || m.waits(k, b) {
			continue
		}
		m.on[k] &^= b
		m.phase[k][markIndex(b)] = 0
		return mv, k, true
	}
	return system.Move{}, 0, false
}

// Instead strikes a mark in place of the protocol move p a driver is
// about to take: a kind struck in place of p's kind (FaultKind.Instead),
// on the fact p carries
// for a kind whose move takes one. It spends the mark and returns the
// fault's move, which the driver takes instead of p. Of kinds that could
// take p's place the one later in the fault table strikes (a loss before
// a duplicate: the fact is gone, not delivered twice).
func (m *Marks) Instead(p system.Move) (system.Move, system.Fault, bool) {
	for i := int(system.NumFaults) - 1; i >= 0; i-- {
		k := system.Fault(i)
		kind := &system.FaultKinds[k]
		if kind.Instead == 0 || kind.Instead != p.Kind {
			continue
		}
		if NamesFact(k) {
			if !m.facts[k].Take(model.Side(p.Arg), p.Msg) {
				continue
			}
		} else {
			if m.on[k]&either == 0 {
				continue
			}
			m.on[k] &^= either
		}
		f := system.Move{Kind: k.Move(), H: p.H}
		if NamesFact(k) || NamesSide(k) {
			f.Arg = p.Arg
		}
		if NamesFact(k) {
			f.Msg = p.Msg
		}
		return f, k, true
	}
	return system.Move{}, 0, false
}

// Replaces reports whether a mark waits to take the place of the next
// protocol move of kind pk (Instead): a driver gives such a move no time
// of its own.
func (m *Marks) Replaces(pk system.MoveKind) bool {
	for k := range system.NumFaults {
		kind := &system.FaultKinds[k]
		if kind.Instead != 0 && kind.Instead == pk && (m.facts[k].Left() > 0 || m.on[k] != 0) {
			return true
		}
	}
	return false
}

// Has reports whether the request holds a mark of kind k on side sd
// (either side's, for a kind whose move names none).
func (m *Marks) Has(k system.Fault, sd model.Side) bool {
	b := either
	if NamesSide(k) {
		b = 1 << sd
	}
	return m.on[k]&b != 0
}

// Spend spends a mark of kind k on side sd (either side's, for a kind
// whose move names none), for a driver that strikes the kind by a rule
// of its own; it reports whether the request held one.
func (m *Marks) Spend(k system.Fault, sd model.Side) bool {
	if !m.Has(k, sd) {
		return false
	}
	if NamesSide(k) {
		m.on[k] &^= 1 << sd
	} else {
		m.on[k] &^= either
	}
	return true
}

// Each calls fn for every mark held of a kind whose move names no fact,
// in the fault table's order: per side for a kind whose move names one,
// once with either for the others.
func (m *Marks) Each(fn func(k system.Fault, sd model.Side, either bool)) {
	for k := range system.NumFaults {
		for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
			if m.on[k]&(1<<sd) != 0 {
				fn(k, sd, false)
			}
		}
		if m.on[k]&either != 0 {
			fn(k, 0, true)
		}
	}
}

// Left counts the faults held that never struck.
func (m *Marks) Left() int {
	n := 0
	for k := range system.NumFaults {
		n += m.facts[k].Left() + bits.OnesCount8(uint8(m.on[k]))
	}
	for _, a := range m.RestartAfter {
		if a != "" {
			n++
		}
	}
	m.PhaseMarks(func(system.Fault, model.Side, string) { n++ })
	return n
}
