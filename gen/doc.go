// Package gen renders a spec into the typed role machines and their
// transition docs. Render is pure (spec in, files out, byte-for-byte
// deterministic, gofmt'ed by jennifer); the handoffgen command is the thin
// main that go generate runs and that writes the files.
//
// For each role it emits distinct Go types for states, events and actions,
// one function per event with one case per row (labelled with the row's
// from-states, and under a policy switch only where the rows differ by
// policy), a dispatch table from event to that function written one entry
// per line, a pure Step, String methods, and a compile-time guard in the
// manner of stringer. No switch holds two identical case bodies and no row
// is written twice; cases_test.go keeps it so. The docs hold per role a
// Markdown table of every row with its why and a Mermaid stateDiagram-v2
// for each policy.
package gen
