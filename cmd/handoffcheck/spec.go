package main

import (
	"fmt"

	"github.com/handoffcheck/handoffcheck/spec"
)

var specCommand = &command{
	name:    "spec",
	args:    "> variant.json",
	summary: "print the built-in transition tables as versioned JSON (a starting point for variants)",
	exits:   []exitDoc{{exitOK, "the tables were printed"}, {exitUsage, ""}},
	run:     cmdSpec,
}

var validateCommand = &command{
	name:    "validate",
	args:    "FILE.json",
	summary: "check a spec variant file: tables well formed, within the checker's limits, vocabulary known to the model, every state reachable",
	exits:   []exitDoc{{exitOK, "the spec is valid and check can run it"}, {exitUsage, "the spec is refused, or bad usage"}},
	run:     cmdValidate,
}

func init() {
	registerCommand(specCommand)
	registerCommand(validateCommand)
}

func cmdSpec(c *command, e *env, args []string) int {
	fs := c.flags()
	if code, ok := c.parse(e, fs, args, 0, 0); !ok {
		return code
	}
	out, err := spec.Default().Format()
	if err != nil {
		return c.bad(e, "%v", err)
	}
	e.stdout.Write(out)
	return exitOK
}

func cmdValidate(c *command, e *env, args []string) int {
	fs := c.flags()
	if code, ok := c.parse(e, fs, args, 0, -1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return c.bad(e, "want exactly one spec file, got %d arguments", fs.NArg())
	}
	file := fs.Arg(0)
	data, err := readInput(e.ctx, file)
	if err != nil {
		return c.bad(e, "%v", err)
	}
	// Parse refuses, each at its file:line, everything a run would:
	// table structure, the checker's limits, the model's vocabulary and
	// unreachable states.
	s, err := spec.Parse(file, data)
	if err != nil {
		return c.bad(e, "%v", err)
	}
	// Then the spec is loaded exactly as check loads it, so that nothing
	// check refuses passes here.
	if _, _, err := protocolOf(file, s); err != nil {
		return c.bad(e, "%v", err)
	}
	fmt.Fprintf(e.stdout, "%s: valid: %d source rows, %d destination rows; run it with: handoffcheck check --spec %s\n",
		file, len(s.Source.Rows), len(s.Destination.Rows), file)
	return exitOK
}
