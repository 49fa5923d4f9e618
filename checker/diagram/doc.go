// Package diagram lays a role's transition table out as a state diagram
// in SVG: the graph the Mermaid diagrams of machines/*.md draw (states as
// nodes, each row that moves as an edge labelled with its event, one
// diagram per policy), laid out by Graphviz's dot compiled to
// WebAssembly, so that it needs nothing outside the Go module.
//
// Nodes and edges carry stable ids for the explorer to mark them: a
// state's node is ROLE-STATE ("source-Pinned"), a row's edge out of a
// state is ROLE-rN-STATE ("source-r12-Pinned", N the row's number from
// 1 as the spec lists them), and every edge of row N has class rowN.
// Unlike Mermaid's arrows, which join a state pair's events into one
// label, each row has its own edge: the row that fires is the one marked.
package diagram
