// Package gen renders a spec into the typed role machines and their
// transition docs. Render is pure (spec in, files out, byte-for-byte
// deterministic, gofmt'ed by jennifer); the handoffgen command is the thin
// main that go generate runs and that writes the files.
//
// For each role it emits distinct Go types for states, events and actions,
// one small function per (state, event) that switches on the policy, a
// dispatch table, a pure Step, String methods, and a compile-time guard in
// the manner of stringer. The docs hold per role a Markdown table of every
// row with its why and a Mermaid stateDiagram-v2 for each policy.
package gen
