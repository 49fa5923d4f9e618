package machines

import "embed"

// Diagrams holds each role's state diagram under each policy as SVG,
// ROLE.POLICY.svg (source.source-first.svg), laid out from the tables by
// go generate (checker/diagram): the explorer serves them for the
// built-in tables without laying them out itself. Nodes and edges carry
// the ids that package gives them.
//
//go:embed *.svg
var Diagrams embed.FS
