package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/sim/workload"
)

var workloadCommand = &command{
	name:    "workload",
	args:    "gen [flags] | check FILE...",
	summary: "generate request workloads for the simulator, or check and summarize workload files",
	detail: "subcommands:\n" +
		"  gen    draw a workload (handoffcheck.workload/v1, JSON Lines) from a seed and write it\n" +
		"  check  read workload files and print a one-line summary of each\n" +
		"\nrun 'handoffcheck workload gen --help' or 'handoffcheck workload check --help' for their flags",
	exits: []exitDoc{{exitOK, "the workload was written, or every file checked is a valid workload"}, {exitUsage, ""}},
	run:   cmdWorkload,
}

func init() {
	registerCommand(workloadCommand)
	interruptible(workloadGenCommand)
	interruptible(workloadCheckCommand)
}

var workloadGenCommand = &command{
	name:    "workload gen",
	args:    "[flags]",
	summary: "draw a request workload from a seed and write it as JSON Lines (handoffcheck.workload/v1)",
	detail: "The same flags and seed give the same file, byte for byte. A distribution DIST is\n" +
		"fixed:V, uniform:MIN-MAX or lognormal:mean=M,sigma=S[,min=A][,max=B] (a lognormal draw is\n" +
		"clamped to min and max; token counts are whole). Bursty arrivals alternate bursts of\n" +
		"--burst-on-ms at --burst-factor times the quiet rate with quiet spells of --burst-off-ms,\n" +
		"keeping the mean rate --rate. The defaults, with --requests 200 --name default, give the\n" +
		"simulator's built-in default workload.",
	exits: []exitDoc{{exitOK, "the workload was written"}, {exitUsage, ""}},
}

var workloadCheckCommand = &command{
	name:    "workload check",
	args:    "FILE...",
	summary: "read workload files and print a one-line summary of each: requests, duration, mean prompt and output tokens, prefix groups, cancels",
	exits:   []exitDoc{{exitOK, "every file is a valid workload"}, {exitUsage, "bad usage, or a file is refused (its file:line error is printed)"}},
}

func cmdWorkload(c *command, e *env, args []string) int {
	if len(args) == 0 {
		fmt.Fprintf(e.stderr, "handoffcheck workload: want a subcommand: gen or check\nrun 'handoffcheck help workload' for usage\n")
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		c.help(e.stdout, c.flags())
		return exitOK
	case "gen":
		return cmdWorkloadGen(workloadGenCommand, e, args[1:])
	case "check":
		return cmdWorkloadCheck(workloadCheckCommand, e, args[1:])
	}
	fmt.Fprintf(e.stderr, "handoffcheck workload: unknown subcommand %q; want gen or check\nrun 'handoffcheck help workload' for usage\n", args[0])
	return exitUsage
}

// parseSub is command.parse for a subcommand: its usage hint names the
// subcommand's own --help, which 'handoffcheck help' does not reach.
func parseSub(c *command, e *env, fs *flag.FlagSet, args []string, minArgs, maxArgs int) (int, bool) {
	hint := fmt.Sprintf("run 'handoffcheck %s --help' for usage", c.name)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.help(e.stdout, fs)
			return exitOK, false
		}
		fmt.Fprintf(e.stderr, "handoffcheck %s: %v\n%s\n", c.name, err, hint)
		return exitUsage, false
	}
	n := fs.NArg()
	switch {
	case maxArgs == 0 && n > 0:
		fmt.Fprintf(e.stderr, "handoffcheck %s: unexpected argument %q\n%s\n", c.name, fs.Arg(0), hint)
		return exitUsage, false
	case n < minArgs || (maxArgs >= 0 && n > maxArgs):
		fmt.Fprintf(e.stderr, "handoffcheck %s: want %s, got %d arguments\n%s\n", c.name, c.args, n, hint)
		return exitUsage, false
	}
	return 0, true
}

// genFlags names the flag of each generator field (by its JSON name), so
// that a refusal of the configuration names the flag the user gave.
var genFlags = map[string]string{
	"requests":        "requests",
	"rate_per_sec":    "rate",
	"arrival":         "arrival",
	"burst_factor":    "burst-factor",
	"burst_on_ms":     "burst-on-ms",
	"burst_off_ms":    "burst-off-ms",
	"prompt":          "prompt",
	"output":          "output",
	"prefix_groups":   "prefix-groups",
	"prefix_share":    "prefix-share",
	"prefix_tokens":   "prefix",
	"cancel_fraction": "cancel-fraction",
	"cancel_after":    "cancel-after",
}

func cmdWorkloadGen(c *command, e *env, args []string) int {
	def := workload.DefaultGen()
	fs := c.flags()
	seed := fs.Uint64("seed", def.Seed, "seed of the random draws")
	requests := fs.Int("requests", 1000, "number of requests")
	rate := fs.Float64("rate", def.RatePerSec, "mean arrival rate, requests per second")
	arrival := fs.String("arrival", def.Arrival, "arrival process: poisson or bursty")
	burstFactor := fs.Float64("burst-factor", workload.DefaultBurstFactor, "bursty: the rate in a burst over the rate between bursts")
	burstOn := fs.Float64("burst-on-ms", workload.DefaultBurstOnMS, "bursty: length of a burst, ms")
	burstOff := fs.Float64("burst-off-ms", workload.DefaultBurstOffMS, "bursty: length of the quiet spell between bursts, ms")
	prompt := fs.String("prompt", def.Prompt.String(), "distribution DIST of prompt tokens")
	output := fs.String("output", def.Output.String(), "distribution DIST of output tokens")
	groups := fs.Int("prefix-groups", def.PrefixGroups, "number of prefix groups (0: no request shares a prompt prefix)")
	share := fs.Float64("prefix-share", def.PrefixShare, "probability that a request joins a prefix group")
	prefix := fs.String("prefix", def.PrefixTokens.String(), "distribution DIST of a group's shared prefix, tokens (cut to each prompt)")
	cancelFraction := fs.Float64("cancel-fraction", def.CancelFraction, "probability that the client cancels a request")
	cancelAfter := fs.String("cancel-after", def.CancelAfter.String(), "distribution DIST of the time from arrival to cancel, ms")
	name := fs.String("name", "", "name recorded in the workload's header")
	out := fs.String("out", "", "write the workload to this file instead of stdout")
	if code, ok := parseSub(c, e, fs, args, 0, 0); !ok {
		return code
	}
	set := setFlags(fs)
	fail := func(format string, a ...any) int { return c.bad(e, format, a...) }

	cfg := workload.GenConfig{
		Seed: *seed, Requests: *requests, RatePerSec: *rate, Arrival: *arrival,
		PrefixGroups: *groups, CancelFraction: *cancelFraction,
	}
	// A flag that the other flags make meaningless is refused, not
	// ignored (docs/cli.md: flags are honoured or refused).
	if *arrival == "bursty" {
		// A zero in a configuration takes the default; on the command
		// line it is a value, and refused.
		switch {
		case *burstFactor == 0:
			return fail("--burst-factor 0, want 1 to 1000000 (the rate in a burst over the rate between bursts)")
		case *burstOn == 0:
			return fail("--burst-on-ms 0, want 0.001 to %d milliseconds", workload.MaxMillis)
		case *burstOff == 0:
			return fail("--burst-off-ms 0, want 0.001 to %d milliseconds", workload.MaxMillis)
		}
		cfg.BurstFactor, cfg.BurstOnMS, cfg.BurstOffMS = *burstFactor, *burstOn, *burstOff
	} else {
		for _, f := range []string{"burst-factor", "burst-on-ms", "burst-off-ms"} {
			if set[f] {
				return fail("--%s applies to --arrival bursty", f)
			}
		}
	}
	if *groups == 0 {
		for _, f := range []string{"prefix-share", "prefix"} {
			if set[f] {
				return fail("--%s applies when --prefix-groups is above 0", f)
			}
		}
	} else {
		cfg.PrefixShare = *share
	}
	if *cancelFraction == 0 && set["cancel-after"] {
		return fail("--cancel-after applies when --cancel-fraction is above 0")
	}
	dists := []struct {
		flag, text string
		into       *workload.Dist
		use        bool
	}{
		{"prompt", *prompt, &cfg.Prompt, true},
		{"output", *output, &cfg.Output, true},
		{"prefix", *prefix, &cfg.PrefixTokens, *groups != 0},
		{"cancel-after", *cancelAfter, &cfg.CancelAfter, *cancelFraction != 0},
	}
	for _, d := range dists {
		if !d.use {
			continue
		}
		v, err := workload.ParseDist(d.text)
		if err != nil {
			return fail("--%s: %s", d.flag, strings.TrimPrefix(err.Error(), "distribution "))
		}
		*d.into = v
	}
	if err := cfg.Validate(); err != nil {
		var ge *workload.GenError
		if errors.As(err, &ge) {
			return fail("--%s %s", genFlags[ge.Field], ge.Problem)
		}
		return fail("%v", err)
	}

	w := e.stdout
	var file *os.File
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return fail("--out: %v", err)
		}
		file, w = f, f
	}
	bw := bufio.NewWriter(w)
	err := generate(cfg, *name, bw)
	if file != nil {
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			// A workload cut short is worse than none.
			os.Remove(*out)
		}
	}
	if err != nil {
		return fail("%v", err)
	}
	return exitOK
}

// generate writes cfg's workload to w and flushes it.
func generate(cfg workload.GenConfig, name string, w *bufio.Writer) error {
	ww, err := workload.NewWriter(w, cfg.Header(name))
	if err != nil {
		return err
	}
	if err := workload.Generate(cfg, ww); err != nil {
		return err
	}
	return w.Flush()
}

func cmdWorkloadCheck(c *command, e *env, args []string) int {
	fs := c.flags()
	if code, ok := parseSub(c, e, fs, args, 1, -1); !ok {
		return code
	}
	code := exitOK
	for _, file := range fs.Args() {
		line, err := summarizeWorkload(e.ctx, file)
		if err != nil {
			fmt.Fprintf(e.stderr, "handoffcheck %s: %v\n", c.name, err)
			code = exitUsage
			continue
		}
		fmt.Fprintln(e.stdout, line)
	}
	return code
}

// summarizeWorkload reads a workload file whole, one request at a time,
// and says what it holds in one line.
func summarizeWorkload(ctx context.Context, file string) (string, error) {
	f, err := openInput(ctx, file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	r, err := workload.NewReader(f, file)
	if err != nil {
		return "", err
	}
	var n, grouped, cancels int
	var prompt, output, lastUS int64
	groups := map[string]bool{}
	for {
		req, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		n++
		prompt += int64(req.PromptTokens)
		output += int64(req.OutputTokens)
		lastUS = req.ArrivalUS
		if req.PrefixGroup != "" {
			grouped++
			groups[req.PrefixGroup] = true
		}
		if req.HasCancel {
			cancels++
		}
	}
	if n == 0 {
		return fmt.Sprintf("%s: 0 requests", file), nil
	}
	mean := func(sum int64) float64 { return float64(sum) / float64(n) }
	return fmt.Sprintf("%s: %s, arrivals over %.3f s, mean prompt %.1f tokens, mean output %.1f tokens, %s (%s), %s",
		file, countOf(n, "request"), float64(lastUS)/1e6, mean(prompt), mean(output),
		countOf(len(groups), "prefix group"), countOf(grouped, "request"), countOf(cancels, "cancel")), nil
}

// countOf is "1 request", "2 requests".
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
