package checker

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/system"
)

// schedule is how a random walk decides when to commit its faults.
//
// A walk that picks uniformly among the enabled moves commits a fault as
// soon as one is drawn, and a fault is enabled from the first moves on:
// most walks spend their budget early, and a bug that needs a fault late
// in a handoff's life (a cancel after decode finished) is almost never
// reached. A fault schedule gives each fault the walk may commit a step
// of its own.
type schedule uint8

const (
	// schedulePositions, the default (the zero schedule), draws a step for each fault the
	// walk may commit (one per unit of budget of every kind the walk may
	// use), uniformly over the run's horizon: one and a half times the
	// length of a walk that commits no fault. Before its step a fault is
	// not offered; from its step on it is offered like any other move.
	// A walk that ends before a position leaves that fault out, so walks
	// vary in how many faults they commit, and some commit none.
	schedulePositions schedule = iota
	// scheduleUniform picks uniformly among every enabled move, faults
	// included, as walks did before schedules existed.
	scheduleUniform
	// schedulePCT places faults as schedulePositions does and orders the
	// moves in the style of probabilistic concurrency testing: each
	// handoff, and the environment (moves on a worker), has a random
	// priority; the walk takes a move of the highest-priority one that has
	// any, and at pctChanges steps drawn over the horizon the one that
	// moved drops below all others. One handoff runs ahead of the others,
	// which gives a late fault on it more room while the others still run.
	schedulePCT
	numSchedules
)

var scheduleNames = [numSchedules]string{"positions", "uniform", "pct"}

// name is the schedule's name, as --schedule takes it.
func (s schedule) name() string {
	if s < numSchedules {
		return scheduleNames[s]
	}
	return fmt.Sprintf("Schedule(%d)", uint8(s))
}

// parseSchedule finds a schedule by name: positions (the default, also
// named by the empty name, Limits.Schedule's zero value), uniform or
// pct; the error for a name that is none of them lists them.
func parseSchedule(name string) (schedule, error) {
	if name == "" {
		return schedulePositions, nil
	}
	for s, n := range scheduleNames {
		if n == name {
			return schedule(s), nil
		}
	}
	return 0, fmt.Errorf("unknown schedule %q (want %s)", name, strings.Join(scheduleNames[:], ", "))
}

// pctChanges is how many priority change points a PCT walk draws.
const pctChanges = 2

// pilotWalks is how many fault-free walks measure a run's horizon.
const pilotWalks = 32

// pilotStream is the random stream of the pilot walks; their seeds are
// fixed (0 to pilotWalks-1), so that the horizon, and with it every walk,
// does not depend on --seed or on how many walks run: walk i alone, on
// seed Seed+i, is the same walk.
const pilotStream = 0x70696c6f74 // "pilot"

// scheduledFault is one fault of a walk's schedule: the kind and the step
// (counted from 0) from which it is due.
type scheduledFault struct {
	Fault system.Fault
	Step  int
}

func (f scheduledFault) text() string { return fmt.Sprintf("%s at %d", f.Fault, f.Step) }

// faultPlan is the fault schedule of one walk.
type faultPlan struct {
	pos   [system.NumFaults][]int // steps at which each unit of budget comes due, ascending
	spent [system.NumFaults]int   // units committed
}

// planFaults draws a position over [0, horizon) for every unit of budget
// of every fault kind the walk may use.
func (c *Checker) planFaults(rng *rand.Rand, allowed *[system.NumMoveKinds]bool, horizon int) *faultPlan {
	p := &faultPlan{}
	b := c.Initial().B
	for f := system.Fault(0); f < system.NumFaults; f++ {
		if mv := f.Move(); mv != 0 && !allowed[mv] {
			continue
		}
		for range b.Left(f) {
			p.pos[f] = append(p.pos[f], rng.IntN(horizon))
		}
		slices.Sort(p.pos[f])
	}
	return p
}

// due reports whether a unit of kind f has come due by step i and is not
// yet committed.
func (p *faultPlan) due(f system.Fault, i int) bool {
	n := 0
	for _, s := range p.pos[f] {
		if s <= i {
			n++
		}
	}
	return n > p.spent[f]
}

// list is the schedule, by step and then by kind.
func (p *faultPlan) list() []scheduledFault {
	var out []scheduledFault
	for f := range p.pos {
		for _, s := range p.pos[f] {
			out = append(out, scheduledFault{Fault: system.Fault(f), Step: s})
		}
	}
	slices.SortStableFunc(out, func(a, b scheduledFault) int { return a.Step - b.Step })
	return out
}

// horizon is the number of moves over which fault positions are drawn:
// one and a half times the median length of pilotWalks walks that commit
// no fault, each at most steps long. It depends on the run and on steps
// only.
func (c *Checker) horizon(steps int) int {
	lengths := make([]int, pilotWalks)
	var ms system.MoveSet
	for w := range lengths {
		rng := rand.New(rand.NewPCG(uint64(w), pilotStream))
		s := c.Initial()
		n := 0
		for n < steps {
			c.Enabled(&s, &ms)
			var pick [len(ms.M)]system.Move
			k := 0
			for j := 0; j < ms.N; j++ {
				if _, fault := ms.M[j].SpendsAt(&s, ms.Stuck); !fault {
					pick[k] = ms.M[j]
					k++
				}
			}
			if k == 0 {
				break
			}
			// Invariants are not judged: the horizon is how long the
			// protocol runs, not how soon a broken one fails.
			if _, _, err := c.Step(&s, pick[rng.IntN(k)], nil); err != nil {
				panic("checker: a pilot walk took a move its state did not enable: " + err.Error())
			}
			n++
		}
		lengths[w] = n
	}
	slices.Sort(lengths)
	return max(1, lengths[(len(lengths)-1)/2]*3/2)
}

// pctOrder is the priority order of a PCT walk: a priority per actor (each
// handoff, then the environment) and the steps at which the actor that
// moves drops to the lowest priority.
type pctOrder struct {
	prio    []int
	changes []int
	lowest  int
}

func newPCTOrder(rng *rand.Rand, actors, horizon int) *pctOrder {
	o := &pctOrder{prio: make([]int, actors)}
	for i, p := range rng.Perm(actors) {
		o.prio[i] = p
	}
	for range pctChanges {
		o.changes = append(o.changes, rng.IntN(horizon))
	}
	slices.Sort(o.changes)
	return o
}

// actor is whose move m is: its handoff's, or the environment's (nH) for
// a move on a worker (freeing background load, a restart, an occupation).
func (c *Checker) actor(m system.Move) int {
	if m.H >= 0 {
		return int(m.H)
	}
	return c.World().NumHandoffs()
}

// pick chooses uniformly among the moves of the highest-priority actor
// that has any.
func (o *pctOrder) pick(c *Checker, rng *rand.Rand, moves []system.Move) system.Move {
	best := -1
	for _, m := range moves {
		if a := c.actor(m); best < 0 || o.prio[a] > o.prio[best] {
			best = a
		}
	}
	var mine [maxMoves]system.Move
	n := 0
	for _, m := range moves {
		if c.actor(m) == best {
			mine[n] = m
			n++
		}
	}
	return mine[rng.IntN(n)]
}

// moved lowers the priority of the actor of m when step i is a change point.
func (o *pctOrder) moved(c *Checker, m system.Move, i int) {
	for _, s := range o.changes {
		if s == i {
			o.lowest--
			o.prio[c.actor(m)] = o.lowest - len(o.prio)
		}
	}
}
