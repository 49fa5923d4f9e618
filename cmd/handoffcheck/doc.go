// Command handoffcheck verifies the prefill-to-decode KV handoff lifecycle
// of disaggregated LLM serving. It parses flags and calls the packages; no
// logic lives here.
//
//	handoffcheck check     explore every ordering (or random walks) and check every invariant
//	handoffcheck replay    replay a trace file step by step
//	handoffcheck spec      print the built-in transition tables as JSON
//	handoffcheck validate  check a spec variant file
//	handoffcheck price     price the bytes a handoff transfer moves
//
// Exit codes: 0 no violation, 1 an invariant is violated, 2 bad usage or
// bad input. See README.md for each command's flags and output.
package main
