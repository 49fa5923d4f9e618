package live

import (
	"fmt"
	"math"
	"time"
)

// Lateness counts how late a process took what was due: an event of its
// queue (a timer, an owned move's end, a delivery's configured latency)
// after the time it was due, and a frame after the time it was sent. A
// live run's deadlines are the configured ones times the time scale; on a
// loaded machine the processes fall behind the wall clock, and a
// deadline then fires on the machine's delay rather than the workload's
// (the run describes the machine). Buckets are quarter powers of two of
// microseconds, so that ledgers add up and the percentiles stay within a
// fifth of the truth.
type Lateness struct {
	Events LateCount `json:"events"`
	Frames LateCount `json:"frames"`
}

// LateCount is one histogram of lateness.
type LateCount struct {
	N     int64   `json:"n"`
	MaxUS int64   `json:"max_us"`
	B     []int64 `json:"buckets,omitempty"`
}

const lateBuckets = 4 * 40

func lateBucket(us int64) int {
	if us <= 0 {
		return 0
	}
	return min(int(math.Log2(float64(us)+1)*4), lateBuckets-1)
}

// add counts one lateness d.
func (c *LateCount) add(d time.Duration) {
	us := max(d.Microseconds(), 0)
	if c.B == nil {
		c.B = make([]int64, lateBuckets)
	}
	c.N++
	c.MaxUS = max(c.MaxUS, us)
	c.B[lateBucket(us)]++
}

// merge adds another histogram.
func (c *LateCount) merge(o *LateCount) {
	if o.N == 0 {
		return
	}
	if c.B == nil {
		c.B = make([]int64, lateBuckets)
	}
	c.N += o.N
	c.MaxUS = max(c.MaxUS, o.MaxUS)
	for i, v := range o.B {
		if i < lateBuckets {
			c.B[i] += v
		}
	}
}

// QuantileUS is the lateness q of them were within, at most the maximum
// (the upper edge of its bucket).
func (c *LateCount) QuantileUS(q float64) int64 {
	if c.N == 0 {
		return 0
	}
	want := int64(math.Ceil(q * float64(c.N)))
	var seen int64
	for i, v := range c.B {
		seen += v
		if seen >= want {
			return min(int64(math.Ceil(math.Exp2(float64(i+1)/4)-1)), c.MaxUS)
		}
	}
	return c.MaxUS
}

func (c *LateCount) String() string {
	return fmt.Sprintf("p99 %.2f ms, max %.2f ms over %d", float64(c.QuantileUS(0.99))/1000, float64(c.MaxUS)/1000, c.N)
}

func (l *Lateness) merge(o *Lateness) {
	l.Events.merge(&o.Events)
	l.Frames.merge(&o.Frames)
}
