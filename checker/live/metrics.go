package live

import (
	"math"
	"slices"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/model"
)

// The handoff design's figures in a live run: each worker's metrics
// (cluster.WorkerMetrics) over the run, and the stranded source KV
// (cluster.StrandedSource). A worker follows its own counters, the
// coordinator the routers' bookings; the stranding of an attempt's
// source is seen by two processes, each a part of it (see strand).

// PeakMean is a metric's peak and its mean over the run's time, as the
// simulator reports them.
type PeakMean struct {
	Peak float64 `json:"peak"`
	Mean float64 `json:"mean"`
}

// gauge follows a counter over time (microseconds from the run's
// epoch): its value, peak and integral.
type gauge struct {
	v, peak  int64
	last     int64
	integral float64 // value × microseconds
}

func (g *gauge) set(now, v int64) {
	g.flush(now)
	g.v = v
	g.peak = max(g.peak, v)
}

func (g *gauge) flush(now int64) {
	if now > g.last {
		g.integral += float64(g.v) * float64(now-g.last)
		g.last = now
	}
}

// over is the gauge's peak and mean over the span from to to (before
// from the counter was zero: nothing is held before the first arrival).
func (g *gauge) over(from, to int64) PeakMean {
	g.flush(to)
	pm := PeakMean{Peak: float64(g.peak)}
	if to > from {
		pm.Mean = round3(g.integral / float64(to-from))
	}
	return pm
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// workerGauges are a worker's metrics (cluster.WorkerMetrics).
type workerGauges [len(cluster.WorkerMetrics)]gauge

func (gs *workerGauges) set(now int64, k *model.Worker, role model.WorkerRole, which []int) {
	v := cluster.WorkerMetricValues(k, role)
	for _, i := range which {
		gs[i].set(now, int64(v[i]))
	}
}

// The metrics a worker follows from its own counters, and the one the
// coordinator follows from the routers' ledgers.
var (
	ownMetrics    = []int{0, 1}
	routerMetrics = []int{2}
)

// decodeWaits says whether a destination's window holds the decode
// still waiting, as SourceStranded asks it: that window, its source
// taken as pinned and unfinished (which it cannot see), strands its
// source.
func decodeWaits(x *model.Handoff) bool {
	y := *x
	y.Src = model.SrcPinned
	y.Outcome[model.SourceSide] = model.OutcomeNone
	return y.SourceStranded()
}

// strand is an attempt's stranded source KV. Its source's window sees
// the stranding begin (compute finished, blocks pinned) and end by what
// the source does or hears (its outcome, a cancel, a failed transfer);
// the destination's window sees the decode stop waiting (it reserved,
// activated or finished), which the source's window may hear of only
// later or never. The stranding is the first span ended at the earlier
// of the two.
type strand struct {
	w        int // the source's worker
	from, to int64
	blocks   int64
	ready    int64 // when the decode stopped waiting (0: not said)
}

// end is the stranding's end (0 when there was none).
func (s *strand) end() int64 {
	if s.from == 0 || s.blocks == 0 {
		return 0
	}
	to := s.to
	if s.ready > 0 && (to == 0 || s.ready < to) {
		to = s.ready
	}
	if to <= s.from {
		return 0
	}
	return to
}

// strandFigures are the stranded source KV of the run: block-seconds
// (of configured time, as the simulator's: the wall clock's divided by
// the time scale) and peak blocks, per worker (indexed by worker) and
// over all.
type strandFigures struct {
	blockSeconds []float64
	peak         []int64
	totalBS      float64
	totalPeak    int64
}

func strandedFigures(ss []strand, workers int, scale float64) strandFigures {
	f := strandFigures{blockSeconds: make([]float64, workers), peak: make([]int64, workers)}
	type edge struct {
		at    int64
		delta int64
		w     int
	}
	var es []edge
	for i := range ss {
		s := &ss[i]
		end := s.end()
		if end == 0 {
			continue
		}
		f.blockSeconds[s.w] += float64(s.blocks) * float64(end-s.from) / 1e6 / scale
		es = append(es, edge{s.from, s.blocks, s.w}, edge{end, -s.blocks, s.w})
	}
	// Ends before starts at one instant: a span ends where the next
	// begins without the two counting together.
	slices.SortFunc(es, func(a, b edge) int {
		if a.at != b.at {
			return int(min(max(a.at-b.at, -1), 1))
		}
		return int(min(max(a.delta-b.delta, -1), 1))
	})
	now := make([]int64, workers)
	var total int64
	for _, e := range es {
		now[e.w] += e.delta
		total += e.delta
		f.peak[e.w] = max(f.peak[e.w], now[e.w])
		f.totalPeak = max(f.totalPeak, total)
	}
	for w := range f.blockSeconds {
		f.totalBS += f.blockSeconds[w]
		f.blockSeconds[w] = round3(f.blockSeconds[w])
	}
	f.totalBS = round3(f.totalBS)
	return f
}
