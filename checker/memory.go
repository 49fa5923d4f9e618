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
	"time"
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
	return residentFromRuntime()
}

// residentFromRuntime is the runtime's own estimate of the memory it holds
// from the system, for systems without /proc.
func residentFromRuntime() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}

// peakResidentBytes is the high-water mark of resident memory since the
// process started.
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

// processPeakResident is the peak resident memory of the whole process so
// far, in bytes (0 where the system does not say). The kernel's own
// high-water mark is never reset here, so tools that read it from outside
// (/usr/bin/time -v) see the same peak.
func processPeakResident() uint64 { return peakResidentBytes() }

// residentSampler follows resident memory while a run explores: its peak
// is the run's own, where the process's high-water mark would also hold
// earlier runs'. When the run raises that mark, the mark is the run's
// peak, exactly (it catches a short peak such as a table's growth, when
// old and new tables are both mapped, which a sampler may miss); when it
// does not, the samples are.
type residentSampler struct {
	peak atomic.Uint64
	hwm  uint64 // the process's high-water mark when the run began
	done chan struct{}
	wg   sync.WaitGroup
}

// residentSampleEvery is how often the sampler looks. Each look wakes a
// goroutine that takes a core from the workers for a moment, and a level's
// workers wait for each other at every batch, so a look costs all of
// them: at 10 ms the looks took a tenth of a two-worker run's rate.
const residentSampleEvery = 100 * time.Millisecond

func sampleResident() *residentSampler {
	r := &residentSampler{done: make(chan struct{}), hwm: peakResidentBytes()}
	r.peak.Store(residentBytes())
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		t := time.NewTicker(residentSampleEvery)
		defer t.Stop()
		for {
			select {
			case <-r.done:
				return
			case <-t.C:
				if n := residentBytes(); n > r.peak.Load() {
					r.peak.Store(n)
				}
			}
		}
	}()
	return r
}

// stop ends the sampling and returns the peak seen.
func (r *residentSampler) stop() uint64 {
	close(r.done)
	r.wg.Wait()
	peak := max(r.peak.Load(), residentBytes())
	if hwm := peakResidentBytes(); hwm > r.hwm {
		// The mark rose during the run, so the run reached it.
		peak = max(peak, hwm)
	}
	return peak
}

// MachineMemory is the memory this process may use: the machine's, or
// its control group's limit when that is smaller (0 when unknown).
func MachineMemory() uint64 {
	return machineMemoryFrom("/proc/meminfo", "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
}

// machineMemoryFrom reads MemTotal from meminfo and lowers it to the
// smallest number the control-group limit files hold ("max", an unlimited
// cgroup v2, is not a number).
func machineMemoryFrom(meminfo string, cgroupLimits ...string) uint64 {
	var total uint64
	if data, err := os.ReadFile(meminfo); err == nil {
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
	for _, p := range cgroupLimits {
		if data, err := os.ReadFile(p); err == nil {
			if lim, err := strconv.ParseUint(string(bytes.TrimSpace(data)), 10, 64); err == nil && lim > 0 && (total == 0 || lim < total) {
				total = lim
			}
		}
	}
	return total
}

// settle collects garbage and returns freed memory to the system, so that
// the next run's figures start from what is really still in use.
func settle() {
	runtime.GC()
	debug.FreeOSMemory()
}
