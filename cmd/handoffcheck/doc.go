// Command handoffcheck verifies the prefill-to-decode KV handoff lifecycle
// of disaggregated LLM serving. It parses flags and calls the packages;
// reports are rendered by the packages that compute them.
//
//	handoffcheck check     explore every ordering of a configuration's moves (or seeded random walks) and check every invariant
//	handoffcheck conform   judge a running system's observation logs against the spec and the model
//	handoffcheck explore   serve a web page on the loopback interface that walks a run's states and traces, or draws judged logs
//	handoffcheck live      run the machines as real processes over loopback TCP, with real faults, and report what every worker held at the end
//	handoffcheck merge     merge the JSON reports of the shards of one random or swarm search into its report
//	handoffcheck mutate    break the built-in tables one row at a time and report how many mutants the checker kills
//	handoffcheck price     price the bytes a handoff transfer moves
//	handoffcheck replay    replay a trace file step by step and judge every step
//	handoffcheck simulate  run the verified machines on a virtual clock over a workload and judge every step and the timed properties
//	handoffcheck spec      print the built-in transition tables as versioned JSON (a starting point for variants)
//	handoffcheck timeline  simulate a named scenario and write its timeline, plots and report
//	handoffcheck validate  check a spec variant file: tables well formed, within the checker's limits, vocabulary known to the model, every state reachable
//	handoffcheck worker    run one worker process of a live run (live starts these itself)
//	handoffcheck workload  generate request workloads for the simulator, or check and summarize workload files
//
// Exit codes, the same for every command (docs/cli.md):
//
//	0  success: nothing violated
//	1  an invariant is violated
//	2  bad usage or bad input; nothing was judged
//	3  interrupted (Ctrl-C): the report covers what ran and lists what did not
//	4  inconclusive: the search's bound cut it before a verdict (conform, live)
//
// handoffcheck help COMMAND prints a command's flags with their defaults and
// the exit codes it can return.
//
// This comment is rendered from the command registry by
// TestDocGo_IsTheRegistry (go test ./cmd/handoffcheck -run
// TestDocGo_IsTheRegistry -rewrite, or make rewrite): edit the registry,
// not this file.
package main
