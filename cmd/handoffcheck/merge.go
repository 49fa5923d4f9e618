package main

import (
	"fmt"

	"github.com/handoffcheck/handoffcheck/checker"
)

var mergeCommand = &command{
	name:    "merge",
	args:    "[--json] SHARD.json...",
	summary: "merge the JSON reports of the shards of one random or swarm search into its report",
	detail: "Each shard is one 'check --walks N --shard K/M --json' (docs/scale.md). The merged report counts the walks one\n" +
		"process would have counted, up to the first failing walk, and shows that walk's counterexample. Every shard of the\n" +
		"search must be given, once.",
	exits: []exitDoc{
		{exitOK, "no shard found a violation"},
		{exitViolation, "a shard found a violation: the report shows the first failing walk"},
		{exitUsage, "bad usage, or reports that are not every shard of one search"},
	},
	run: cmdMerge,
}

func init() { registerCommand(mergeCommand) }

func cmdMerge(cmd *command, e *env, args []string) int {
	fs := cmd.flags()
	asJSON := fs.Bool("json", false, "print the merged report as one JSON object, in the form of a walk report")
	if code, ok := cmd.parse(e, fs, args, 1, -1); !ok {
		return code
	}
	read := func(file string) ([]byte, error) { return readInput(e.ctx, file) }
	out, violated, err := checker.MergeWalks(fs.Args(), read, *asJSON)
	if err != nil {
		return cmd.bad(e, "%v", err)
	}
	if *asJSON {
		fmt.Fprintf(e.stdout, "%s\n", out)
	} else {
		fmt.Fprintf(e.stdout, "%s", out)
	}
	if violated {
		return exitViolation
	}
	return exitOK
}
