// Package system is the composed system: the role machines (machines/, or
// any spec run by machines/interp) with the model's world and the
// environment's moves, for one run of a configuration.
//
// A State is the world, each handoff's source and destination machine
// state, and the remaining fault budget. Moves are what the routers,
// schedulers, transfer engine, transport and timers do on their own, and
// the faults of docs/lifecycle.md section 3 (FaultKinds), each bounded by
// its budget. Every move is judged by the model's step invariants; every
// new state by its state invariants; every state where no protocol, timer
// or delivery move is enabled by Quiescence.
//
// The exported surface is the seam every driver steps the system
// through, on a schedule of its own: New builds a System from a Protocol,
// a Config and one of its Runs; Initial is the first state; Enabled fills
// a MoveSet with the enabled moves and MovesInto appends them to a
// buffer, both without allocation; Step (a move the state enables) and
// Apply (one the environment makes whatever the state) perform a move
// and judge the step invariants, ApplyTx inside a transaction the caller
// holds; CheckState, Quiescence (whether a state is quiescent, and its
// judgement if so) and Drained judge a
// state; Key is a state's canonical key (symmetry-reduced; CanonicalFrom
// a successor's, from its parent's) and UnpackTo gives the state back
// (the search hashes keys itself); Ample and Sleep are the per-move
// footprints partial-order reduction and sleep sets rely on, and
// RenameSleep renames a sleep set as the canonical form renames its
// state. Budget, Terminal, Finished, FiringText, Coverage, RoleOf and
// TimerOf are what timed drivers need besides.
//
// The tables of move kinds are here too, asked as questions, so that no
// search or driver keeps one of its own: which fault a move taken now
// spends (Move.SpendsAt), which process makes it for fairness
// (MoveSet.Process), its sleep-set slot and the workers it reads
// (System.Sleep), who takes it where the roles run
// as processes (Move.Taker), how long it takes on a driver's clock
// (Move.Takes, priced by the driver's Durations), whether a side waits
// for its worker's capacity (WaitsForCapacity), and how a counterexample
// draws it (WriteSequenceStep).
//
// The search (package checker), the simulator (checker/sim), live runs
// (checker/live) and conformance (checker/conform) all reach states
// through this seam; none of the protocol, physics or invariants is
// written again outside it.
package system
