// Package workload reads, writes and generates the request workloads the
// simulator replays: which requests arrive when, how long their prompts
// and outputs are, which of them share a prompt prefix, and which the
// client cancels. It is called a workload, not a trace, so that it is not
// confused with the checker's counterexample trace files.
//
// A workload is a JSON Lines file, versioned by its header line:
//
//	{"format":"handoffcheck.workload/v1","name":"default","seed":1,"generator":{...}}
//	{"arrival_ms":12.5,"prompt_tokens":2048,"output_tokens":128,"prefix_group":"g3","prefix_tokens":1024,"cancel_ms":40,"id":"r17"}
//
// Only "format" is required in the header; "name", "seed" and "generator"
// record where the workload came from (Generate writes the parameters it
// ran with, so that the file can be made again). After the header comes
// one request per line, in arrival order: arrival times never decrease, so
// that a simulator can read the file as it goes, in constant memory, and
// never has to sort it. Each request is numbered from 0 in file order
// (Request.Index); request i is on line i+2. Requests of one prefix group
// share the leading tokens of their prompts: two of them share their
// first min(a.prefix_tokens, b.prefix_tokens) tokens, which is what a
// prefix cache can reuse.
//
// Times are milliseconds in the file, so that people can read them, and
// whole microseconds inside (Request.ArrivalUS, Request.CancelUS), so that
// the simulator's clock is exact integer arithmetic: a time in the file is
// rounded to the nearest microsecond when read, and written back as the
// shortest decimal of that many milliseconds.
//
// Reading refuses what a simulator could not replay faithfully: blank
// lines, unknown fields, a key given twice, numbers that are not finite,
// fractions where counts are wanted, arrivals out of order. Every refusal
// reads "file:line: ...: what is wrong, what was expected" and wraps
// ErrWorkload, so that a command can map it to its bad-input exit code.
// No input makes the reader panic.
//
// The JSON Schema (draft 2020-12) of both line kinds is
// docs/workload.schema.json, one file whose $defs "header" and "request"
// describe the two kinds of line (and "generator", the header's record of
// the generator's parameters). A test compares its property names and
// required fields with what this package parses, so the two cannot drift.
package workload
