package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"syscall"
)

// Exit codes, the same for every command (docs/cli.md). A command lists
// the ones it can return in its help.
const (
	// exitOK: the command did what it was asked and found no violation.
	exitOK = 0
	// exitViolation: an invariant is violated (check, replay).
	exitViolation = 1
	// exitUsage: bad usage or bad input (flags, files); nothing was judged.
	exitUsage = 2
	// exitInterrupted: stopped by an interrupt (Ctrl-C) before it finished;
	// the report printed covers what ran and lists what did not.
	exitInterrupted = 3
	// exitInconclusive: a conformance search was cut by its bound before
	// it could explain a fact or prove that nothing does.
	exitInconclusive = 4
)

// exitText says what each exit code means, for help texts.
var exitText = map[int]string{
	exitOK:           "success: nothing violated",
	exitViolation:    "an invariant is violated",
	exitUsage:        "bad usage or bad input; nothing was judged",
	exitInterrupted:  "interrupted (Ctrl-C): the report covers what ran and lists what did not",
	exitInconclusive: "inconclusive: the search's bound cut it before a verdict",
}

// env is what a command runs with: where to write, and a context that an
// interrupt cancels.
type env struct {
	ctx            context.Context
	stdout, stderr io.Writer
}

type command struct {
	name    string
	args    string // the synopsis after the command name
	summary string // one line, for the command list
	detail  string // more, for the command's help
	// exits lists the exit codes the command can return, each with what
	// it means for this command ("" for the common meaning).
	exits []exitDoc
	run   func(c *command, e *env, args []string) int
}

type exitDoc struct {
	code int
	text string
}

var commands = map[string]*command{}

func registerCommand(c *command) {
	if c.name != "worker" {
		interruptible(c)
	}
	commands[c.name] = c
}

// interruptible lists exit 3 in a command's help: every command a user
// runs stops on a signal with it (runContext, openInput), whether or not
// the command lists the code itself.
func interruptible(c *command) {
	if !slices.ContainsFunc(c.exits, func(x exitDoc) bool { return x.code == exitInterrupted }) {
		c.exits = append(c.exits, exitDoc{exitInterrupted, ""})
		sort.SliceStable(c.exits, func(i, j int) bool { return c.exits[i].code < c.exits[j].code })
	}
}

func main() { os.Exit(runProcess(os.Args[1:])) }

// runProcess runs a command line as the process: the first interrupt
// (SIGINT or SIGTERM) cancels the context every command runs with (its
// computation and every input it reads: openInput), so the command stops,
// prints what it has and exits 3. A second one ends the process at once.
func runProcess(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return runContext(ctx, args, os.Stdout, os.Stderr)
}

// run runs a command line without an interrupt.
func run(args []string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdout, stderr)
}

func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	e := &env{ctx: ctx, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	case "-version", "--version":
		fmt.Fprintln(stdout, versionLine())
		return exitOK
	case "help":
		if len(args) == 1 {
			usage(stdout)
			return exitOK
		}
		c, ok := commands[args[1]]
		if !ok || len(args) > 2 {
			fmt.Fprintf(stderr, "handoffcheck help: no command %q (commands: %s)\n", strings.Join(args[1:], " "), strings.Join(commandNames(), ", "))
			return exitUsage
		}
		return c.run(c, e, []string{"--help"})
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "handoffcheck: unknown command %q\n", args[0])
		usage(stderr)
		return exitUsage
	}
	code := c.run(c, e, args[1:])
	// A command that finished as if nothing happened after a signal
	// still exits 3: what it printed is what ran before the signal, and
	// a script must not take it for a pass. A worker's exit is the
	// coordinator's to read (live), not a user's.
	if code == exitOK && ctx.Err() != nil && c != workerCommand {
		fmt.Fprintf(stderr, "handoffcheck %s: interrupted by a signal: the output above is what ran before it\n", c.name)
		return exitInterrupted
	}
	return code
}

func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: handoffcheck <command> [flags] [arguments]")
	fmt.Fprintln(w, "       handoffcheck help <command> | --help | --version")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, n := range commandNames() {
		fmt.Fprintf(w, "  %-9s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "exit codes (every command):")
	for _, x := range exitCodes() {
		fmt.Fprintf(w, "  %d  %s\n", x.code, x.text)
	}
	fmt.Fprintln(w, "run 'handoffcheck help <command>' for a command's flags and exit codes")
}

// exitCodes lists every exit code in order with its common meaning; a code
// that only some commands return names them (from their help's exit
// lists), so the list cannot fall behind the commands.
func exitCodes() []exitDoc {
	codes := make([]int, 0, len(exitText))
	for code := range exitText {
		codes = append(codes, code)
	}
	sort.Ints(codes)
	var out []exitDoc
	for _, code := range codes {
		text := exitText[code]
		if code == exitInconclusive {
			var by []string
			for _, n := range commandNames() {
				if slices.ContainsFunc(commands[n].exits, func(x exitDoc) bool { return x.code == code }) {
					by = append(by, n)
				}
			}
			text += " (" + strings.Join(by, ", ") + ")"
		}
		out = append(out, exitDoc{code, text})
	}
	return out
}

// stampRevision and stampModified are set at link time by make install
// (-ldflags -X): the Go toolchain records the revision itself only when it
// sees the checkout (not in a git worktree, whose .git is a file, nor with
// GOFLAGS=-buildvcs=false), and a version line without it names nothing.
var stampRevision, stampModified string

// versionLine names the build: the module version when installed from a
// tagged release, and the revision it was built from when known.
func versionLine() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return versionOf(bi, stampRevision, stampModified)
}

// versionOf is the version line of a build: the module version (a release
// tag, or the pseudo-version the toolchain derives from the revision), and
// the revision with "+modified" when the tree had uncommitted changes. The
// toolchain's record comes first; the link-time stamp stands in for it.
func versionOf(bi *debug.BuildInfo, stampRev, stampMod string) string {
	v, rev, dirty := "devel", "", false
	if bi != nil {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if rev == "" && stampRev != "" {
		rev, dirty = stampRev, stampMod == "true"
	}
	line := "handoffcheck " + v
	if rev == "" {
		return line + " (revision unknown: built without version control information; 'make install' records it)"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+modified"
	}
	return line + " (" + rev + ")"
}

// flags makes a command's flag set. Its help goes to stdout (asked for),
// its errors to stderr.
func (c *command) flags() *flag.FlagSet {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// help writes a command's help: synopsis, summary, flags with their real
// defaults, exit codes.
func (c *command) help(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: handoffcheck %s %s\n\n%s\n", c.name, c.args, c.summary)
	if c.detail != "" {
		fmt.Fprintf(w, "\n%s\n", c.detail)
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintln(w, "\nflags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	fmt.Fprintln(w, "\nexit codes:")
	for _, x := range c.exits {
		text := x.text
		if text == "" {
			text = exitText[x.code]
		}
		fmt.Fprintf(w, "  %d  %s\n", x.code, text)
	}
}

// parse parses a command's flags. It reports false, with the exit code,
// when parsing ended the command: help (printed to stdout, exit 0) or bad
// usage (exit 2). maxArgs bounds the positional arguments (-1: any).
func (c *command) parse(e *env, fs *flag.FlagSet, args []string, minArgs, maxArgs int) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.help(e.stdout, fs)
			return exitOK, false
		}
		fmt.Fprintf(e.stderr, "handoffcheck %s: %v\nrun 'handoffcheck help %s' for usage\n", c.name, err, c.name)
		return exitUsage, false
	}
	n := fs.NArg()
	switch {
	case maxArgs == 0 && n > 0:
		fmt.Fprintf(e.stderr, "handoffcheck %s: unexpected argument %q\nrun 'handoffcheck help %s' for usage\n", c.name, fs.Arg(0), c.name)
		return exitUsage, false
	case n < minArgs || (maxArgs >= 0 && n > maxArgs):
		fmt.Fprintf(e.stderr, "handoffcheck %s: want %s, got %d arguments\nrun 'handoffcheck help %s' for usage\n", c.name, c.args, n, c.name)
		return exitUsage, false
	}
	return 0, true
}

// bad reports bad usage or bad input and returns its exit code. After a
// signal, what failed is most likely the reading the signal stopped: the
// command was interrupted, and says so, with exit 3.
func (c *command) bad(e *env, format string, a ...any) int {
	if e.ctx.Err() != nil {
		fmt.Fprintf(e.stderr, "handoffcheck %s: interrupted by a signal before anything was judged (%s)\n", c.name, fmt.Sprintf(format, a...))
		return exitInterrupted
	}
	fmt.Fprintf(e.stderr, "handoffcheck %s: %s\n", c.name, fmt.Sprintf(format, a...))
	return exitUsage
}

// setFlags lists the flags given on the command line, by name.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}
