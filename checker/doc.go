// Package checker composes the role machines (machines/, or any spec run by
// machines/interp) with the model's world and the environment's moves,
// and explores what can happen.
//
// A State is the world, each handoff's source and destination machine
// state, and the remaining fault budget. Moves are what the routers,
// schedulers, transfer engine, transport and timers do on their own, and the
// faults of docs/lifecycle.md section 3, each bounded by its budget. Every move
// is judged by the model's step invariants; every new state by its state
// invariants; every state where no protocol, timer or delivery move is
// enabled by Quiescence.
//
// Explore is an exhaustive breadth-first search: canonical packed keys,
// 64-bit fingerprints in sharded open-addressing tables (or exact keys),
// symmetry reduction over interchangeable handoffs and workers, and parallel
// levels whose results do not depend on the number of workers. It stops at
// the first violation and rebuilds the shortest trace by replay; with
// liveness it keeps the state graph and checks EventuallyDrained. Walk runs
// seeded random and swarm walks under a fault schedule (Schedule: by
// default each fault waits for a step of its own), counts what they
// covered and shrinks a failure. Sessions step a run
// by hand for scenario files and trace replay. Reports render as text, JSON
// and Mermaid sequence diagrams.
package checker
