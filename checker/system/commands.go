package system

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/handoffcheck/handoffcheck/model"
)

// Commands is a set of command kinds: those that take effect later, when
// a worker's scheduler core applies them (the command path).
type Commands uint8

// allCommands is every command kind.
const allCommands = Commands(1<<model.CmdActivate | 1<<model.CmdRelease | 1<<model.CmdCancel)

// Has reports whether a kind is in the set.
func (c Commands) Has(k model.Cmd) bool { return c&(1<<k) != 0 }

// ParseCommands reads a configuration's "commands": true (every kind),
// false (none), or a list of kinds.
func ParseCommands(raw json.RawMessage) (Commands, error) {
	var on bool
	if err := json.Unmarshal(raw, &on); err == nil {
		if on {
			return allCommands, nil
		}
		return 0, nil
	}
	var names []string
	want := fmt.Sprintf("commands is true, false or a list of %s", kindNames())
	if err := json.Unmarshal(raw, &names); err != nil {
		return 0, fmt.Errorf("%s, not %s", want, raw)
	}
	var c Commands
	for _, n := range names {
		k := model.CmdNone + 1
		for k < model.NumCmds && k.String() != n {
			k++
		}
		if k == model.NumCmds {
			return 0, fmt.Errorf("%s: %q is not a command kind", want, n)
		}
		if c.Has(k) {
			return 0, fmt.Errorf("commands lists %q twice", n)
		}
		c |= 1 << k
	}
	return c, nil
}

func kindNames() string {
	var out []string
	for k := model.CmdNone + 1; k < model.NumCmds; k++ {
		out = append(out, fmt.Sprintf("%q", k.String()))
	}
	return strings.Join(out, ", ")
}

// commandKind is an action that is a scheduler command (the command path,
// docs/lifecycle.md section 3): the side whose scheduler core applies it,
// the kind of command it is there, and the events with which the core
// answers that side's machine.
type commandKind struct {
	act             action
	side            model.Side
	cmd             model.Cmd
	applied, noOp   string
	appliedEv, noEv uint8
}

// commandKinds is every action that is a scheduler command. Making an
// action a command is one entry here, its answers in the vocabulary
// (spec.Default, spec.LaterEvents) and its physics in model.ApplyCommand.
var commandKinds = func() []commandKind {
	ks := []commandKind{
		{act: aDstActivateDestination, side: model.DestinationSide, cmd: model.CmdActivate, applied: "ActivationApplied", noOp: "ActivationNoOp"},
		{act: aSrcReleaseSource, side: model.SourceSide, cmd: model.CmdRelease, applied: "ReleaseApplied", noOp: "ReleaseNoOp"},
		{act: aDstReleaseDestination, side: model.DestinationSide, cmd: model.CmdRelease, applied: "ReleaseApplied", noOp: "ReleaseNoOp"},
		{act: aSrcStopPrefill, side: model.SourceSide, cmd: model.CmdCancel, applied: "CancelApplied", noOp: "CancelNoOp"},
		{act: aDstWithdrawReservation, side: model.DestinationSide, cmd: model.CmdCancel, applied: "CancelApplied", noOp: "CancelNoOp"},
	}
	for i := range ks {
		k := &ks[i]
		r := roleOf(k.side)
		a, n := eventID(r, k.applied), eventID(r, k.noOp)
		if a < 0 || n < 0 {
			panic("checker: the answers of command " + k.act.String() + " are not in the vocabulary: run make generate")
		}
		k.appliedEv, k.noEv = uint8(a), uint8(n)
	}
	return ks
}()

// commandOf is the index in commandKinds of each action, or -1.
var commandOf = func() (m [numActions]int8) {
	for a := range m {
		m[a] = -1
	}
	for i, k := range commandKinds {
		m[k.act] = int8(i)
	}
	return m
}()

// answers is, per side, command kind and applied, the event with which
// the side's core answers (commandKinds).
var answers = func() (a [2][model.NumCmds][2]uint8) {
	for _, k := range commandKinds {
		a[k.side][k.cmd] = [2]uint8{k.noEv, k.appliedEv}
	}
	return a
}()

// answer is the event with which side's core answers a command.
func answer(side model.Side, c model.Cmd, applied bool) uint8 {
	if applied {
		return answers[side][c][1]
	}
	return answers[side][c][0]
}

// cmdMode is how a command takes effect in a run.
type cmdMode uint8

const (
	// cmdDirect: the action acts in its row, with no answer: a spec file
	// written before the command's answers existed keeps the meaning it
	// had then (spec.LaterEvents).
	cmdDirect cmdMode = iota
	// cmdAtOnce: the core applies the command in the row that sends it
	// and answers after the row (the command path off).
	cmdAtOnce
	// cmdQueued: the core applies it later, in its own task (mvApply),
	// and anything may happen in between (the command path on).
	cmdQueued
)

// commandModes says, per side and command kind, how a command takes
// effect: through the side's scheduler core whenever the side's table
// declares the command's answers, later when the command path has the
// kind.
func commandModes(p *Protocol, later Commands) (m [2][model.NumCmds]cmdMode) {
	for _, k := range commandKinds {
		t := p.spec.Table(roleOf(k.side))
		switch {
		case t.EventIndex(k.applied) < 0 || t.EventIndex(k.noOp) < 0:
			m[k.side][k.cmd] = cmdDirect
		case later.Has(k.cmd):
			m[k.side][k.cmd] = cmdQueued
		default:
			m[k.side][k.cmd] = cmdAtOnce
		}
	}
	return m
}

// applyCommand is a side's scheduler core applying the oldest command it
// holds for a handoff and answering the side's record.
func (c *System) applyCommand(s *State, tx *model.Tx, cov *Coverage, h int, side model.Side) {
	cmd, applied := tx.ApplyCommand(h, side)
	c.fire(s, tx, cov, roleOf(side), h, answer(side, cmd, applied))
}
