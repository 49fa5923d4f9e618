// Package spec holds the handoff protocol as data: one declarative
// transition table per role (source = prefill, destination = decode), with
// rows from-states × event × policy → to-state + actions, each with a short
// why.
//
// The tables are the single source of truth. go generate renders them into
// the typed machines and transition docs in machines/; the table
// interpreter in machines/interp runs them directly (and so runs variants
// and mutants loaded from JSON without recompiling). Validate reports every
// problem at once, naming the row, and demands that every peer message,
// timer and restart be handled, even as an explicit ignore, in every
// non-terminal state a policy can reach. A terminal state marks a side
// that reported its terminal outcome; a variant may give it rows (the side
// keeps reacting), the built-in tables may not (ValidateBuiltin).
//
// The event and action names are the vocabulary of docs/lifecycle.md section 3;
// the model in model/ gives each action its physical meaning.
package spec
