package live

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill a worker whose coordinator died, so
// that no worker outlives its run even when the coordinator is killed.
// Each worker runs in a process group of its own: a Ctrl-C at a terminal
// signals the terminal's foreground group, which would kill every
// worker before the coordinator could ask for its ledgers; the
// coordinator alone stops them, after it has them.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
