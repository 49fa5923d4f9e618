//go:build unix

package repro

import (
	"syscall"
	"time"
)

// cpuTime is the process's user and system CPU time so far: on a machine
// other work loads, a steadier measure of a reproduction's cost than the
// wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
