// Package machines holds the source (prefill) and destination (decode) role
// machines of the KV handoff, generated from the tables in spec/.
//
// Everything here but this file and diagrams.go is generated: edit spec/
// and run go generate ./... instead. source.md and destination.md are the
// reviewable transition docs (tables and Mermaid diagrams); the *.svg
// files are the same diagrams laid out by Graphviz, one per role and
// policy, which the explorer embeds.
//
// The machines are pure. Step takes a state, a policy and an event and
// returns the next state and the actions as data; it does no I/O and keeps
// no hidden state. Delivery, loss, duplication, timers, restarts and the
// physical meaning of every action live in model/ and checker/.
//
// Source and destination have distinct types for states, events and
// actions, so handing a destination event to a source machine does not
// compile.
package machines

//go:generate go run ../gen/handoffgen -out .
