package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/props"
	"github.com/handoffcheck/handoffcheck/model"
)

// Result is what a run measured, and the violation that stopped it.
type Result struct {
	Summary   Summary
	Violation *Violation
	// Rows counts, per role, how often each row of the tables fired
	// (index 1 is row 1).
	Rows [2][]uint64
	// Interrupted: the context was cancelled before the workload ended.
	Interrupted bool
	// Props is the verdicts of Options.Props on the run (nil: none).
	Props *props.RunReport
	// Invariants is the built-in invariants the run exercised and those
	// it never did (nil on a path without role machines).
	Invariants *cluster.InvariantsReport
}

// Summary is the figures of a run (docs: simulate's summary). Times are
// milliseconds of virtual time; percentiles are within 1%.
type Summary struct {
	Policy string `json:"policy"`
	Engine string `json:"engine"`
	Seed   uint64 `json:"seed"`

	Requests  int `json:"requests"`
	Succeeded int `json:"succeeded"` // both sides ended in success
	Failed    int `json:"failed"`    // some side ended in failure, without a client cancel
	Cancelled int `json:"cancelled"` // the client cancelled
	// Retried counts the frontend's further attempts at failed requests
	// (max_retries).
	Retried int `json:"retried"`
	// FaultsStruck and FaultsMissed count planned faults that happened and
	// those that found nothing to strike (the request had finished).
	FaultsStruck int `json:"faults_struck"`
	FaultsMissed int `json:"faults_missed"`

	MakespanMS       float64 `json:"makespan_ms"`
	ThroughputRPS    float64 `json:"throughput_rps"`
	OutputTokensPerS float64 `json:"output_tokens_per_s"`
	TTFT             Pcts    `json:"ttft_ms"`
	E2E              Pcts    `json:"e2e_ms"`
	// PrefillWait is each computed prefill's wait from its dispatch to
	// the start of its compute: for prefill blocks, then behind the
	// prefills booked before it on its worker. DecodeWait is each
	// activated destination's wait for a decode slot.
	PrefillWait Pcts `json:"prefill_wait_ms"`
	DecodeWait  Pcts `json:"decode_wait_ms"`

	Transfers       int     `json:"transfers"`
	TransfersFailed int     `json:"transfers_failed"`
	TransferBytes   int64   `json:"transfer_bytes"`
	TransferMeanMS  float64 `json:"transfer_mean_ms"`
	PrefixHitTokens int64   `json:"prefix_hit_tokens"`
	// AdoptedBlocks is the duplicate blocks the destinations freed at
	// activation by adopting equal blocks they held (the engine's
	// model.EngineTraits.Duplicates); nil when the engine does not adopt
	// at activation, or on a path without handoffs.
	AdoptedBlocks    *int64  `json:"adopted_blocks,omitempty"`
	ReclaimObligated int     `json:"reclaim_obligations"`
	ReclaimMaxMS     float64 `json:"reclaim_max_ms"`
	GiveUpObligated  int     `json:"give_up_obligations"`
	GiveUpMaxMS      float64 `json:"give_up_max_ms"`

	StrandedBlockSeconds float64 `json:"stranded_block_seconds"`
	// StrandedSourceBlockSeconds and StrandedSourcePeak are the stranded
	// KV the handoff design is about: source blocks pinned after prefill
	// compute finished while decode waits (model.Handoff.SourceStranded),
	// in block-seconds over the run and at the largest instant, summed
	// over workers.
	StrandedSourceBlockSeconds float64         `json:"stranded_source_block_seconds"`
	StrandedSourcePeak         int64           `json:"stranded_source_peak_blocks"`
	Workers                    []WorkerSummary `json:"workers"`
	Events                     uint64          `json:"events"`
	// Teardown is what ending the run with handoffs unresolved did
	// (Options.UntilUS); nil when the run was not torn down.
	Teardown *Teardown `json:"teardown,omitempty"`
	// KeptGoing is what a run that went on past its violations
	// (Options.KeepGoing) counted of them; nil otherwise.
	KeptGoing *KeptGoing `json:"kept_going,omitempty"`
}

// KeptGoing is the cost of a bug over a whole workload: the violations
// of a run that went on past them, and what the requests that broke an
// invariant left in use (each takes no further step and keeps its
// blocks, as a leak would, until the run ends or its worker restarts).
// The rest of the summary is the cost to the other requests (compare the
// run on tables without the bug). Summary.Requests counts the broken
// requests; Succeeded, Failed and Cancelled do not.
type KeptGoing struct {
	// Violations counts them by invariant, most first (then by name).
	Violations []InvariantCount `json:"violations"`
	// Requests is how many requests broke an invariant while in flight
	// and took no step after: every invariant but the bounds on time
	// (BoundedReclaim, BoundedGiveUp), whose request goes on.
	Requests int `json:"requests"`
	// InUseBlocks is what the workers still had in use (active, pinned,
	// reserved, a locked prefix) when the run ended: with every other
	// request retired, what the broken ones left. A run without a
	// violation ends with none. The workers' own counters, not the broken
	// requests' records, which a violation may have left wrong.
	InUseBlocks int64 `json:"in_use_blocks"`
	// Firsts is the first violation of each invariant broken, in the
	// order they happened (without the request's history, which only the
	// run's first violation carries).
	Firsts []Violation `json:"firsts"`
	// Stopped says why the run ended early after all: a violation no one
	// request carries (a worker's counters); "" when it went to the end.
	Stopped string `json:"stopped,omitempty"`

	byInv map[string]int
}

// InvariantCount is how many times a run broke one invariant.
type InvariantCount struct {
	Invariant string `json:"invariant"`
	Count     int    `json:"count"`
}

func (k *KeptGoing) note(inv string, v Violation) {
	if k.byInv == nil {
		k.byInv = map[string]int{}
	}
	if k.byInv[inv] == 0 {
		k.Firsts = append(k.Firsts, v)
	}
	k.byInv[inv]++
}

// First is the first violation of an invariant, or nil.
func (k *KeptGoing) First(inv string) *Violation {
	for i := range k.Firsts {
		if k.Firsts[i].Invariant == inv {
			return &k.Firsts[i]
		}
	}
	return nil
}

// Total is how many violations the run counted.
func (k *KeptGoing) Total() int {
	n := 0
	for _, c := range k.Violations {
		n += c.Count
	}
	return n
}

// Pcts is a latency distribution: its exact mean, and its percentiles
// as the upper edges of 1% buckets.
type Pcts struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
}

// WorkerSummary is one worker's figures: peak and time-weighted mean of
// each block category and counter, the block-seconds it held for
// attempts that could no longer succeed (StrandedBlockSeconds), and its
// stranded source KV (pinned after compute while decode waits).
type WorkerSummary struct {
	Worker                     int                 `json:"worker"`
	Role                       string              `json:"role"`
	Capacity                   int64               `json:"capacity_blocks"`
	Series                     map[string]PeakMean `json:"series"`
	StrandedBlockSeconds       float64             `json:"stranded_block_seconds"`
	StrandedSourceBlockSeconds float64             `json:"stranded_source_block_seconds"`
	StrandedSourcePeak         int64               `json:"stranded_source_peak_blocks"`
}

// PeakMean is a counter's peak and its mean over the run's time.
type PeakMean struct {
	Peak float64 `json:"peak"`
	Mean float64 `json:"mean"`
}

// Series names a worker's counters, in the order samples and summaries
// list them: its block categories, its router's and admission's
// counters, and the worker metrics of the handoff design:
// kv_used_blocks (active + pinned source + reserved destination),
// active_decode_blocks (a decode worker's active blocks with its
// destination reservations; zero on a prefill worker) and the decode
// router's selection-time booking, which may precede the physical
// reservation.
var Series = append([]string{"free", "cached", "active", "pinned", "reserved", "compute_load_tokens", "in_flight", "slots", "headroom_tokens"},
	cluster.WorkerMetrics[:]...)

const numSeries = 12

// values is a worker's counters in Series order; the design's worker
// metrics come from their one definition (cluster.WorkerMetricValues).
func values(k *model.Worker, role model.WorkerRole) [numSeries]float64 {
	m := cluster.WorkerMetricValues(k, role)
	return [numSeries]float64{
		float64(k.Free), float64(k.Cached + k.Kept + k.Prefix), float64(k.Active), float64(k.Pinned), float64(k.Reserved),
		float64(k.PrefillTokens), float64(k.InFlight), float64(k.SlotsUsed), float64(k.HeadroomUsed),
		float64(m[0]), float64(m[1]), float64(m[2]),
	}
}

type workerStats struct {
	role     model.WorkerRole
	last     int64
	integral [numSeries]float64
	peak     [numSeries]float64
	stranded model.Blocks
	strandBS float64 // block-microseconds
	// srcStrand is the stranded source KV (SourceStranded) now, srcPeak
	// its largest value, srcBS its block-microseconds.
	srcStrand model.Blocks
	srcPeak   model.Blocks
	srcBS     float64
}

type stats struct {
	workers                                   []workerStats
	arrived, completed, failed, cancelledReqs int
	retried                                   int
	cancelled, faults, faultsMissed           int
	ttft, e2e                                 histogram
	prefillWait, decodeWait                   histogram
	outputTokens                              int64
	transfers, transfersFailed                int
	transferBytes                             int64
	transferUS                                int64
	hitTokens                                 int64
	adopted                                   int64 // duplicate blocks freed at activation
	obligated                                 int
	reclaimMax                                int64
	gaveUp                                    int
	giveUpMax                                 int64
	lastDone                                  int64
	srcNow, srcPeak                           model.Blocks // stranded source KV over all workers
}

func newStats(cfg *cluster.Config, n int) *stats {
	st := &stats{workers: make([]workerStats, n)}
	for w := range st.workers {
		st.workers[w].peak[0] = float64(cfg.Capacity(w))
		st.workers[w].role = cfg.Role(w)
	}
	return st
}

// flush integrates a worker's counters up to now.
func (st *stats) flush(w int, k *model.Worker, now int64) {
	ws := &st.workers[w]
	dt := float64(now - ws.last)
	if dt > 0 {
		v := values(k, ws.role)
		for i := range v {
			ws.integral[i] += v[i] * dt
		}
		ws.strandBS += float64(ws.stranded) * dt
		ws.srcBS += float64(ws.srcStrand) * dt
	}
	ws.last = now
}

// change records a worker's counters changing at the current time, and
// holds the worker metrics to the handoff design's accounting at every
// change: kv_used_blocks is what is neither free nor cached, so pins and
// reservations count as used the moment they exist and nothing counts
// twice (BlockCategoriesDisjoint, ReservationCountsAtOnce).
func (st *stats) change(s *Sim, w int, old, k *model.Worker) {
	st.flush(w, old, s.now)
	ws := &st.workers[w]
	v := values(k, ws.role)
	for i := range v {
		ws.peak[i] = max(ws.peak[i], v[i])
	}
	capacity := s.cfg.Capacity(w)
	if unused := k.Free + k.Cached + k.Kept + k.Prefix; k.KVUsed() != capacity-unused {
		s.fail(nil, model.NameBlockCategoriesDisjoint, fmt.Sprintf("worker %d reports kv_used_blocks %d (active %d + pinned source %d + reserved destination %d), but capacity %d less free and cached (%d) is %d",
			w, int64(k.KVUsed()), int64(k.Active), int64(k.Pinned), int64(k.Reserved), int64(capacity), int64(unused), int64(capacity-unused)))
	}
}

func (st *stats) strand(s *Sim, w int, delta model.Blocks) {
	st.flush(w, &s.workers[w], s.now)
	st.workers[w].stranded += delta
}

func (st *stats) strandSource(s *Sim, w int, delta model.Blocks) {
	st.flush(w, &s.workers[w], s.now)
	ws := &st.workers[w]
	ws.srcStrand += delta
	ws.srcPeak = max(ws.srcPeak, ws.srcStrand)
	st.srcNow += delta
	st.srcPeak = max(st.srcPeak, st.srcNow)
}

// waits follows the queues a request waits in across a step from b to x:
// its prefill from dispatch to the start of its compute, its activated
// destination until a decode slot runs it.
func (st *stats) waits(s *Sim, r *request, b, x *model.Handoff) {
	if b.Compute == model.ComputeNone && x.Compute != model.ComputeNone {
		r.dispatchAt = s.now
	}
	if b.Compute == model.ComputeRunning && x.Compute == model.ComputeDone {
		st.prefillWait.add(r.jobStart - r.dispatchAt)
	}
	if b.Dst != model.DstActive && x.Dst == model.DstActive {
		r.activeAt = s.now
	}
	if x.Dst == model.DstActive && x.Running && (!b.Running || b.Dst != model.DstActive) {
		st.decodeWait.add(s.now - r.activeAt)
	}
}

func (st *stats) hits(t model.Tokens) { st.hitTokens += int64(t) }

func (st *stats) reclaimed(d int64) {
	st.obligated++
	st.reclaimMax = max(st.reclaimMax, d)
}

func (st *stats) gaveUpIn(d int64) {
	st.gaveUp++
	st.giveUpMax = max(st.giveUpMax, d)
}

// retire records a request's final attempt.
func (st *stats) retire(s *Sim, r *request) {
	x := &r.st.W.H[0]
	switch {
	case x.Outcome[0] == model.OutcomeOK && x.Outcome[1] == model.OutcomeOK:
		st.completed++
		st.e2e.add(r.outcomeAt[1] - r.since)
		st.outputTokens += int64(r.OutputTokens)
	case x.Cancelled:
		st.cancelledReqs++
	default:
		st.failed++
	}
	if r.firstTok >= 0 && x.Activated {
		st.ttft.add(r.firstTok - r.since)
	}
	st.lastDone = max(st.lastDone, s.now)
}

// transfer records an attempt's transfer.
func (st *stats) transfer(r *request) {
	x := &r.st.W.H[0]
	switch x.Xfer {
	case model.XferDone:
		st.transfers++
		st.transferBytes += int64(r.Cfg.DestQuote(0, 1, x.PrefixGone&2 != 0).PayloadBytes)
		st.transferUS += r.xferEnd - r.xferStart
	case model.XferFailed:
		st.transfersFailed++
	}
}

func (s *Sim) advance(t int64) {
	if t > s.now {
		s.now = t
	}
}

func (s *Sim) result(events uint64, interrupted bool) *Result {
	st := s.stats
	end := max(st.lastDone, s.now)
	if !interrupted && s.violation == nil {
		end = st.lastDone
	}
	for w := range s.workers {
		st.flush(w, &s.workers[w], end)
	}
	sum := Summary{
		Policy: s.cfg.PolicyName(), Engine: s.cfg.Engine.String(), Seed: s.cfg.Seed,
		Requests: st.arrived, Succeeded: st.completed, Failed: st.failed, Cancelled: st.cancelledReqs, Retried: st.retried,
		FaultsStruck: st.faults, FaultsMissed: st.faultsMissed,
		MakespanMS: ms(end), TTFT: st.ttft.pcts(), E2E: st.e2e.pcts(),
		PrefillWait: st.prefillWait.pcts(), DecodeWait: st.decodeWait.pcts(),
		Transfers: st.transfers, TransfersFailed: st.transfersFailed, TransferBytes: st.transferBytes,
		PrefixHitTokens: st.hitTokens, ReclaimObligated: st.obligated, ReclaimMaxMS: ms(st.reclaimMax),
		GiveUpObligated: st.gaveUp, GiveUpMaxMS: ms(st.giveUpMax),
		Events: events, Teardown: s.teardown,
	}
	if s.index != nil && s.cfg.Adopts() {
		sum.AdoptedBlocks = &st.adopted
	}
	if end > 0 {
		sum.ThroughputRPS = round3(float64(st.completed) / (float64(end) / 1e6))
		sum.OutputTokensPerS = round3(float64(st.outputTokens) / (float64(end) / 1e6))
	}
	if st.transfers > 0 {
		sum.TransferMeanMS = round3(float64(st.transferUS) / float64(st.transfers) / 1000)
	}
	for w := range s.workers {
		ws := &st.workers[w]
		wsum := WorkerSummary{Worker: w, Role: s.cfg.Role(w).String(), Capacity: int64(s.cfg.Capacity(w)), Series: map[string]PeakMean{},
			StrandedBlockSeconds:       round3(ws.strandBS / 1e6),
			StrandedSourceBlockSeconds: round3(ws.srcBS / 1e6), StrandedSourcePeak: int64(ws.srcPeak)}
		for i, name := range Series {
			mean := 0.0
			if end > 0 {
				mean = ws.integral[i] / float64(end)
			}
			wsum.Series[name] = PeakMean{Peak: ws.peak[i], Mean: round3(mean)}
		}
		sum.StrandedBlockSeconds += ws.strandBS / 1e6
		sum.StrandedSourceBlockSeconds += ws.srcBS / 1e6
		sum.Workers = append(sum.Workers, wsum)
	}
	sum.StrandedBlockSeconds = round3(sum.StrandedBlockSeconds)
	sum.StrandedSourceBlockSeconds = round3(sum.StrandedSourceBlockSeconds)
	sum.StrandedSourcePeak = int64(st.srcPeak)
	if s.kept != nil {
		sum.KeptGoing = s.keptSummary()
	}
	res := &Result{Summary: sum, Violation: s.violation, Interrupted: interrupted}
	if s.cov != nil {
		res.Rows = s.cov.Rows
	}
	if s.tl != nil {
		s.tl.finish(s, res)
	}
	return res
}

func ms(us int64) float64 { return round3(float64(us) / 1000) }

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// histogram counts latencies in buckets 1% wide, so percentiles need
// memory that does not grow with the workload.
type histogram struct {
	n       int
	sum     int64 // microseconds, for the exact mean
	buckets map[int]int
}

const bucketBase = 1.01

func bucketOf(us int64) int {
	if us < 1 {
		return 0
	}
	return 1 + int(math.Floor(math.Log(float64(us))/math.Log(bucketBase)))
}

// upper is the largest latency of a bucket, in microseconds.
func upper(b int) float64 {
	if b == 0 {
		return 0
	}
	return math.Pow(bucketBase, float64(b))
}

func (h *histogram) add(us int64) {
	if h.buckets == nil {
		h.buckets = map[int]int{}
	}
	h.buckets[bucketOf(us)]++
	h.n++
	h.sum += us
}

func (h *histogram) pcts() Pcts {
	p := Pcts{N: h.n}
	if h.n == 0 {
		return p
	}
	p.Mean = round3(float64(h.sum) / float64(h.n) / 1000)
	keys := make([]int, 0, len(h.buckets))
	for k := range h.buckets {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	at := func(q float64) float64 {
		rank := int(math.Ceil(q * float64(h.n)))
		seen := 0
		for _, k := range keys {
			seen += h.buckets[k]
			if seen >= rank {
				return round3(upper(k) / 1000)
			}
		}
		return round3(upper(keys[len(keys)-1]) / 1000)
	}
	p.P50, p.P90, p.P99 = at(0.5), at(0.9), at(0.99)
	return p
}

// keptSummary closes the count of a run that kept going.
func (s *Sim) keptSummary() *KeptGoing {
	k := s.kept
	k.InUseBlocks = 0
	for w := range s.workers {
		x := &s.workers[w]
		k.InUseBlocks += int64(s.cfg.Capacity(w) - x.Free - x.Cached - x.Kept)
	}
	k.Violations = k.Violations[:0]
	for inv, n := range k.byInv {
		k.Violations = append(k.Violations, InvariantCount{Invariant: inv, Count: n})
	}
	slices.SortFunc(k.Violations, func(a, b InvariantCount) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Invariant, b.Invariant)
	})
	return k
}

// Count is how many times the run broke an invariant.
func (k *KeptGoing) Count(inv string) int { return k.byInv[inv] }
