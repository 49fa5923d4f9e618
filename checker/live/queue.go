package live

import (
	"container/heap"
	"time"
)

// timed is an event of a process's queue: when it is due, and the order
// it was queued in, which breaks ties.
type timed interface{ due() (time.Time, uint64) }

// queue is a process's events in the order they are due.
type queue[E timed] struct {
	h   events[E]
	seq uint64
}

type events[E timed] []E

func (q events[E]) Len() int { return len(q) }
func (q events[E]) Less(i, j int) bool {
	a, sa := q[i].due()
	b, sb := q[j].due()
	if !a.Equal(b) {
		return a.Before(b)
	}
	return sa < sb
}
func (q events[E]) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *events[E]) Push(x any)   { *q = append(*q, x.(E)) }
func (q *events[E]) Pop() any {
	old := *q
	e := old[len(old)-1]
	var zero E
	old[len(old)-1] = zero
	*q = old[:len(old)-1]
	return e
}

// next numbers an event about to be pushed.
func (q *queue[E]) next() uint64 {
	q.seq++
	return q.seq
}

func (q *queue[E]) push(e E) { heap.Push(&q.h, e) }

func (q *queue[E]) Len() int { return len(q.h) }

// peek is the next event due; Len must be above 0.
func (q *queue[E]) peek() E { return q.h[0] }

func (q *queue[E]) pop() E { return heap.Pop(&q.h).(E) }
