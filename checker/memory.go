package checker

import (
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
)

// Resident memory is what the operating system gives the process, and so
// what a bound on memory must bound: the Go heap is only part of it (the
// runtime keeps freed spans until it returns them, and goroutine stacks
// and the runtime's own structures count too). On Linux it is read from
// /proc; elsewhere the runtime's own figure of the memory it has mapped
// and not released stands in for it.

var pageSize = uint64(os.Getpagesize())

// residentBytes is the process's resident memory now.
func residentBytes() uint64 {
	if data, err := os.ReadFile("/proc/self/statm"); err == nil {
		f := bytes.Fields(data)
		if len(f) >= 2 {
			if pages, err := strconv.ParseUint(string(f[1]), 10, 64); err == nil {
				return pages * pageSize
			}
		}
	}
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}

// peakResidentBytes is the high-water mark of resident memory since the
// process started or since the last resetPeakResident.
func peakResidentBytes() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			f := bytes.Fields(v)
			if len(f) >= 1 {
				if kb, err := strconv.ParseUint(string(f[0]), 10, 64); err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}

var (
	processPeak atomic.Uint64 // the largest high-water mark seen before a reset
	peakMu      sync.Mutex
)

// resetPeakResident starts a new high-water mark (so that a run's peak is
// its own, not an earlier run's), remembering the old one for the
// process's peak. It reports whether the mark could be reset.
func resetPeakResident() bool {
	peakMu.Lock()
	defer peakMu.Unlock()
	old := peakResidentBytes()
	for {
		p := processPeak.Load()
		if old <= p || processPeak.CompareAndSwap(p, old) {
			break
		}
	}
	// Writing 5 to clear_refs resets VmHWM to the current resident size
	// (Linux 4.0 and later).
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// ProcessPeakResident is the peak resident memory of the whole process so
// far, in bytes (0 where the system does not say).
func ProcessPeakResident() uint64 {
	return max(processPeak.Load(), peakResidentBytes())
}

// MachineMemory is the memory this process may use: the machine's, or
// its control group's limit when that is smaller (0 when unknown).
func MachineMemory() uint64 {
	var total uint64
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range bytes.Split(data, []byte("\n")) {
			if v, ok := bytes.CutPrefix(line, []byte("MemTotal:")); ok {
				if f := bytes.Fields(v); len(f) >= 1 {
					if kb, err := strconv.ParseUint(string(f[0]), 10, 64); err == nil {
						total = kb << 10
					}
				}
			}
		}
	}
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if data, err := os.ReadFile(p); err == nil {
			if lim, err := strconv.ParseUint(string(bytes.TrimSpace(data)), 10, 64); err == nil && lim > 0 && (total == 0 || lim < total) {
				total = lim
			}
		}
	}
	return total
}

// DefaultMaxMemory is the bound on resident memory an exploration gets
// when none is asked for: three quarters of MachineMemory, leaving room
// for the rest of the machine (0, no bound, when the memory is unknown).
func DefaultMaxMemory() int64 {
	return int64(MachineMemory() / 4 * 3)
}

// settle collects garbage and returns freed memory to the system, so that
// the next run's figures start from what is really still in use.
func settle() {
	runtime.GC()
	debug.FreeOSMemory()
}
