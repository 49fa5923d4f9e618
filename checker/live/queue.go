package live

import "time"

// timed is an event of a process's queue: when it is due, and the order
// it was queued in, which breaks ties.
type timed interface{ due() (time.Time, uint64) }

// queue is a process's events in the order they are due: a binary heap
// keyed by the due time (nanoseconds after the queue's first event, on
// the monotonic clock) and the order events were queued in. The key is
// kept beside each event, so that ordering compares two integers and
// calls nothing: a worker's queue holds thousands of events, and the
// heap's comparisons were a tenth of its time.
type queue[E timed] struct {
	h    []item[E]
	seq  uint64
	base time.Time
}

type item[E timed] struct {
	at  int64
	seq uint64
	e   E
}

func (a *item[E]) before(b *item[E]) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

// next numbers an event about to be pushed.
func (q *queue[E]) next() uint64 {
	q.seq++
	return q.seq
}

func (q *queue[E]) push(e E) {
	at, seq := e.due()
	if q.base.IsZero() {
		q.base = at
	}
	q.h = append(q.h, item[E]{at: int64(at.Sub(q.base)), seq: seq, e: e})
	// Up.
	i := len(q.h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q.h[i].before(&q.h[p]) {
			break
		}
		q.h[i], q.h[p] = q.h[p], q.h[i]
		i = p
	}
}

func (q *queue[E]) Len() int { return len(q.h) }

// peek is the next event due; Len must be above 0.
func (q *queue[E]) peek() E { return q.h[0].e }

func (q *queue[E]) pop() E {
	e := q.h[0].e
	n := len(q.h) - 1
	q.h[0] = q.h[n]
	q.h[n] = item[E]{}
	q.h = q.h[:n]
	// Down.
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && q.h[r].before(&q.h[l]) {
			m = r
		}
		if !q.h[m].before(&q.h[i]) {
			break
		}
		q.h[i], q.h[m] = q.h[m], q.h[i]
		i = m
	}
	return e
}
