// Package checker explores what the composed system (checker/system) can
// do: exhaustive search, random and swarm walks, runs stepped by
// hand, and the reports and trace files they produce. It reaches states
// only through the system's exported seam (checker/system's doc).
//
// Check runs an exhaustive breadth-first search: canonical packed keys,
// 64-bit fingerprints in sharded open-addressing tables (or exact keys,
// a bit array, or a store that spills to disk: one visited interface),
// symmetry reduction over interchangeable handoffs and workers,
// partial-order reduction with the system's per-move footprints, and
// parallel levels whose results do not depend on the number of workers.
// It stops at the first violation and rebuilds the shortest trace by
// replay; with liveness it keeps a drain chain's edge per state and
// checks EventuallyDrained on them, searching again with every edge
// where a chain does not drain (liveness.go). Walk runs seeded random and swarm walks under a
// fault schedule (Limits.Schedule: by default each fault waits for a step of its
// own), counts what they covered and shrinks a failure. Apply steps a
// run by hand for scenario files and trace replay. Reports render as
// text, JSON and Mermaid sequence diagrams.
package checker
