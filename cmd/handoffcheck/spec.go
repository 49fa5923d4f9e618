package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/machines/interp"
	"github.com/handoffcheck/handoffcheck/spec"
)

func init() {
	register("spec", "print the built-in transition tables as versioned JSON (a starting point for variants)", cmdSpec)
	register("validate", "check a spec variant file: tables well formed, vocabulary known to the model", cmdValidate)
}

func cmdSpec(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("spec", flag.ContinueOnError)
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	out, err := spec.Default().Format()
	if err != nil {
		fmt.Fprintf(stderr, "handoffcheck spec: %v\n", err)
		return exitUsage
	}
	stdout.Write(out)
	return exitOK
}

func cmdValidate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: handoffcheck validate FILE.json")
		fs.PrintDefaults()
	}
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "handoffcheck validate: want exactly one spec file")
		return exitUsage
	}
	file := fs.Arg(0)
	data, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(stderr, "handoffcheck validate: %v\n", err)
		return exitUsage
	}
	s, err := spec.Parse(file, data)
	if err != nil {
		fmt.Fprintf(stderr, "handoffcheck validate: %v\n", err)
		return exitUsage
	}
	if err := checker.CheckVocabulary(s); err != nil {
		fmt.Fprintf(stderr, "handoffcheck validate: %s: %v\n", file, err)
		return exitUsage
	}
	if _, err := interp.New(s); err != nil {
		fmt.Fprintf(stderr, "handoffcheck validate: %s: %v\n", file, err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "%s: valid: %d source rows, %d destination rows; run it with: handoffcheck check --spec %s\n",
		file, len(s.Source.Rows), len(s.Destination.Rows), file)
	return exitOK
}
