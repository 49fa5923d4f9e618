package system

import (
	"testing"

	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// porSample is the states of a breadth-first search of a run, up to n.
func porSample(c *System, n int) []State {
	s0 := c.Initial()
	var k Key
	c.canonical(&s0, &k)
	seen := map[Key]bool{k: true}
	out := []State{s0}
	for i := 0; i < len(out) && len(out) < n; i++ {
		for _, m := range c.MovesInto(&out[i], nil) {
			t := out[i]
			if _, _, err := c.Step(&t, m, nil); err != nil {
				continue
			}
			c.canonical(&t, &k)
			if !seen[k] {
				seen[k] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// porMeasure is the progress measure of por.go's C3 for one handoff: the
// ranks of its two records, and what is left for it to consume.
func (c *System) porMeasure(s *State, h int) (rank, left int) {
	x := &s.W.H[h]
	rank = int(c.ranks[spec.Source][s.Src[h]]) + int(c.ranks[spec.Destination][s.Dst[h]])
	b := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
		left += int(x.Ch[sd].N) + b(x.CancelPending[sd]) + b(x.PeerGone[sd]) + x.Cmds[sd].Len()
	}
	left += b(x.Xfer == model.XferRunning) + b(x.Pending) + b(x.Dst == model.DstActive && !x.Running)
	switch x.Compute {
	case model.ComputeQueued:
		left += 2
	case model.ComputeRunning:
		left++
	}
	switch {
	case x.Prefill < 0:
		left += 2
	case !x.RequestDelivered:
		left++
	}
	left += b(x.Decode < 0)
	return rank, left
}

// The footprints por.go relies on hold on real states of every run of
// the two-handoff configuration and the commands configuration: a move
// the reduction may take writes nothing outside its handoff's record
// (and, when it says so, its workers), spends no budget, and raises the
// progress measure; and every action listed as local writes only its
// handoff's record and reads nothing else.
func TestPOR_FootprintsHold(t *testing.T) {
	checked := 0
	for _, file := range []string{"two-handoffs.json", "headroom-binds.json"} {
		cfg := testdataConfig(t, file)
		for _, run := range cfg.Runs {
			c := checkerFor(t, Generated(), cfg, run.Name)
			states := porSample(c, 4000)
			for i := range states {
				s := &states[i]
				var ms MoveSet
				c.Enabled(s, &ms)
				for j := 0; j < ms.N; j++ {
					m := ms.M[j]
					if m.H < 0 {
						continue
					}
					ok, shared := c.reducible(s, m)
					if !ok {
						continue
					}
					checked++
					h := int(m.H)
					after := *s
					tx := model.Tx{W: &after.W}
					c.ApplyTx(&after, &tx, m, nil, ms.Stuck)
					if after.B != s.B {
						t.Fatalf("%s %s: %s spent budget", file, run.Name, m)
					}
					x := &s.W.H[h]
					for w := 0; w < c.nW; w++ {
						mine := shared && (int(x.Prefill) == w || int(x.Decode) == w ||
							(m.Kind == MvRoutePrefill || m.Kind == MvRouteDecode) && int(m.Arg) == w)
						if !mine && after.W.W[w] != s.W.W[w] {
							t.Fatalf("%s %s: %s changed worker %d", file, run.Name, m, w)
						}
					}
					for h2 := 0; h2 < c.nH; h2++ {
						if h2 == h {
							continue
						}
						want := s.W.H[h2]
						got := after.W.H[h2]
						// An allocation may evict another handoff's kept blocks.
						got.SrcKept, got.DstKept, got.SrcIndexed, got.Published = want.SrcKept, want.DstKept, want.SrcIndexed, want.Published
						if got != want || after.Src[h2] != s.Src[h2] || after.Dst[h2] != s.Dst[h2] {
							t.Fatalf("%s %s: %s changed handoff %d", file, run.Name, m, h2)
						}
					}
					r0, l0 := c.porMeasure(s, h)
					r1, l1 := c.porMeasure(&after, h)
					if r1 < r0 || r1 == r0 && l1 >= l0 {
						t.Fatalf("%s %s: %s does not raise the measure: rank %d->%d, left %d->%d", file, run.Name, m, r0, r1, l0, l1)
					}
				}
				porCheckActions(t, c, states, i)
			}
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d reducible moves seen", checked)
	}
}

// porCheckActions applies every local action to one sample state, for
// each handoff, and to the same handoff record set into another sample
// state: the action writes only that record, and writes it the same way.
func porCheckActions(t *testing.T, c *System, states []State, i int) {
	t.Helper()
	s := &states[i]
	other := &states[(i*7+3)%len(states)]
	for a := action(0); a < numActions; a++ {
		if !actionFootprints[a].local() {
			continue
		}
		side := model.SourceSide
		if a >= aDstAcceptRequest {
			side = model.DestinationSide
		}
		for h := 0; h < c.nH; h++ {
			after := *s
			apply(&model.Tx{W: &after.W}, side, h, a, model.CauseAbort)
			if after.W.W != s.W.W {
				t.Fatalf("%s changed a worker", a)
			}
			for h2 := 0; h2 < c.nH; h2++ {
				if h2 != h && after.W.H[h2] != s.W.H[h2] {
					t.Fatalf("%s of handoff %d changed handoff %d", a, h, h2)
				}
			}
			elsewhere := *other
			elsewhere.W.H[h] = s.W.H[h]
			apply(&model.Tx{W: &elsewhere.W}, side, h, a, model.CauseAbort)
			if elsewhere.W.H[h] != after.W.H[h] {
				t.Fatalf("%s of handoff %d read more than the handoff's record", a, h)
			}
		}
	}
}
