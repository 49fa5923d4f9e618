// Package interp runs a spec's transition tables directly, without the
// generated code. It is how the toolkit checks a spec loaded at run time
// (a variant read from JSON, or a mutant derived from the default) without
// recompiling: system.FromStepper asks an *Interp for every
// (policy, state, event) of each role and builds a protocol from the
// answers.
//
// The interpreter is built on github.com/looplab/fsm, one FSM per role and
// policy. The FSM alone decides whether an event is enabled in a state and
// where it leads; the interpreter keeps beside it only what the FSM cannot
// hold, the row's actions and its number. A row that stays in place is
// given to the FSM as a self-loop, which looplab reports as
// NoTransitionError; that is a fired row here, not a failure.
//
// The generated machines in machines/ and this interpreter are two readings
// of the same tables. interp_test.go proves they agree on every
// (state, event, policy) of both roles, and that a mutated spec makes the
// interpreter differ exactly where the spec was changed.
package interp
