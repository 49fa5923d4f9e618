package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/spec"
)

func init() {
	register("check", "explore every ordering of a configuration and check every invariant", cmdCheck)
}

func cmdCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	configFile := fs.String("config", "", "configuration file (JSON); default: the embedded default configuration")
	policy := fs.String("policy", "all", "policies to check: source-first, destination-first or all")
	asJSON := fs.Bool("json", false, "print one JSON report instead of text")
	stats := fs.Bool("stats", false, "print measurements: rates, bytes per state, memory, workers")
	maxStates := fs.Int("max-states", 0, "stop after the level that reaches this many distinct states (0: no bound)")
	maxDepth := fs.Int("max-depth", 0, "do not explore deeper than this (0: no bound)")
	maxMemory := fs.String("max-memory", "", "stop after the level whose memory estimate passes this, e.g. 2GiB (default: no bound)")
	workers := fs.Int("workers", 0, "goroutines that expand states (0: all cores)")
	exact := fs.Bool("exact", false, "store full states instead of 64-bit fingerprints (no collisions, more memory)")
	liveness := fs.Bool("liveness", true, "check EventuallyDrained on the explored graph")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	cfg := checker.DefaultConfig()
	if *configFile != "" {
		data, err := os.ReadFile(*configFile)
		if err != nil {
			fmt.Fprintf(stderr, "handoffcheck check: %v\n", err)
			return exitUsage
		}
		if cfg, err = checker.ParseConfig(*configFile, data); err != nil {
			fmt.Fprintf(stderr, "handoffcheck check: %v\n", err)
			return exitUsage
		}
	}
	var policies []spec.Policy
	if *policy != "all" {
		p, err := spec.ParsePolicy(*policy)
		if err != nil {
			fmt.Fprintf(stderr, "handoffcheck check: --policy %q: want source-first, destination-first or all\n", *policy)
			return exitUsage
		}
		policies = []spec.Policy{p}
	}
	mem, err := parseBytes(*maxMemory)
	if err != nil {
		fmt.Fprintf(stderr, "handoffcheck check: --max-memory %q: %v\n", *maxMemory, err)
		return exitUsage
	}
	if *maxStates < 0 || *maxDepth < 0 || *workers < 0 {
		fmt.Fprintln(stderr, "handoffcheck check: --max-states, --max-depth and --workers must not be negative")
		return exitUsage
	}
	lim := checker.Limits{MaxStates: *maxStates, MaxDepth: *maxDepth, MaxMemory: mem, Workers: *workers, Exact: *exact, Liveness: *liveness}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	progress := func(p checker.Progress) {
		fmt.Fprintf(stderr, "%s: %d distinct, %d transitions, depth %d, queue %d, %.0f states/s\n",
			p.Run, p.States, p.Transitions, p.Depth, p.Queue, float64(p.States)/p.Elapsed.Seconds())
	}
	rep, err := checker.Check(ctx, checker.Generated(), cfg, policies, lim, progress)
	if err != nil {
		fmt.Fprintf(stderr, "handoffcheck check: %v\n", err)
		return exitUsage
	}
	if *asJSON {
		out, err := rep.JSON()
		if err != nil {
			fmt.Fprintf(stderr, "handoffcheck check: %v\n", err)
			return exitUsage
		}
		fmt.Fprintln(stdout, string(out))
	} else {
		fmt.Fprint(stdout, rep.Text(*stats))
	}
	if rep.Violated() {
		return exitViolation
	}
	return exitOK
}

// parseBytes reads a size such as 512MiB, 2GiB or 1000000.
func parseBytes(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	var n int64
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil || n <= 0 || fmt.Sprint(n) != s {
		return 0, fmt.Errorf("want a positive size such as 512MiB or 2GiB")
	}
	return n * mult, nil
}
