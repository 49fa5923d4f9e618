package sim

import (
	"container/heap"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/model"
)

// The disabled policy (DisabledMode): handoff is off, and each request is
// prefilled and decoded on one decode worker, as an aggregated engine
// serves it: no pin, no lease, no transfer, no role machine. The decode
// workers take prefill at the prefill rate; the prefill workers stand
// idle. A request is admitted in arrival order when its prompt's blocks
// and a slot are free, prefills (one prefill at a time per worker), then
// decodes its output and frees everything. DisabledModeUnchanged compares
// this with a plain aggregated reference written apart, event for event.
// A worker computes one prefill at a time, first admitted first; a
// request cancelled before its prefill ends gives the worker back at the
// cancel, and the next prefill starts then.

// Step names what happens to a request in the disabled mode.
const (
	StepArrive  = "arrive"
	StepAdmit   = "admit"
	StepPrefill = "prefill-done"
	StepFinish  = "finish"
	StepCancel  = "cancel"
)

// Step is one event of a disabled run, for DisabledModeUnchanged.
type Step struct {
	TUS     int64
	Request int
	Worker  int
	Kind    string
}

// dreq is a request of a disabled run.
type dreq struct {
	cluster.Request
	w         int
	blocks    model.Blocks
	admitted  bool
	done      bool
	firstTok  int64
	finishVer int
	// job is its prefill on its worker's compute queue; prefillVer
	// versions its prefill event, which a cancel ahead of it moves.
	job        *cluster.ComputeJob[*dreq]
	prefillVer int
	// When it reached its worker, was admitted, started and ended its
	// prefill (-1: not yet), for its timeline.
	arriveAt, admitAt, startAt, prefillAt int64
}

// devent is an event of a disabled run, ordered by time, then by kind
// (what frees capacity first), then by request: the order does not hang
// on when an event was scheduled.
type devent struct {
	at   int64
	prio int
	r    *dreq
	ver  int
}

// The kinds of a disabled run, in the order they happen at one instant.
const (
	dFinish = iota
	dCancel
	dPrefill
	dArrive
)

type dqueue []devent

func (q dqueue) Len() int { return len(q) }
func (q dqueue) Less(i, j int) bool {
	a, b := &q[i], &q[j]
	if a.at != b.at {
		return a.at < b.at
	}
	if a.prio != b.prio {
		return a.prio < b.prio
	}
	return a.r.Index < b.r.Index
}
func (q dqueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *dqueue) Push(x any)   { *q = append(*q, x.(devent)) }
func (q *dqueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

type aggWorker struct {
	free  model.Blocks
	slots int
	jobs  cluster.ComputeQueue[*dreq] // the prefills to compute, the one computing first
	wait  []*dreq
	k     model.Worker // the counters the summary and the timeline read
}

type disabledRun struct {
	s     *Sim
	q     dqueue
	ws    []aggWorker
	steps []Step
	trace bool
	next  int
}

// runAggregated runs a workload without disaggregation.
func runAggregated(ctx context.Context, cfg *cluster.Config, src cluster.Source, opt Options) (*Result, error) {
	n := cfg.NumWorkers()
	s := &Sim{cfg: cfg, workers: make([]model.Worker, n), rng: rand.New(rand.NewPCG(cfg.Seed, 0x68616e646f6666))}
	s.stats = newStats(cfg, n)
	for w := range s.workers {
		s.workers[w].Free = cfg.Capacity(w)
	}
	if opt.Timeline != nil {
		s.tl = &opt.Timeline.r
		s.tl.start(s)
	}
	d := &disabledRun{s: s, ws: make([]aggWorker, cfg.Decode.Workers), trace: opt.DisabledSteps != nil}
	for i := range d.ws {
		d.ws[i].free = cfg.Decode.CapacityBlocks
	}
	var events uint64
	pull := func() error {
		r, err := src.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		dr := &dreq{Request: r, firstTok: -1, arriveAt: -1, admitAt: -1, startAt: -1, prefillAt: -1}
		if dr.blocks, err = cfg.PromptBlocks(r.PromptTokens); err != nil {
			return fmt.Errorf("%w: request %d: %v", cluster.ErrInput, r.Index, err)
		}
		if dr.blocks > cfg.Decode.CapacityBlocks {
			return fmt.Errorf("%w: request %d needs %d blocks, more than a decode worker's capacity of %d", cluster.ErrInput, r.Index, int64(dr.blocks), int64(cfg.Decode.CapacityBlocks))
		}
		heap.Push(&d.q, devent{at: r.ArrivalUS + cfg.LatencyUS, prio: dArrive, r: dr})
		if r.CancelUS >= 0 {
			heap.Push(&d.q, devent{at: max(r.CancelUS, r.ArrivalUS+cfg.LatencyUS), prio: dCancel, r: dr})
		}
		return nil
	}
	if err := pull(); err != nil {
		return nil, err
	}
	samples := int64(0)
	for d.q.Len() > 0 {
		e := heap.Pop(&d.q).(devent)
		if s.tl != nil {
			for ; samples <= e.at; samples += s.tl.period {
				s.advance(samples)
				s.tl.sample(s)
			}
		}
		s.advance(e.at)
		events++
		if events&0xffff == 0 && ctx.Err() != nil {
			return s.result(events, true), nil
		}
		r := e.r
		switch e.prio {
		case dArrive:
			s.stats.arrived++
			w := s.choose(cfg.DecodeRouter, 0, len(d.ws), &d.next, func(w int) int64 { return int64(d.ws[w].k.InFlight) }, nil)
			r.w = w
			r.arriveAt = s.now
			d.step(r, StepArrive)
			d.ws[w].wait = append(d.ws[w].wait, r)
			d.set(w, func(k *model.Worker) { k.InFlight++ })
			d.admit(w)
			if err := pull(); err != nil {
				return nil, err
			}
		case dPrefill:
			if r.done || e.ver != r.prefillVer {
				continue
			}
			r.startAt = r.job.Start
			d.unbook(r)
			r.prefillAt = s.now
			d.step(r, StepPrefill)
			r.firstTok = s.now + cfg.Decode.PerTokenUS
			heap.Push(&d.q, devent{at: s.now + int64(r.OutputTokens)*cfg.Decode.PerTokenUS, prio: dFinish, r: r, ver: r.finishVer})
		case dFinish:
			if r.done || e.ver != r.finishVer {
				continue
			}
			d.step(r, StepFinish)
			d.end(r)
			d.timeline(r, true)
			s.stats.completed++
			s.stats.e2e.add(s.now - r.ArrivalUS)
			s.stats.ttft.add(r.firstTok - r.ArrivalUS)
			s.stats.outputTokens += int64(r.OutputTokens)
			s.stats.lastDone = max(s.stats.lastDone, s.now)
		case dCancel:
			if r.done {
				continue
			}
			d.step(r, StepCancel)
			if r.job != nil {
				r.startAt = r.job.Start
			}
			d.end(r)
			d.timeline(r, false)
			s.stats.cancelledReqs++
			s.stats.lastDone = max(s.stats.lastDone, s.now)
		}
	}
	res := s.result(events, false)
	if opt.DisabledSteps != nil {
		*opt.DisabledSteps = d.steps
	}
	return res, nil
}

// worker is the cluster index of aggregated worker w (a decode worker).
func (d *disabledRun) worker(w int) int { return d.s.cfg.Prefill.Workers + w }

func (d *disabledRun) step(r *dreq, kind string) {
	if d.trace {
		d.steps = append(d.steps, Step{TUS: d.s.now, Request: r.Index, Worker: d.worker(r.w), Kind: kind})
	}
}

// set changes an aggregated worker's counters and records the change.
func (d *disabledRun) set(w int, f func(*model.Worker)) {
	ag := &d.ws[w]
	k := ag.k
	f(&k)
	k.Free = d.s.cfg.Decode.CapacityBlocks - k.Active
	cw := d.worker(w)
	d.s.stats.change(d.s, cw, &d.s.workers[cw], &k)
	d.s.workers[cw] = k
	ag.k = k
}

// admit admits the requests waiting on a worker, oldest first, while the
// oldest fits.
func (d *disabledRun) admit(w int) {
	ag := &d.ws[w]
	for len(ag.wait) > 0 {
		r := ag.wait[0]
		if r.blocks > ag.free || ag.slots >= d.s.cfg.Decode.Slots {
			return
		}
		ag.wait = ag.wait[1:]
		ag.free -= r.blocks
		ag.slots++
		r.admitted = true
		r.admitAt = d.s.now
		d.set(w, func(k *model.Worker) { k.Active += r.blocks; k.SlotsUsed++ })
		d.step(r, StepAdmit)
		r.job = ag.jobs.Book(d.s.now, int64(math.Round(float64(r.PromptTokens)*1e6/d.s.cfg.Prefill.TokensPerSec)), r)
		heap.Push(&d.q, devent{at: r.job.End, prio: dPrefill, r: r, ver: r.prefillVer})
	}
}

// unbook takes a request's prefill off its worker's compute queue, now:
// its prefill ended, or the request was cancelled before it did. A
// cancelled prefill gives the worker back at once: the prefills queued
// behind it start as soon as the worker is free.
func (d *disabledRun) unbook(r *dreq) {
	if r.job == nil {
		return
	}
	j := r.job
	r.job = nil
	d.ws[r.w].jobs.Unbook(j, d.s.now, func(k *cluster.ComputeJob[*dreq]) {
		k.Of.prefillVer++
		heap.Push(&d.q, devent{at: k.End, prio: dPrefill, r: k.Of, ver: k.Of.prefillVer})
	})
}

// end frees what a request holds, finished or cancelled, and admits what
// waits.
func (d *disabledRun) end(r *dreq) {
	r.done = true
	ag := &d.ws[r.w]
	if r.admitted {
		d.unbook(r)
		ag.free += r.blocks
		ag.slots--
		d.set(r.w, func(k *model.Worker) { k.Active -= r.blocks; k.SlotsUsed--; k.InFlight-- })
	} else {
		for i, q := range ag.wait {
			if q == r {
				ag.wait = append(ag.wait[:i], ag.wait[i+1:]...)
				break
			}
		}
		d.set(r.w, func(k *model.Worker) { k.InFlight-- })
	}
	d.admit(r.w)
}

// timeline writes a finished or cancelled request's timeline: queued
// from reaching its worker until its prefill starts (for blocks and a
// slot, then behind the prefills admitted before it), computing, then
// decoding, all on the one worker.
func (d *disabledRun) timeline(r *dreq, ok bool) {
	s := d.s
	if s.tl == nil {
		return
	}
	var ph []Phase
	add := func(name string, from, to int64) {
		if from >= 0 && to > from {
			ph = append(ph, Phase{Name: name, StartMS: ms(from), EndMS: ms(to)})
		}
	}
	end := s.now
	start := end
	if r.startAt >= 0 && r.startAt < end {
		start = r.startAt
	}
	add(PhaseNames[1], r.arriveAt, start)
	prefillEnd := end
	if r.prefillAt >= 0 {
		prefillEnd = r.prefillAt
	}
	if r.startAt >= 0 {
		add(PhaseNames[phaseComputing], start, prefillEnd)
	}
	if r.prefillAt >= 0 {
		add(PhaseNames[6], r.prefillAt, end)
	}
	outcome := model.OutcomeFailed.String()
	if ok {
		outcome = model.OutcomeOK.String()
	}
	w := d.worker(r.w)
	s.tl.writeHandoff(HandoffTimeline{Request: r.Index, ID: r.ID, Attempt: s.tl.attempt(r.Index, 0), Prefill: w, Decode: w,
		ArrivalMS: ms(r.ArrivalUS), Source: outcome, Destination: outcome, Phases: ph, Transitions: []Transition{}}, 0)
}
