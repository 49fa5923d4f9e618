//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// killGroup makes cmd the leader of a process group of its own and, when
// its context ends, kills the whole group: go test runs the test binary as
// a child, and a test may start processes of its own (live's workers),
// none of which may outlive the run.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
