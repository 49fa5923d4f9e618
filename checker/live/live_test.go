package live

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/model"
)

// TestMain lets the test binary serve as a worker process: the live
// tests that kill workers start it again with the worker's flags.
func TestMain(m *testing.M) {
	if os.Getenv("HANDOFFCHECK_LIVE_WORKER") == "1" {
		a, err := ParseWorkerArgs(os.Args[1:])
		// HANDOFFCHECK_LIVE_PROFILE=DIR: each worker writes its CPU
		// profile there (the benchmark's "where the time goes").
		if dir := os.Getenv("HANDOFFCHECK_LIVE_PROFILE"); dir != "" && err == nil {
			f, perr := os.Create(fmt.Sprintf("%s/worker-%d-gen%d-pid%d.pprof", dir, a.Worker, a.Gen, os.Getpid()))
			if perr == nil {
				pprof.StartCPUProfile(f)
				defer pprof.StopCPUProfile()
			}
		}
		if err == nil {
			err = RunWorkerArgs(context.Background(), a, nil, os.Stderr)
		}
		pprof.StopCPUProfile()
		if err != nil {
			os.Stderr.WriteString("worker: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func execSpawner() Spawner {
	return &ExecSpawner{Path: os.Args[0], Env: []string{"HANDOFFCHECK_LIVE_WORKER=1"}}
}

type slice struct {
	rs []cluster.Request
	i  int
}

func (s *slice) Next() (cluster.Request, error) {
	if s.i == len(s.rs) {
		return cluster.Request{}, io.EOF
	}
	s.i++
	return s.rs[s.i-1], nil
}

// again gives a workload of rs afresh each time, for Options.Rewind: a
// run too late for its deadlines runs again at a larger time scale.
func again(rs []cluster.Request) func() (cluster.Source, error) {
	return func() (cluster.Source, error) { return &slice{rs: rs}, nil }
}

// spaced is n requests far enough apart that each ends before the next.
func spaced(n int, gapUS int64) []cluster.Request {
	out := make([]cluster.Request, n)
	for i := range out {
		out[i] = cluster.Request{Index: i, ArrivalUS: int64(i) * gapUS, PromptTokens: 512, OutputTokens: 4, CancelUS: -1}
	}
	return out
}

// policyConfig is the default cluster under policy, on the engine
// whose policy it is (SGLang for destination-first).
func policyConfig(t testing.TB, policy string) *cluster.Config {
	t.Helper()
	cfg := cluster.DefaultConfig()
	if policy == "destination-first" {
		cfg.Engine = model.SGLang
	}
	if err := cfg.SetPolicy(policy); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestLiveSmoke: without faults, every handoff succeeds, nothing is held
// and the logs conform.
func TestLiveSmoke(t *testing.T) {
	for _, policy := range []string{"source-first", "destination-first"} {
		t.Run(policy, func(t *testing.T) {
			cfg := policyConfig(t, policy)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rep, err := Run(ctx, Options{Config: cfg, Workload: &slice{rs: spaced(20, 200_000)}, Rewind: again(spaced(20, 200_000)), Scale: 0.01, Dir: dirFor(t), Spawn: &GoSpawner{}})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Clean || rep.Succeeded != 20 {
				rep.Write(os.Stderr)
				t.Fatalf("want 20 clean successes")
			}
			judge(t, rep)
		})
	}
}

func dirFor(t *testing.T) string {
	if d := os.Getenv("LIVE_KEEP"); d != "" {
		d = d + "/" + t.Name()
		os.MkdirAll(d, 0o755)
		return d
	}
	return t.TempDir()
}
