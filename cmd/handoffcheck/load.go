package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/machines/interp"
	"github.com/handoffcheck/handoffcheck/spec"
)

// loadedConfig is a configuration and the bytes it was read from (trace
// files embed them, so that a trace replays without the file).
type loadedConfig struct {
	cfg  *system.Config
	json []byte
}

// loadConfig reads a configuration file, or returns the embedded one of
// that name (checker.ConfigJSON) when path is empty.
func loadConfig(ctx context.Context, path, embeddedName string) (loadedConfig, error) {
	data, file := checker.ConfigJSON(embeddedName), embeddedName
	if path != "" {
		var err error
		if data, err = readInput(ctx, path); err != nil {
			return loadedConfig{}, err
		}
		file = path
	}
	cfg, err := system.ParseConfig(file, data)
	if err != nil {
		return loadedConfig{}, err
	}
	return loadedConfig{cfg: cfg, json: data}, nil
}

// loadProtocol returns the generated machines, or with a spec file the
// variant it holds run through the table interpreter.
func loadProtocol(ctx context.Context, specFile string) (*system.Protocol, *spec.Spec, error) {
	if specFile == "" {
		return system.Generated(), nil, nil
	}
	data, err := readInput(ctx, specFile)
	if err != nil {
		return nil, nil, err
	}
	s, err := spec.Parse(specFile, data)
	if err != nil {
		return nil, nil, err
	}
	return protocolOf(specFile, s)
}

// protocolOf interprets a parsed spec.
func protocolOf(name string, s *spec.Spec) (*system.Protocol, *spec.Spec, error) {
	it, err := interp.New(s)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	p, err := system.FromStepper(name, s, it)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return p, s, nil
}

// selectRuns picks the runs a --run list and a --policy name select.
func selectRuns(cfg *system.Config, runsFlag, policyFlag string) ([]system.Run, error) {
	var policies []spec.Policy
	if policyFlag != "all" {
		p, err := spec.ParsePolicy(policyFlag)
		if err != nil {
			return nil, fmt.Errorf("--policy %q: want source-first, destination-first or all", policyFlag)
		}
		policies = []spec.Policy{p}
	}
	var names []string
	if runsFlag != "" {
		for _, n := range strings.Split(runsFlag, ",") {
			if n = strings.TrimSpace(n); n == "" {
				return nil, fmt.Errorf("--run %q: an empty run name", runsFlag)
			}
			names = append(names, n)
		}
	}
	runs, err := checker.SelectRuns(cfg, names, policies)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), system.ErrConfig.Error()+": ")
		if runsFlag == "" {
			return nil, fmt.Errorf("--policy %q: %s", policyFlag, msg)
		}
		return nil, fmt.Errorf("--run %q --policy %s: %s", runsFlag, policyFlag, msg)
	}
	return runs, nil
}

// fromTrace is a trace a search starts from (check --from-trace): its
// configuration, protocol and run, and the moves to start after.
type fromTrace struct {
	trace  *checker.Trace
	config loadedConfig
	proto  *system.Protocol
	runs   []system.Run
	after  []system.Move
	// says where the search starts, for the report's first line.
	says string
}

// moves is the path to start after (nil: the run's initial state).
func (f *fromTrace) moves() []system.Move {
	if f == nil {
		return nil
	}
	return f.after
}

// traceRun reads a trace file's content: the trace, the protocol it runs
// (the generated machines, or the variant it carries through the table
// interpreter) and its run (which the reader has checked is one of its
// configuration's).
func traceRun(file string, data []byte) (*checker.Trace, *system.Protocol, system.Run, error) {
	tr, err := checker.ParseTrace(file, data)
	if err != nil {
		return nil, nil, system.Run{}, err
	}
	proto := system.Generated()
	if tr.Spec != nil {
		if proto, _, err = protocolOf(file+" (spec)", tr.Spec); err != nil {
			return nil, nil, system.Run{}, err
		}
	}
	for _, r := range tr.Config.Runs {
		if r.Name == tr.Run {
			return tr, proto, r, nil
		}
	}
	return nil, nil, system.Run{}, fmt.Errorf("%s: run %q is not a run of the trace's configuration", file, tr.Run)
}

// readFromTrace reads a trace to start a search from. A trace that records
// a safety violation at its last step is started from before that step:
// the search reports what can go wrong from the incident's state, the
// recorded violation among it.
func readFromTrace(e *env, file string) (*fromTrace, error) {
	data, err := readInput(e.ctx, file)
	if err != nil {
		return nil, err
	}
	tr, proto, run, err := traceRun(file, data)
	if err != nil {
		return nil, err
	}
	f := &fromTrace{trace: tr, config: loadedConfig{cfg: tr.Config, json: tr.ConfigJSON}, proto: proto, runs: []system.Run{run}, after: tr.Moves}
	n := len(tr.Moves)
	f.says = fmt.Sprintf("from: the state after the %d steps of %s", n, file)
	if tr.Violation != "" && tr.LoopFrom == 0 && n > 0 {
		f.after = tr.Moves[:n-1]
		f.says = fmt.Sprintf("from: the state after step %d of %s, before its step %d (%s), which violates %s", n-1, file, n, tr.Moves[n-1], tr.Violation)
	}
	return f, nil
}
