package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

var (
	builtOnce sync.Once
	builtPath string
	builtErr  error
)

// binary builds the handoffcheck command once per test process: signals
// are tried on the real binary, main and all.
func binary(t *testing.T) string {
	t.Helper()
	builtOnce.Do(func() {
		dir, err := os.MkdirTemp("", "handoffcheck-signal-")
		if err != nil {
			builtErr = err
			return
		}
		builtPath = filepath.Join(dir, "handoffcheck")
		if out, err := exec.Command("go", "build", "-o", builtPath, ".").CombinedOutput(); err != nil {
			builtErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if builtErr != nil {
		t.Fatal(builtErr)
	}
	return builtPath
}

// startCLI starts the built binary with its output captured.
func startCLI(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, &out, &errOut
}

// fifo makes a named pipe: a reader of it blocks until its writer writes
// or closes, as a reader of a terminal or a slow producer does.
func fifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "input")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return p
}

// openWriter opens the write end of a fifo. It returns once the process
// under test has opened the read end, so past its signal set-up.
func openWriter(t *testing.T, p string) *os.File {
	t.Helper()
	w, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// exitCode waits for the process and returns its exit code; a process
// killed by the signal instead of exiting fails the test.
func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	// A process that ignores the signal would wait for its input forever:
	// after two minutes (a correct one takes milliseconds, loaded or not)
	// it is killed, which fails the test below instead of hanging it.
	var killed atomic.Bool
	ignored := time.AfterFunc(2*time.Minute, func() { killed.Store(true); cmd.Process.Kill() })
	defer ignored.Stop()
	err := cmd.Wait()
	if killed.Load() {
		t.Fatalf("the process ignored the signal: still running two minutes later, killed")
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		t.Fatalf("the process was killed by %v instead of exiting", ws.Signal())
	}
	return cmd.ProcessState.ExitCode()
}

// conform stopped by SIGINT or SIGTERM while reading its logs (a log whose
// writer is still writing) exits 3 with a partial report: how far each
// log was read, and no verdict. It used to ignore both and exit 0.
func TestSignal_ConformStopsWithPartialReport(t *testing.T) {
	data, err := os.ReadFile("../../testdata/logs/valid/source-first-complete.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			p := fifo(t)
			cmd, out, errOut := startCLI(t, "conform", p)
			w := openWriter(t, p)
			// The header and a few facts; the writer stays open, so the
			// judge waits for more.
			if _, err := w.WriteString(strings.Join(lines[:4], "")); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if code := exitCode(t, cmd); code != exitInterrupted {
				t.Fatalf("exit %d, want 3; stdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			for _, want := range []string{"conform: interrupted by a signal before a verdict; read so far:\n  " + p + ": ", " lines (", "verdict: none"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("the partial report does not say %q:\n%s", want, out)
				}
			}
		})
	}
}

// simulate stopped while reading an input (here a fault plan whose writer
// has written nothing yet) exits 3 saying nothing was judged. It used to
// ignore SIGINT and SIGTERM while reading.
func TestSignal_SimulateStopsWhileReading(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			p := fifo(t)
			cmd, out, errOut := startCLI(t, "simulate", "--faults", p)
			openWriter(t, p)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if code := exitCode(t, cmd); code != exitInterrupted {
				t.Fatalf("exit %d, want 3; stdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			if want := "handoffcheck simulate: interrupted by a signal before anything was judged (" + p + ": interrupted by a signal)"; !strings.Contains(errOut.String(), want) {
				t.Errorf("stderr does not say %q:\n%s", want, errOut)
			}
		})
	}
}

// Every whole-file input is bounded: a fault plan of /dev/zero is refused
// after 16 MiB, naming the file and the bound, instead of being read
// until memory runs out.
func TestInputs_Bounded(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	for _, args := range [][]string{
		{"simulate", "--faults", "/dev/zero"},
		{"simulate", "--config", "/dev/zero"},
		{"live", "--faults", "/dev/zero", "--no-conform"},
		{"replay", "/dev/zero"},
		{"check", "--config", "/dev/zero"},
	} {
		wantRefused(t, args, "/dev/zero: jsonfile: input too large: more than 16 MiB, the most an input file may hold")
	}
}
