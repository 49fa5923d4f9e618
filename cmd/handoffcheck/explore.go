package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/conform"
	"github.com/handoffcheck/handoffcheck/checker/conform/mocker"
	"github.com/handoffcheck/handoffcheck/checker/explore"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
)

var exploreCommand = &command{
	name:    "explore",
	args:    "[--config FILE] [--spec FILE] [--run NAME] [--props FILE] [--addr HOST:PORT] [--from handoffcheck|mocker] [TRACE.jsonl | LOG.jsonl...]",
	summary: "serve a web page on the loopback interface that walks a run's states and traces, or draws judged logs",
	detail: `Prints the page's URL and serves until interrupted; it opens no browser.
Without a trace, the page starts at the initial state of a run of the
configuration (the embedded default without --config; the first run without
--run). With a trace file (check --trace-out, a variant's counterexample),
the run, configuration and spec are the trace's own: the page walks the
trace and any step can be branched off. With observation logs, or with
--from mocker and the dynamo mocker's bookkeeping logs, the page draws
conform's judgement of them. Everything served is in the binary.`,
	exits: []exitDoc{
		{exitUsage, "bad usage, a bad configuration, spec or trace, or an address off the loopback interface"},
		{exitInterrupted, "stopped serving on an interrupt (the normal end)"},
	},
	run: cmdExplore,
}

func init() { registerCommand(exploreCommand) }

func cmdExplore(cmd *command, e *env, args []string) int {
	fs := cmd.flags()
	configFile := fs.String("config", "", "configuration file (default: the embedded default configuration)")
	specFile := fs.String("spec", "", "spec file of a variant (default: the built-in tables)")
	runName := fs.String("run", "", "the run to explore (default: the configuration's first run)")
	addr := fs.String("addr", "127.0.0.1:0", "where to listen: the loopback interface only; port 0 picks a free one")
	propsFile := fs.String("props", "", "also judge every state by the properties of this file (handoffcheck.props/v1), and offer its sometimes ones as targets of a search")
	from := fs.String("from", "handoffcheck", "the logs' format, as conform takes it: handoffcheck (a trace or handoffcheck.log/v1 logs) or mocker (the dynamo mocker's offline replay bookkeeping)")
	if code, ok := cmd.parse(e, fs, args, 0, -1); !ok {
		return code
	}
	if *from != "handoffcheck" && *from != "mocker" {
		return cmd.bad(e, "--from %q, want handoffcheck or mocker", *from)
	}
	if err := explore.Loopback(*addr); err != nil {
		return cmd.bad(e, "%v", err)
	}
	set := setFlags(fs)
	var srv *explore.Server
	var files [][]byte
	for _, name := range fs.Args() {
		data, err := readInput(e.ctx, name)
		if err != nil {
			return cmd.bad(e, "%v", err)
		}
		files = append(files, data)
	}
	mockerLogs := *from == "mocker"
	if mockerLogs && len(files) == 0 {
		return cmd.bad(e, "--from mocker: want the mocker's logs")
	}
	for i, data := range files {
		if !mockerLogs && formatOf(data) == mocker.FormatV1 {
			return cmd.bad(e, "%s is a log of the dynamo mocker (%s): add --from mocker", fs.Arg(i), mocker.FormatV1)
		}
	}
	if len(files) > 0 && (mockerLogs || schemaOf(files[0]) == obslog.SchemaV1) {
		for _, name := range []string{"config", "run", "props"} {
			if set[name] {
				return cmd.bad(e, "--%s with logs: the logs' header carries the configuration, and conform judges the built-in invariants", name)
			}
		}
		opt := conform.Options{}
		if *specFile != "" {
			p, _, err := loadProtocol(e.ctx, *specFile)
			if err != nil {
				return cmd.bad(e, "%v", err)
			}
			opt.Protocol = p
		}
		in := make([]explore.LogInput, len(files))
		for i, data := range files {
			in[i] = explore.LogInput{Name: fs.Arg(i), Data: data}
		}
		judge := explore.JudgeLogs
		if mockerLogs {
			judge = explore.JudgeMockerLogs
		}
		logs, err := judge(in, opt)
		if err != nil {
			return cmd.bad(e, "%v", err)
		}
		ln, err := net.Listen("tcp", *addr)
		if err != nil {
			return cmd.bad(e, "--addr %s: %v", *addr, err)
		}
		return serveUntilInterrupted(e, cmd, ln, explore.NewLogs(logs, strings.Join(fs.Args(), ", ")),
			fmt.Sprintf("%d logs, %s", len(files), logs.Verdict))
	}
	pset, err := loadProps(e.ctx, *propsFile, "explore", 0)
	if err != nil {
		return cmd.bad(e, "%v", err)
	}
	if fs.NArg() > 1 {
		return cmd.bad(e, "want one trace file or observation logs, got %d files and %s is not a log (its first line is no %s header)", fs.NArg(), fs.Arg(0), obslog.SchemaV1)
	}
	if fs.NArg() == 1 {
		for _, name := range []string{"config", "spec", "run"} {
			if set[name] {
				return cmd.bad(e, "--%s with a trace file: the trace carries its own configuration, spec and run", name)
			}
		}
		file := fs.Arg(0)
		tr, proto, run, err := traceRun(file, files[0])
		if err != nil {
			return cmd.bad(e, "%v", err)
		}
		if srv, err = explore.New(proto, tr.Config, run, explore.Options{Title: file, Props: pset}); err != nil {
			return cmd.bad(e, "%s: %v", file, err)
		}
		if err := srv.OpenTrace(file, tr); err != nil {
			return cmd.bad(e, "%v", err)
		}
	} else {
		lc, err := loadConfig(e.ctx, *configFile, "default.json")
		if err != nil {
			return cmd.bad(e, "%v", err)
		}
		proto, _, err := loadProtocol(e.ctx, *specFile)
		if err != nil {
			return cmd.bad(e, "%v", err)
		}
		var names []string
		if *runName != "" {
			names = []string{*runName}
		}
		runs, err := checker.SelectRuns(lc.cfg, names, nil)
		if err != nil {
			return cmd.bad(e, "--run %q: %v", *runName, err)
		}
		title := "default.json"
		if *configFile != "" {
			title = *configFile
		}
		if srv, err = explore.New(proto, lc.cfg, runs[0], explore.Options{Title: title, Props: pset}); err != nil {
			return cmd.bad(e, "%v", err)
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return cmd.bad(e, "--addr %s: %v", *addr, err)
	}
	return serveUntilInterrupted(e, cmd, ln, srv, "run "+srv.Checker().Run().Name)
}

// schemaOf is the schema a JSON Lines file's first line names, or "".
func schemaOf(data []byte) string {
	first, _, _ := bytes.Cut(data, []byte("\n"))
	var h struct {
		Schema string `json:"schema"`
	}
	if json.Unmarshal(first, &h) != nil {
		return ""
	}
	return h.Schema
}

// formatOf is the format a dynamo mocker log's first line names, or "".
func formatOf(data []byte) string {
	first, _, _ := bytes.Cut(data, []byte("\n"))
	var h struct {
		Format string `json:"format"`
	}
	if json.Unmarshal(first, &h) != nil {
		return ""
	}
	return h.Format
}

// serveUntilInterrupted serves the explorer until the command's context
// ends, then closes the listener and every connection: exit 3, nothing
// left running.
func serveUntilInterrupted(e *env, cmd *command, ln net.Listener, h http.Handler, what string) int {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(e.stdout, "explore: %s at http://%s/ (Ctrl-C stops)\n", what, ln.Addr())
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return cmd.bad(e, "serving: %v", err)
	case <-e.ctx.Done():
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil {
		_ = hs.Close()
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(e.stderr, "handoffcheck %s: %v\n", cmd.name, err)
	}
	fmt.Fprintln(e.stdout, "explore: interrupted, stopped serving")
	return exitInterrupted
}
