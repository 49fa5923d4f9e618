// Command handoffcheck verifies the prefill-to-decode KV handoff lifecycle
// of disaggregated LLM serving. It parses flags and calls the packages;
// reports are rendered by the checker.
//
//	handoffcheck check     explore every ordering (or random walks) and check every invariant
//	handoffcheck replay    replay a trace file step by step
//	handoffcheck spec      print the built-in transition tables as JSON
//	handoffcheck validate  check a spec variant file
//	handoffcheck mutate    measure how many broken tables the checker catches
//	handoffcheck price     price the bytes a handoff transfer moves
//	handoffcheck simulate  run the machines on a virtual clock over a workload, with timed properties
//	handoffcheck timeline  simulate a named scenario and write its timeline, plots and report
//	handoffcheck workload  generate or check request workloads
//
// Exit codes, the same for every command (docs/cli.md): 0 nothing
// violated, 1 an invariant is violated, 2 bad usage or bad input, 3
// interrupted. `handoffcheck help COMMAND` prints a command's flags with
// their defaults and the exit codes it can return.
package main
