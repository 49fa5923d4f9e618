package live

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill a worker whose coordinator died, so
// that no worker outlives its run even when the coordinator is killed.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
