package model

import (
	"errors"
	"fmt"
)

// Rank is how an engine rank serves: one role of a disaggregated pair, or
// both roles in one process (aggregated), as vLLM runs a rank without a KV
// connector.
type Rank uint8

const (
	// PrefillRank computes prompts and hands their KV off: the source role.
	PrefillRank Rank = iota + 1
	// DecodeRank receives handed-off KV and decodes: the destination role.
	DecodeRank
	// AggregatedRank prefills and decodes its own requests in place.
	AggregatedRank
)

var rankNames = map[Rank]string{PrefillRank: "prefill", DecodeRank: "decode", AggregatedRank: "aggregated"}

func (r Rank) String() string {
	if s, ok := rankNames[r]; ok {
		return s
	}
	return fmt.Sprintf("Rank(%d)", uint8(r))
}

// ParseRank reads a rank by its name.
func ParseRank(s string) (Rank, bool) {
	for r, n := range rankNames {
		if n == s {
			return r, true
		}
	}
	return 0, false
}

// HandoffCommand is a command of the handoff path that a rank's scheduler
// takes from its role (docs/lifecycle.md section 3, the command path): the
// source's three and the destination's four.
type HandoffCommand uint8

const (
	// SubmitHandoffPrefill queues a prefill whose blocks are held for a
	// handoff when it finishes.
	SubmitHandoffPrefill HandoffCommand = iota + 1
	// ReleaseSource drops the source's pin (model: CmdRelease on the source).
	ReleaseSource
	// CancelSource stops a queued or running handoff prefill (StopPrefill).
	CancelSource
	// ReserveDestination reserves the destination's pages.
	ReserveDestination
	// ActivateDestination turns the reserved pages into active ones.
	ActivateDestination
	// ReleaseDestination returns the destination's reservation.
	ReleaseDestination
	// WithdrawReservation takes back a reservation request not yet applied.
	WithdrawReservation
)

// HandoffCommands lists every handoff command, the source's first.
var HandoffCommands = []HandoffCommand{SubmitHandoffPrefill, ReleaseSource, CancelSource,
	ReserveDestination, ActivateDestination, ReleaseDestination, WithdrawReservation}

var handoffCommandNames = map[HandoffCommand]string{
	SubmitHandoffPrefill: "SubmitHandoffPrefill", ReleaseSource: "ReleaseSource", CancelSource: "CancelSource",
	ReserveDestination: "ReserveDestination", ActivateDestination: "ActivateDestination",
	ReleaseDestination: "ReleaseDestination", WithdrawReservation: "WithdrawReservation",
}

func (c HandoffCommand) String() string {
	if s, ok := handoffCommandNames[c]; ok {
		return s
	}
	return fmt.Sprintf("HandoffCommand(%d)", uint8(c))
}

// Side is the role the command serves.
func (c HandoffCommand) Side() Side {
	if c <= CancelSource {
		return SourceSide
	}
	return DestinationSide
}

// ErrRefused is wrapped by every refusal of a handoff command by a rank.
var ErrRefused = errors.New("model: handoff command refused")

// Accept says whether a rank whose cache is grouped (or linear) takes a
// handoff command, and why not when it does not:
//
//   - a prefill rank takes only the source's commands and a decode rank
//     only the destination's (RoleCommands, section 4);
//   - an aggregated grouped rank takes none: vLLM builds a grouped cache's
//     transfer rules only for a rank of a disaggregated pair, so an
//     aggregated rank has no rule to truncate a prompt, hold a source or
//     size a reservation by;
//   - an aggregated linear rank takes every command, as a linear cache
//     needs no rules beyond its bytes per token.
func (r Rank) Accept(c HandoffCommand, grouped bool) error {
	if _, ok := handoffCommandNames[c]; !ok {
		return fmt.Errorf("%w: %s rank: unknown command %s", ErrRefused, r, c)
	}
	switch r {
	case PrefillRank, DecodeRank:
		want := SourceSide
		if r == DecodeRank {
			want = DestinationSide
		}
		if c.Side() != want {
			return fmt.Errorf("%w: a %s rank refuses %s: it is a %s command, and a %s rank serves only the %s role",
				ErrRefused, r, c, c.Side(), r, want)
		}
		return nil
	case AggregatedRank:
		if grouped {
			return fmt.Errorf("%w: an aggregated grouped rank refuses %s: it has no transfer rules (vLLM builds a grouped cache's rules only for a prefill or decode rank of a disaggregated pair), so it never truncates a prompt, holds a source or reserves a destination",
				ErrRefused, c)
		}
		return nil
	}
	return fmt.Errorf("%w: unknown rank %s", ErrRefused, r)
}
