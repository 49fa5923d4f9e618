package live

import (
	"bufio"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/model"
)

// TestLive_NoFalseStall: the coordinator asks whether its attempts are
// stuck after every silence of a millisecond, in runs of the built-in
// tables, whose attempts always end: every answer must name what is
// still to happen, so the runs end clean, with no stall of either kind.
// A worker that answered "nothing" while a move, a deadline or a
// transfer of its was still to come would end a run on a false
// Quiescence here.
func TestLive_NoFalseStall(t *testing.T) {
	for _, policy := range []string{"source-first", "destination-first"} {
		t.Run(policy, func(t *testing.T) {
			cfg := policyConfig(t, policy)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			// Every request arrives at once: the arrivals are soon all out,
			// and the rest of the run is the attempts in flight, asked about.
			// Each decodes 400 tokens (80 ms on the wall clock), silent
			// but for the worker's own scheduled steps.
			rs := spaced(20, 0)
			for i := range rs {
				rs[i].OutputTokens = 400
			}
			rep, err := Run(ctx, Options{Config: cfg, Workload: &slice{rs: rs}, Rewind: again(rs), Scale: 0.01, Dir: dirFor(t), Spawn: &GoSpawner{},
				StallAsk: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d questions", rep.StallQuestions)
			if rep.Stall != nil || !rep.Clean || rep.Succeeded != 20 || rep.StallQuestions == 0 {
				rep.Write(os.Stderr)
				t.Fatalf("stall %+v after %d questions; want 20 clean successes, questions asked, and no stall", rep.Stall, rep.StallQuestions)
			}
			judge(t, rep)
		})
	}
}

// quietCoord is a coordinator of two connected workers with one
// unfinished attempt (source on worker 0, destination on worker 1), and
// nothing queued: what the stall question is asked of.
func quietCoord(t *testing.T) (*coord, *catt) {
	t.Helper()
	cfg := cluster.DefaultConfig()
	c := &coord{cfg: cfg, opt: Options{Scale: 0.01}, errs: io.Discard, epoch: time.Now(), atts: map[string]*catt{},
		log: obslog.AppendWriter(io.Discard, &obslog.Header{})}
	for w := 0; w < 2; w++ {
		c.ws = append(c.ws, &cworker{w: w, conn: &wconn{out: bufio.NewWriter(io.Discard), w: w}})
	}
	a := &catt{name: "r0", p: 0, d: 1}
	c.order, c.atts[a.name] = []*catt{a}, a
	c.arrived = 1
	return c, a
}

// TestStall_Verdicts: the coordinator asks only after a silence of its
// bound, judges only when every worker answered, ends on the invariant
// the simulator names (the first obligation to fall due, Quiescence
// when none is owed), and ends inconclusive, never on a violation, when
// the workers name something still to happen for three bounds.
func TestStall_Verdicts(t *testing.T) {
	idle := func(name string, last int64) AttemptWait {
		return AttemptWait{Attempt: name, State: "Aborting", Holds: "blocks pinned", LastUS: last}
	}
	t.Run("asks after the bound, judges on every answer", func(t *testing.T) {
		c, _ := quietCoord(t)
		c.qt.active = time.Now()
		c.checkStall()
		if c.rep.StallQuestions != 0 {
			t.Fatalf("asked after no silence")
		}
		c.qt.active = time.Now().Add(-c.stallBound())
		c.checkStall()
		if c.rep.StallQuestions != 1 {
			t.Fatalf("not asked after a silence of the bound")
		}
		c.quietReply(0, &Frame{FromUS: c.qt.round, Ledger: &Ledger{Waits: []AttemptWait{idle("r0", 100)}}})
		c.checkStall()
		if c.rep.Stall != nil {
			t.Fatalf("judged before every worker answered: %+v", c.rep.Stall)
		}
		c.quietReply(1, &Frame{FromUS: c.qt.round, Ledger: &Ledger{Waits: []AttemptWait{idle("r0", 200)}}})
		c.checkStall()
		if s := c.rep.Stall; s == nil || s.Invariant != model.NameQuiescence || s.Attempt != "r0" || len(s.Sides) != 2 || !c.draining {
			t.Fatalf("want Quiescence on r0 and the run draining, got %+v", s)
		}
	})
	t.Run("a frame voids the question", func(t *testing.T) {
		c, _ := quietCoord(t)
		c.qt.active = time.Now().Add(-c.stallBound())
		c.checkStall()
		round := c.qt.round
		c.activity()
		c.quietReply(0, &Frame{FromUS: round, Ledger: &Ledger{Waits: []AttemptWait{idle("r0", 1)}}})
		c.quietReply(1, &Frame{FromUS: round, Ledger: &Ledger{}})
		c.checkStall()
		if c.rep.Stall != nil {
			t.Fatalf("judged on answers to a question a frame made void: %+v", c.rep.Stall)
		}
	})
	t.Run("owed and given up", func(t *testing.T) {
		c, a := quietCoord(t)
		// The destination's outcome at 1 ms; the source, holding, gave
		// up at 0.5 ms: its give-up falls due first.
		a.outcome[model.DestinationSide], a.outAt[model.DestinationSide] = model.OutcomeOK, 1000
		src := idle("r0", 2000)
		src.Held, src.HeldAny, src.GaveUp, src.GaveUpUS = true, true, "Cancelled", 500
		c.qt.replies = map[int][]AttemptWait{0: {src}, 1: nil}
		if inv, _ := c.stuckVerdict(a); inv != cluster.NameBoundedGiveUp {
			t.Errorf("given up first: %s, want %s", inv, cluster.NameBoundedGiveUp)
		}
		src.GaveUp = ""
		c.qt.replies[0] = []AttemptWait{src}
		if inv, _ := c.stuckVerdict(a); inv != cluster.NameBoundedReclaim {
			t.Errorf("owed: %s, want %s (the attempt is not quiescent while it owes)", inv, cluster.NameBoundedReclaim)
		}
		// Given up but quiescent before the give-up falls due.
		a.outcome[model.DestinationSide] = model.OutcomeNone
		src.GaveUp, src.GaveUpUS, src.LastUS = "Cancelled", 500, 501
		c.qt.replies[0] = []AttemptWait{src}
		if inv, _ := c.stuckVerdict(a); inv != model.NameQuiescence {
			t.Errorf("quiescent first: %s, want %s", inv, model.NameQuiescence)
		}
	})
	t.Run("busy for three bounds is inconclusive", func(t *testing.T) {
		c, _ := quietCoord(t)
		busy := idle("r0", 1)
		busy.Busy = "the lease deadline armed"
		c.qt.active = time.Now().Add(-c.stallBound())
		c.checkStall()
		c.quietReply(0, &Frame{FromUS: c.qt.round, Ledger: &Ledger{Waits: []AttemptWait{busy}}})
		c.quietReply(1, &Frame{FromUS: c.qt.round, Ledger: &Ledger{}})
		c.checkStall()
		if c.rep.Stall != nil || c.qt.busy == "" {
			t.Fatalf("a busy answer: stall %+v, busy %q", c.rep.Stall, c.qt.busy)
		}
		c.qt.active = time.Now().Add(-stallRounds * c.stallBound())
		c.checkStall()
		if s := c.rep.Stall; s == nil || !s.Inconclusive || s.Invariant != "" || !strings.Contains(s.Why, "lease deadline armed") {
			t.Fatalf("want an inconclusive end naming what the worker said, got %+v", s)
		}
	})
}
