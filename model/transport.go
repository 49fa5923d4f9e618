package model

import "strings"

// Msg is a fact one role sends the other over the lossy transport. Facts
// are idempotent and keyed by the handoff attempt (docs/lifecycle.md section 3).
type Msg uint8

const (
	// MsgNone is the zero value, never sent.
	MsgNone Msg = iota
	// MsgDestinationReserved tells the source where to write (destination-first).
	MsgDestinationReserved
	// MsgReaderCompleted tells the source its blocks were read.
	MsgReaderCompleted
	// MsgLeaseRenewed is the destination's heartbeat.
	MsgLeaseRenewed
	// MsgCancelled says the sender gave the handoff up.
	MsgCancelled
	// MsgReceiveCompleted tells the destination its KV is valid (destination-first).
	MsgReceiveCompleted
	// NumMsgs is the number of message kinds.
	NumMsgs
)

var msgNames = [...]string{"-", "DestinationReserved", "ReaderCompleted", "LeaseRenewed", "Cancelled", "ReceiveCompleted"}

func (m Msg) String() string { return msgNames[m] }

// ChannelCap bounds the messages in flight in one direction of a handoff.
// Identical facts in flight coalesce (they are idempotent), so a channel
// holds at most one message of each kind.
const ChannelCap = 4

// Channel is the ordered messages in flight to one side of a handoff. The
// environment may deliver any of them (reordering), deliver one and keep it
// (duplicate), or drop it (loss).
type Channel struct {
	N uint8
	M [ChannelCap]Msg
}

// Has reports whether a message of the kind is in flight.
func (c *Channel) Has(m Msg) bool {
	for i := 0; i < int(c.N); i++ {
		if c.M[i] == m {
			return true
		}
	}
	return false
}

// Index is the position of a message of the kind in flight (0: the
// oldest), or -1.
func (c *Channel) Index(m Msg) int {
	for i := 0; i < int(c.N); i++ {
		if c.M[i] == m {
			return i
		}
	}
	return -1
}

// Send puts a message in flight unless an identical one already is.
// It reports whether the channel changed.
func (c *Channel) Send(m Msg) bool {
	if c.Has(m) {
		return false
	}
	if int(c.N) == ChannelCap {
		panic("model: channel overflow: more message kinds than ChannelCap")
	}
	c.M[c.N] = m
	c.N++
	return true
}

// Take removes and returns the i-th message in flight.
func (c *Channel) Take(i int) Msg {
	m := c.M[i]
	copy(c.M[i:c.N], c.M[i+1:c.N])
	c.N--
	c.M[c.N] = MsgNone
	return m
}

func (c *Channel) String() string {
	if c.N == 0 {
		return "[]"
	}
	parts := make([]string, c.N)
	for i := range parts {
		parts[i] = c.M[i].String()
	}
	return "[" + strings.Join(parts, " ") + "]"
}
