package live

import (
	"context"
	"io"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
)

// countingSpawner records the processes it starts, for their CPU time.
type countingSpawner struct {
	Spawner
	mu    sync.Mutex
	procs []Proc
}

func (s *countingSpawner) Start(ctx context.Context, a WorkerArgs) (Proc, error) {
	p, err := s.Spawner.Start(ctx, a)
	if err == nil {
		s.mu.Lock()
		s.procs = append(s.procs, p)
		s.mu.Unlock()
	}
	return p, err
}

func cpuOf(p Proc) time.Duration {
	if e, ok := p.(*execProc); ok && e.cmd.ProcessState != nil {
		return e.cmd.ProcessState.UserTime() + e.cmd.ProcessState.SystemTime()
	}
	return 0
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchConfig is two prefill and two decode workers whose handoffs take
// next to no configured time at the benchmark's scale, with deadlines far
// beyond a run: what is measured is the processes, the frames and the
// machines, not the configured durations.
func benchConfig(b *testing.B, policy string) *cluster.Config {
	cfg := parityConfig(b, policy)
	cfg.LatencyUS = 10
	// At the scale of 1e-4 a configured day lasts under 9 s.
	const day = 86_400_000_000
	cfg.Timers = cluster.Timers{LeaseUS: day, HeartbeatUS: day / 3, BootstrapUS: day, ReservationUS: day, TransferDeadlineUS: day}
	cfg.HealthCheckUS = day / 10
	return cfg
}

// BenchmarkLiveThroughput runs 4,000 handoffs through real processes on
// loopback, two prefill and two decode workers, offered at 40,000 a
// second, and reports handoffs per second and where the CPU went; under
// both policies and on the legacy path (disabled), whose figures are the
// baseline the lifecycle's cost is measured against.
func BenchmarkLiveThroughput(b *testing.B) {
	for _, policy := range []string{"source-first", "destination-first", cluster.Disabled} {
		b.Run(policy, func(b *testing.B) {
			const n = 4000
			for range b.N {
				sp := &countingSpawner{Spawner: execSpawner()}
				cpu0 := selfCPU()
				rep, err := Run(context.Background(), Options{Config: benchConfig(b, policy), Workload: &slice{rs: spaced(n, 250_000)},
					Scale: 1e-4, Dir: b.TempDir(), Spawn: sp, Errors: io.Discard})
				if err != nil {
					b.Fatal(err)
				}
				coordCPU := selfCPU() - cpu0
				if !rep.Clean || rep.Succeeded != n {
					rep.Write(os.Stderr)
					b.Fatalf("%d of %d succeeded", rep.Succeeded, n)
				}
				var workers time.Duration
				for _, p := range sp.procs {
					workers += cpuOf(p)
				}
				b.ReportMetric(rep.Throughput, "handoffs/s")
				b.ReportMetric(rep.LatencyMS.P50, "p50-ms")
				b.ReportMetric(rep.LatencyMS.P99, "p99-ms")
				b.ReportMetric(float64(coordCPU.Microseconds())/n, "coord-cpu-us/handoff")
				b.ReportMetric(float64(workers.Microseconds())/n, "workers-cpu-us/handoff")
				// What the run's report says of it (its workers' last
				// generations, from hello to ledger; no spare).
				b.ReportMetric(rep.CPU.CoordinatorUS+rep.CPU.WorkersUS, "report-cpu-us/handoff")
			}
		})
	}
}
