// Package model is the reference world of the KV handoff: what exists
// physically, judged without knowing any protocol state.
//
// A World holds, per worker, the block pool in its disjoint categories
// (free, cached, active, pinned_source, reserved_destination), the request
// slots and admission headroom (never counted as blocks), the in-flight
// count and the ledgers the routers keep about it (prefill compute load and
// request ownership, decode selection-time booking); and per handoff
// attempt, where it was routed, what each side holds for it, its transfer
// registrations and transfer, its timers, the facts in flight in each
// direction, and the one life of each resource it holds (docs/lifecycle.md
// sections 2, 3 and 7). Worlds are fixed-size values: cloning is a copy and
// Key packing is canonical (see pack.go).
//
// Operations run in a Tx and record physical effects in its Journal: a
// pin that ended while a read could still use it, pages freed while a
// write could land, a transfer started or written without a reservation,
// an activation, a Stored publication, a resource begun or ended. One
// function per invariant of docs/lifecycle.md section 4, named exactly as
// there, judges those effects (step invariants) or the world (state
// invariants); the checker runs them on every step and every new state.
//
// Pricing lives here too: linear (bytes per token) and grouped (vLLM
// 0.31.0/0.32.0 NIXL rules per cache group), with typed units (Tokens,
// Blocks, Bytes) so that a block count cannot be mixed with a token count.
// The blocks a destination reserves and a transfer moves come from pricing:
// only the page-aligned part the destination's prefix cache lacks.
package model
