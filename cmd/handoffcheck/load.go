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

// loadConfig reads a configuration file, or returns the embedded one
// (name and bytes) when path is empty.
func loadConfig(ctx context.Context, path, embeddedName string, embedded []byte) (loadedConfig, error) {
	data, file := embedded, embeddedName
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
