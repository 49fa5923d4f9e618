package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the CLI goldens in testdata/goldens/cli instead of comparing")

// goldenCases are command lines whose whole output (exit code, stdout,
// stderr) is kept in testdata/goldens/cli/<name>.txt. Help is included:
// it is part of the interface people read.
var goldenCases = []struct {
	name string
	args []string
}{
	{"help", []string{"--help"}},
	{"help-check", []string{"help", "check"}},
	{"help-mutate", []string{"help", "mutate"}},
	{"help-price", []string{"help", "price"}},
	{"help-replay", []string{"help", "replay"}},
	{"help-spec", []string{"help", "spec"}},
	{"help-validate", []string{"help", "validate"}},
	{"no-arguments", nil},
	{"unknown-command", []string{"bogus"}},
	{"check-small", []string{"check", "--config", small, "--timing=false"}},
	{"check-small-json", []string{"check", "--config", small, "--policy", "destination-first", "--json", "--timing=false"}},
	{"check-violation", []string{"check", "--config", small, "--spec", release, "--run", "vllm", "--timing=false"}},
	{"check-liveness", []string{"check", "--config", mutCfg, "--spec", rearm, "--run", "sglang", "--timing=false"}},
	{"check-walks", []string{"check", "--config", small, "--spec", release, "--run", "vllm", "--walks", "300", "--steps", "60", "--seed", "3", "--timing=false"}},
	{"check-walks-uniform", []string{"check", "--config", small, "--spec", release, "--run", "vllm", "--walks", "300", "--steps", "60", "--seed", "3", "--schedule", "uniform", "--timing=false"}},
	{"check-walks-late-fault", []string{"check", "--config", small, "--spec", "../../testdata/variants/late-cancel-standin.json", "--run", "vllm", "--walks", "2000", "--swarm", "--stats", "--timing=false"}},
	{"check-nothing-selected", []string{"check", "--config", small, "--run", "vllm", "--policy", "destination-first"}},
	{"check-conflicting-flags", []string{"check", "--walks", "10", "--exact"}},
	{"replay", []string{"replay", "../../testdata/traces/release-on-heartbeat.jsonl"}},
	{"replay-liveness", []string{"replay", "../../testdata/traces/rearm-reservation-loop.jsonl"}},
	{"validate", []string{"validate", release}},
	{"validate-refused", []string{"validate", "../../testdata/variants/broken-vocabulary.json"}},
	{"check-broken-config", []string{"check", "--config", "../../testdata/configs/broken.json"}},
}

func TestCLI_Golden(t *testing.T) {
	// The default memory bound is printed in help: pin the machine.
	old := machineMemory
	machineMemory = func() uint64 { return 24 << 30 }
	defer func() { machineMemory = old }()
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.args...)
			got := fmt.Sprintf("$ handoffcheck %s\nexit %d\n--- stdout\n%s--- stderr\n%s", strings.Join(tc.args, " "), code, out, errOut)
			file := filepath.Join("..", "..", "testdata", "goldens", "cli", tc.name+".txt")
			if *rewrite {
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run: go test ./cmd/handoffcheck -run TestCLI_Golden -rewrite)", err)
			}
			if d := cmp.Diff(string(want), got); d != "" {
				t.Fatalf("%s differs from its golden (-want +got):\n%s", file, d)
			}
		})
	}
}
