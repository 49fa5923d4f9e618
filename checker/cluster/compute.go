package cluster

import "slices"

// ComputeQueue is one prefill worker's prefills: the worker computes one
// at a time, first booked first, each from when the one before it ends
// until its own compute ends or stops. A prefill that stops before its
// compute ends (a cancel, an abort) gives the worker back at once, and
// the prefills queued behind it start as soon as the worker is free.
// Times are the driver's clock (microseconds of the simulator's virtual
// clock, nanoseconds of a live worker's wall clock); Of is the driver's
// handle on the job (its pending compute event).
type ComputeQueue[T any] struct {
	jobs []*ComputeJob[T]
}

// ComputeJob is a booked prefill: when it starts and ends computing.
type ComputeJob[T any] struct {
	Start, End int64
	Of         T
}

// Book puts a prefill of duration d, booked at now, at the end of the
// queue: it starts when the last booked one ends, or now.
func (q *ComputeQueue[T]) Book(now, d int64, of T) *ComputeJob[T] {
	start := now
	if n := len(q.jobs); n > 0 {
		start = max(start, q.jobs[n-1].End)
	}
	j := &ComputeJob[T]{Start: start, End: start + d, Of: of}
	q.jobs = append(q.jobs, j)
	return j
}

// Unbook takes a job off the queue at now: its compute ended, or stopped.
// A stopped one frees the worker at once: the jobs behind it that had
// not started yet start earlier, and moved is called for each of them, in
// queue order, after its Start and End moved.
func (q *ComputeQueue[T]) Unbook(j *ComputeJob[T], now int64, moved func(*ComputeJob[T])) {
	i := slices.Index(q.jobs, j)
	if i < 0 {
		return
	}
	q.jobs = slices.Delete(q.jobs, i, i+1)
	if j.End <= now {
		// It ended: the next starts now, as booked.
		return
	}
	free := now
	if i > 0 {
		free = max(free, q.jobs[i-1].End)
	}
	for _, k := range q.jobs[i:] {
		if k.Start <= free {
			// It starts as booked, and so do those behind it.
			break
		}
		d := k.End - k.Start
		k.Start, k.End = free, free+d
		moved(k)
		free = k.End
	}
}

// Len is how many prefills the queue holds.
func (q *ComputeQueue[T]) Len() int { return len(q.jobs) }
