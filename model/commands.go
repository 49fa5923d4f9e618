package model

import "strings"

// Cmd is a scheduler command a role sends to its worker's scheduler core
// (docs/lifecycle.md section 3, the command path). The core applies its
// commands in its own task, oldest first, and answers each: applied, or a
// no-op when what the command names is no longer there. Between sending
// and applying, anything else may happen.
type Cmd uint8

const (
	// CmdNone marks the end of a queue.
	CmdNone Cmd = iota
	// CmdActivate turns a destination's reserved pages into active ones
	// (ActivateDestination).
	CmdActivate
	// CmdRelease returns what a side holds for the attempt: the source's
	// pin (ReleaseSource) or the destination's reservation
	// (ReleaseDestination).
	CmdRelease
	// CmdCancel takes back a submission the core has not yet turned into
	// held memory: the source's queued or running prefill (StopPrefill),
	// the destination's queued reservation request (WithdrawReservation).
	CmdCancel
	// NumCmds is the number of command kinds, CmdNone included.
	NumCmds
)

var cmdNames = [NumCmds]string{"none", "activate", "release", "cancel"}

func (c Cmd) String() string {
	if c < NumCmds {
		return cmdNames[c]
	}
	return "Cmd(?)"
}

// MaxQueued is how many commands of one handoff a core can hold: one of
// each kind. The core keys its commands by handoff, so a command queued
// again while the same command still waits is that command.
const MaxQueued = int(NumCmds) - 1

// CmdQueue is one handoff's commands waiting in one side's scheduler
// core, oldest first, and the cause of the queued release.
type CmdQueue struct {
	Q     [MaxQueued]Cmd
	Cause Cause
}

// Len is the number of queued commands.
func (q *CmdQueue) Len() int {
	n := 0
	for n < MaxQueued && q.Q[n] != CmdNone {
		n++
	}
	return n
}

// Has reports whether a command waits in the queue.
func (q *CmdQueue) Has(c Cmd) bool {
	for _, d := range q.Q {
		if d == c {
			return true
		}
	}
	return false
}

func (q *CmdQueue) push(c Cmd, cause Cause) {
	if q.Has(c) {
		return
	}
	q.Q[q.Len()] = c
	if c == CmdRelease {
		q.Cause = cause
	}
}

func (q *CmdQueue) pop() (Cmd, Cause) {
	c, cause := q.Q[0], q.Cause
	copy(q.Q[:], q.Q[1:])
	q.Q[MaxQueued-1] = CmdNone
	if c == CmdRelease {
		q.Cause = CauseOther
	}
	return c, cause
}

func (q CmdQueue) String() string {
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < q.Len(); i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(q.Q[i].String())
		if q.Q[i] == CmdRelease {
			b.WriteString("(" + q.Cause.String() + ")")
		}
	}
	b.WriteByte(']')
	return b.String()
}

// packCmds encodes a queue in 9 bits: three 2-bit kinds and the cause.
func packCmds(q *CmdQueue) uint64 {
	return uint64(q.Q[0]) | uint64(q.Q[1])<<2 | uint64(q.Q[2])<<4 | uint64(q.Cause)<<6
}

func unpackCmds(q *CmdQueue, v uint64) {
	q.Q[0], q.Q[1], q.Q[2] = Cmd(v&3), Cmd(v>>2&3), Cmd(v>>4&3)
	q.Cause = Cause(v >> 6 & 7)
}

// QueueCommand is a command of side's machine reaching the scheduler
// core of the side whose command it is (at), which applies it later
// (ApplyCommand): until then nothing changes in the worker's memory. A
// command of the other role is misdirected (RoleCommands) and queues
// nothing. cause is why a release is sent.
func (tx *Tx) QueueCommand(h int, side, at Side, c Cmd, cause Cause) {
	if tx.command(h, side, at) {
		tx.h(h).Cmds[at].push(c, cause)
	}
}

// WouldApply reports whether a command of side would take effect now:
// whether what it names is still there. The scheduler core answers
// applied when it does, no-op when it does not.
func (tx *Tx) WouldApply(h int, side Side, c Cmd) bool {
	x := tx.h(h)
	switch {
	case c == CmdActivate:
		return x.Dst == DstReserved
	case c == CmdRelease && side == SourceSide:
		return x.Src == SrcPinned
	case c == CmdRelease:
		return x.Dst == DstReserved
	case c == CmdCancel && side == SourceSide:
		return x.Compute == ComputeQueued || x.Compute == ComputeRunning
	case c == CmdCancel:
		return x.Pending
	}
	return false
}

// ApplyCommand is side's scheduler core applying the oldest command it
// holds for handoff h (see run).
func (tx *Tx) ApplyCommand(h int, side Side) (c Cmd, applied bool) {
	x := tx.h(h)
	c, cause := x.Cmds[side].pop()
	if x.Cmds[side].Len() == 0 {
		x.Slow[side] = false // the core caught up
	}
	return c, tx.run(h, side, c, cause)
}

// Delay is side's scheduler core falling behind for handoff h: the
// commands it gets for it from now on wait until it applies them, and
// once it has applied all of them it keeps up again.
func (tx *Tx) Delay(h int, side Side) { tx.h(h).Slow[side] = true }

// RunCommand is a command of side's machine that the core of at applies
// at once, in the step that sends it: the command path without the wait.
// ok is false when the command is misdirected (RoleCommands).
func (tx *Tx) RunCommand(h int, side, at Side, c Cmd, cause Cause) (applied, ok bool) {
	if !tx.command(h, side, at) {
		return false, false
	}
	return tx.run(h, at, c, cause), true
}

// run applies a command at side's core. A command that would take effect
// does what the action it came from does in its row without the command
// path; a no-op changes nothing (the core keeps no record of what it
// already ended, so a second release finds nothing and says so).
func (tx *Tx) run(h int, side Side, c Cmd, cause Cause) bool {
	if !tx.WouldApply(h, side, c) {
		return false
	}
	switch {
	case c == CmdActivate:
		tx.activate(h)
	case c == CmdRelease && side == SourceSide:
		tx.ReleaseSource(h, side, cause)
	case c == CmdRelease:
		tx.ReleaseDestination(h, side, cause)
	case c == CmdCancel && side == SourceSide:
		tx.StopPrefill(h, side)
	case c == CmdCancel:
		tx.WithdrawReservation(h, side)
	}
	return true
}
