//go:build !unix

package repro

import "time"

var start = time.Now()

// cpuTime falls back to the wall clock where the process's CPU time is
// not read.
func cpuTime() time.Duration { return time.Since(start) }
