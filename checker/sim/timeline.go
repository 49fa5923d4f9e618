package sim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/google/uuid"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// TimelineFormatV1 names the JSON form of a timeline.
const TimelineFormatV1 = "handoffcheck.timeline/v1"

// Timeline is what a run looked like over time: each worker's counters,
// sampled, and each handoff's phases and role transitions. timeline.json
// holds every handoff (streamed as each request retires); in memory a
// Timeline keeps the first PlotHandoffs requests, which the phase chart
// shows.
type Timeline struct {
	Format   string            `json:"format"`
	Policy   string            `json:"policy"`
	Engine   string            `json:"engine"`
	SampleMS float64           `json:"sample_ms"`
	Handoffs []HandoffTimeline `json:"handoffs"`
	Workers  []WorkerSeries    `json:"workers"`
	Summary  *Summary          `json:"summary"`
}

// PlotHandoffs is how many handoffs a Timeline keeps in memory.
const PlotHandoffs = 40

// WorkerSeries is one worker's samples.
type WorkerSeries struct {
	Worker   int      `json:"worker"`
	Role     string   `json:"role"`
	Capacity int64    `json:"capacity_blocks"`
	Slots    int      `json:"slots,omitempty"`
	Samples  []Sample `json:"samples"`
}

// Sample is a worker's counters at one time: its block categories (they
// sum to its capacity), the compute load its router counts, its in-flight
// requests, slots and headroom in use, the blocks it pins or reserves
// for attempts that can no longer succeed (Stranded, the figure
// StrandedBlockSeconds integrates), and the source blocks it keeps pinned
// after compute while decode waits (StrandedSource).
type Sample struct {
	TMS         float64 `json:"t_ms"`
	Free        int64   `json:"free"`
	Cached      int64   `json:"cached"`
	Active      int64   `json:"active"`
	Pinned      int64   `json:"pinned"`
	Reserved    int64   `json:"reserved"`
	ComputeLoad int64   `json:"compute_load_tokens"`
	InFlight    int64   `json:"in_flight"`
	Slots       int64   `json:"slots"`
	Headroom    int64   `json:"headroom_tokens"`
	Stranded    int64   `json:"stranded"`
	// StrandedSource is absent from timelines written before it was
	// measured; it reads as zero there.
	StrandedSource int64 `json:"stranded_source"`
	// The worker metrics of the handoff design: kv_used_blocks (active +
	// pinned source + reserved destination), active_decode_blocks (a
	// decode worker's active blocks with its reservations) and the decode
	// router's booking on the worker. Absent (zero) in timelines written
	// before they were recorded.
	KVUsed       int64 `json:"kv_used_blocks"`
	ActiveDecode int64 `json:"active_decode_blocks"`
	Booked       int64 `json:"decode_booked_blocks"`
}

// HandoffTimeline is one request's handoff: where it ran, how each side
// ended, its phases and every row its role machines fired.
type HandoffTimeline struct {
	Request     int          `json:"request"`
	ID          string       `json:"id,omitempty"`
	Attempt     string       `json:"attempt"`
	Try         int          `json:"try,omitempty"` // 0 for the first attempt, then each retry
	Prefill     int          `json:"prefill"`
	Decode      int          `json:"decode"`
	ArrivalMS   float64      `json:"arrival_ms"`
	Source      string       `json:"source_outcome"`
	Destination string       `json:"destination_outcome"`
	Phases      []Phase      `json:"phases"`
	Transitions []Transition `json:"transitions"`
}

// Phase is an interval in which a handoff was in one phase. Phases may
// overlap (a pinned source while the transfer runs).
type Phase struct {
	Name    string  `json:"phase"`
	StartMS float64 `json:"start_ms"`
	EndMS   float64 `json:"end_ms"`
}

// Transition is one row of a role machine firing.
type Transition struct {
	TMS   float64 `json:"t_ms"`
	Role  string  `json:"role"`
	Row   int     `json:"row"`
	From  string  `json:"from"`
	Event string  `json:"event"`
	To    string  `json:"to"`
}

// PhaseNames are the phases of a handoff, in chart order.
var PhaseNames = []string{"waiting", "queued", "computing", "pinned", "reserved", "transferring", "decoding"}

const numPhases = 7

// phaseOf says which phases a handoff is in. queued is a wait in a
// worker's queue: a dispatched prefill waiting for blocks (and, split off
// when the phase closes, behind the prefills booked before it on its
// worker), an activated destination waiting for a decode slot.
func phaseOf(x *model.Handoff, placed bool) (in [numPhases]bool) {
	in[0] = placed && x.Compute == model.ComputeNone && x.Src == model.SrcNone && x.Outcome[0] == model.OutcomeNone && !x.Cancelled
	in[1] = x.Compute == model.ComputeQueued || (x.Dst == model.DstActive && !x.Running && x.Outcome[1] == model.OutcomeNone)
	in[2] = x.Compute == model.ComputeRunning
	in[3] = x.Src == model.SrcPinned
	in[4] = x.Dst == model.DstReserved || x.Pending
	in[5] = x.Xfer == model.XferRunning
	in[6] = x.Dst == model.DstActive && x.Running
	return in
}

const phaseComputing = 2

// close ends phase i at at. A computing phase that began before its
// worker started on it (jobStart: prefills booked before it still ran)
// is queued until then.
func (pc *phaseClock) close(i int, at, jobStart int64) {
	pc.on[i] = false
	from := pc.open[i]
	if i == phaseComputing && jobStart > from {
		split := min(jobStart, at)
		pc.closed = append(pc.closed, Phase{Name: PhaseNames[1], StartMS: ms(from), EndMS: ms(split)})
		from = split
		if from == at {
			return
		}
	}
	pc.closed = append(pc.closed, Phase{Name: PhaseNames[i], StartMS: ms(from), EndMS: ms(at)})
}

// finish closes every phase still open at at and lists the request's
// phases by start.
func (pc *phaseClock) finish(at, jobStart int64) []Phase {
	for i := range pc.on {
		if pc.on[i] {
			pc.close(i, at, jobStart)
		}
	}
	ph := slices.Clone(pc.closed)
	slices.SortStableFunc(ph, func(a, b Phase) int {
		switch {
		case a.StartMS < b.StartMS:
			return -1
		case a.StartMS > b.StartMS:
			return 1
		}
		return 0
	})
	return ph
}

// phaseClock is when each open phase of a request began, and the phases
// that ended.
type phaseClock struct {
	open   [numPhases]int64
	on     [numPhases]bool
	closed []Phase
}

// Recorder collects a run's timeline and streams its handoffs to a
// writer as timeline.json.
type Recorder struct{ r recorder }

// NewRecorder records a timeline; w receives timeline.json (nil: keep
// only what the plots need in memory).
func NewRecorder(w io.Writer) *Recorder {
	rec := &Recorder{}
	if w != nil {
		rec.r.w = bufio.NewWriterSize(w, 1<<16)
	}
	return rec
}

// Timeline is what was recorded: the worker series, the first handoffs
// and the summary.
func (rec *Recorder) Timeline() *Timeline { return &rec.r.tl }

// Err is the first error writing timeline.json.
func (rec *Recorder) Err() error { return rec.r.err }

type recorder struct {
	w      *bufio.Writer
	err    error
	n      int // handoffs written
	period int64
	tl     Timeline
	seed   uint64
}

// maxSamples bounds a worker's samples: beyond it every other sample is
// dropped and the period doubles, so memory does not grow with the run.
const maxSamples = 4096

func (rc *recorder) start(s *Sim) {
	rc.period = s.cfg.SampleUS
	rc.seed = s.cfg.Seed
	rc.tl = Timeline{Format: TimelineFormatV1, Policy: s.cfg.PolicyName(), Engine: s.cfg.Engine.String()}
	for w := range s.workers {
		ws := WorkerSeries{Worker: w, Role: s.cfg.Role(w).String(), Capacity: int64(s.cfg.Capacity(w))}
		if s.cfg.Role(w) == model.DecodeWorker {
			ws.Slots = s.cfg.Decode.Slots
		}
		rc.tl.Workers = append(rc.tl.Workers, ws)
	}
	rc.printf(`{"format":%q,"policy":%q,"engine":%q,"handoffs":[`, TimelineFormatV1, rc.tl.Policy, rc.tl.Engine)
}

func (rc *recorder) printf(format string, args ...any) {
	if rc.w == nil || rc.err != nil {
		return
	}
	_, rc.err = fmt.Fprintf(rc.w, format, args...)
}

func (rc *recorder) sample(s *Sim) {
	for w := range s.workers {
		k := &s.workers[w]
		ws := &rc.tl.Workers[w]
		m := cluster.WorkerMetricValues(k, s.cfg.Role(w))
		ws.Samples = append(ws.Samples, Sample{
			TMS: ms(s.now), Free: int64(k.Free), Cached: int64(k.Cached + k.Kept + k.Prefix), Active: int64(k.Active),
			Pinned: int64(k.Pinned), Reserved: int64(k.Reserved), ComputeLoad: int64(k.PrefillTokens), InFlight: int64(k.InFlight),
			Slots: int64(k.SlotsUsed), Headroom: int64(k.HeadroomUsed), Stranded: int64(s.stats.workers[w].stranded),
			StrandedSource: int64(s.stats.workers[w].srcStrand),
			KVUsed:         int64(m[0]), ActiveDecode: int64(m[1]), Booked: int64(m[2]),
		})
	}
	if len(rc.tl.Workers) > 0 && len(rc.tl.Workers[0].Samples) >= maxSamples {
		for w := range rc.tl.Workers {
			ss := rc.tl.Workers[w].Samples
			j := 0
			for i := 0; i < len(ss); i += 2 {
				ss[j] = ss[i]
				j++
			}
			rc.tl.Workers[w].Samples = ss[:j]
		}
		rc.period *= 2
	}
}

func (rc *recorder) transition(r *request, at int64, f system.Firing, chk *system.System) {
	p := chk.Protocol()
	r.trans = append(r.trans, Transition{TMS: ms(at), Role: f.Role.String(), Row: f.Row,
		From: p.StateName(f.Role, f.From), Event: system.EventName(f.Role, f.Event), To: p.StateName(f.Role, f.To)})
}

func (rc *recorder) phases(r *request, at int64) {
	in := phaseOf(&r.st.W.H[0], r.p >= 0)
	pc := &r.phases
	for i := range in {
		switch {
		case in[i] && !pc.on[i]:
			pc.on[i], pc.open[i] = true, at
		case !in[i] && pc.on[i]:
			r.phases.close(i, at, r.jobStart)
		}
	}
}

// attemptNamespace roots the attempt ids of simulated handoffs.
var attemptNamespace = uuid.MustParse("1f0c3a52-8d8e-4d59-9a51-5b2f3c6f1e07")

func (rc *recorder) retire(r *request, at int64) {
	x := &r.st.W.H[0]
	ph := r.phases.finish(at, r.jobStart)
	rc.writeHandoff(HandoffTimeline{
		Request: r.Index, ID: r.ID,
		Attempt: rc.attempt(r.Index, r.attempt),
		Try:     r.attempt,
		Prefill: r.p, Decode: r.d, ArrivalMS: ms(r.ArrivalUS),
		Source: x.Outcome[0].String(), Destination: x.Outcome[1].String(),
		Phases: ph, Transitions: r.trans,
	}, r.attempt)
	r.trans = nil
}

// attempt is the attempt id of a request's try in the timeline.
func (rc *recorder) attempt(index, try int) string {
	return uuid.NewSHA1(attemptNamespace, fmt.Appendf(nil, "seed-%d/request-%d/attempt-%d", rc.seed, index, try)).String()
}

// writeHandoff keeps a retired request's timeline for the plots (the
// first tries of the first PlotHandoffs requests) and streams it into
// timeline.json.
func (rc *recorder) writeHandoff(h HandoffTimeline, try int) {
	if h.Phases == nil {
		h.Phases = []Phase{}
	}
	if h.Request < PlotHandoffs && try == 0 {
		rc.tl.Handoffs = append(rc.tl.Handoffs, h)
	}
	if rc.w != nil && rc.err == nil {
		b, err := json.Marshal(&h)
		if err != nil {
			rc.err = err
			return
		}
		if rc.n > 0 {
			rc.printf(",")
		}
		rc.printf("\n%s", b)
		rc.n++
	}
}

func (rc *recorder) finish(s *Sim, res *Result) {
	slices.SortFunc(rc.tl.Handoffs, func(a, b HandoffTimeline) int { return a.Request - b.Request })
	rc.tl.SampleMS = ms(rc.period)
	sum := res.Summary
	rc.tl.Summary = &sum
	if rc.w == nil || rc.err != nil {
		return
	}
	ws, err := json.Marshal(rc.tl.Workers)
	if err != nil {
		rc.err = err
		return
	}
	sb, err := json.Marshal(rc.tl.Summary)
	if err != nil {
		rc.err = err
		return
	}
	rc.printf("\n],\"sample_ms\":%s,\"workers\":%s,\n\"summary\":%s}\n", jsonNum(rc.tl.SampleMS), ws, sb)
	if rc.err == nil {
		rc.err = rc.w.Flush()
	}
}

func jsonNum(x float64) string {
	b, _ := json.Marshal(x)
	return string(b)
}
