package live

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// Flags is the worker's command line, as `handoffcheck worker` takes it.
func (a WorkerArgs) Flags() []string {
	out := []string{"--coordinator", a.Coordinator, "--worker", strconv.Itoa(a.Worker), "--gen", strconv.FormatInt(a.Gen, 10),
		"--config", a.ConfigFile, "--log", a.LogFile, "--time-scale", strconv.FormatFloat(a.Scale, 'g', -1, 64),
		"--epoch", strconv.FormatInt(a.Epoch.UnixNano(), 10)}
	if a.SpecFile != "" {
		out = append(out, "--spec", a.SpecFile)
	}
	return out
}

// WorkerFlags defines a worker's flags on fs; after fs parsed, the
// returned function checks them and gives the worker's arguments.
func WorkerFlags(fs *flag.FlagSet) func() (WorkerArgs, error) {
	var a WorkerArgs
	var epoch int64
	fs.StringVar(&a.Coordinator, "coordinator", "", "the coordinator's address (127.0.0.1:PORT)")
	fs.IntVar(&a.Worker, "worker", -1, "the cluster worker index (prefill workers first)")
	fs.Int64Var(&a.Gen, "gen", 0, "the process's generation")
	fs.StringVar(&a.ConfigFile, "config", "", "the run's configuration (handoffcheck.sim/v1)")
	fs.StringVar(&a.SpecFile, "spec", "", "a spec file to run instead of the generated machines")
	fs.StringVar(&a.LogFile, "log", "", "the log to append the worker's facts to")
	fs.Float64Var(&a.Scale, "time-scale", 1, "wall-clock time per configured time")
	fs.Int64Var(&epoch, "epoch", 0, "the run's time zero, Unix nanoseconds")
	return func() (WorkerArgs, error) {
		switch {
		case fs.NArg() > 0:
			return a, fmt.Errorf("unexpected argument %q", fs.Arg(0))
		case a.Coordinator == "":
			return a, errors.New("--coordinator is required")
		case a.Worker < 0:
			return a, errors.New("--worker is required")
		case a.ConfigFile == "":
			return a, errors.New("--config is required")
		case a.Scale <= 0:
			return a, fmt.Errorf("--time-scale %g, want more than 0", a.Scale)
		case a.Gen < 0:
			return a, fmt.Errorf("--gen %d, want 0 or more", a.Gen)
		}
		if host, _, err := net.SplitHostPort(a.Coordinator); err != nil || host != "127.0.0.1" {
			return a, fmt.Errorf("--coordinator %q, want 127.0.0.1:PORT: a live run stays on loopback", a.Coordinator)
		}
		a.Epoch = time.Unix(0, epoch)
		return a, nil
	}
}

// ParseWorkerArgs reads a worker's command line.
func ParseWorkerArgs(args []string) (WorkerArgs, error) {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	finish := WorkerFlags(fs)
	if err := fs.Parse(args); err != nil {
		return WorkerArgs{}, err
	}
	return finish()
}

// RunWorkerArgs runs a worker process from its command line's values.
func RunWorkerArgs(ctx context.Context, a WorkerArgs, p *system.Protocol, stderr io.Writer) error {
	data, err := os.ReadFile(a.ConfigFile)
	if err != nil {
		return err
	}
	cfg, err := cluster.ParseConfig(a.ConfigFile, data)
	if err != nil {
		return err
	}
	if a.Worker >= cfg.NumWorkers() {
		return fmt.Errorf("worker %d, the configuration has workers 0 to %d", a.Worker, cfg.NumWorkers()-1)
	}
	side := model.SourceSide
	if a.Worker >= cfg.Prefill.Workers {
		side = model.DestinationSide
	}
	opt := WorkerOptions{Coordinator: a.Coordinator, Side: side, Worker: a.Worker, Gen: a.Gen, Config: cfg,
		Protocol: p, Scale: a.Scale, Epoch: a.Epoch, Errors: stderr}
	if a.LogFile != "" {
		f, err := os.OpenFile(a.LogFile, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		opt.Log, opt.Header = f, cfg.LogHeader(obslog.All)
	}
	return RunWorker(ctx, opt)
}

// ExecSpawner starts each worker as a process of a binary: Path with
// Args, then the worker's flags.
type ExecSpawner struct {
	Path   string
	Args   []string
	Env    []string
	Stderr io.Writer
}

type execProc struct {
	cmd  *exec.Cmd
	once sync.Once
	err  error
}

func (p *execProc) Kill() error { return p.cmd.Process.Kill() }

func (p *execProc) Wait() error {
	p.once.Do(func() { p.err = p.cmd.Wait() })
	return p.err
}

// Start starts a worker process.
func (s *ExecSpawner) Start(ctx context.Context, a WorkerArgs) (Proc, error) {
	cmd := exec.Command(s.Path, append(slices.Clone(s.Args), a.Flags()...)...)
	cmd.Env = append(os.Environ(), s.Env...)
	cmd.Stdout = io.Discard
	cmd.Stderr = s.Stderr
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &execProc{cmd: cmd}, nil
}

// GoSpawner runs each worker in the coordinator's process, on its own
// goroutine and connection: quick, for tests that kill nothing (Kill
// ends the worker's context, which closes its connection, not a
// process).
type GoSpawner struct {
	Protocol *system.Protocol
	Errors   io.Writer
}

type goProc struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

func (p *goProc) Kill() error { p.cancel(); return nil }
func (p *goProc) Wait() error { <-p.done; return p.err }

// Start starts a worker goroutine.
func (s *GoSpawner) Start(ctx context.Context, a WorkerArgs) (Proc, error) {
	ctx, cancel := context.WithCancel(context.Background())
	p := &goProc{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.err = RunWorkerArgs(ctx, a, s.Protocol, s.Errors)
	}()
	return p, nil
}
