package live

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/model"
)

// TestCoord_EndWhileHeldReleasesWorkers: a router's move (the client's
// cancel) holds both workers of an attempt, and both sides' outcomes,
// sent before the workers read the hold, arrive before either answer.
// The attempt ends there, and its workers must be told to go on: their
// answers would find no attempt left to release them, and a worker kept
// holding an attempt never lets its blocks go (the run's leak check
// failed that way).
func TestCoord_EndWhileHeldReleasesWorkers(t *testing.T) {
	c, src, dst, wc := offlineCoord(t, cluster.DefaultConfig())
	a := &catt{name: "r0", Window: cluster.Window{Cfg: wc}, p: src, d: dst, pGen: 1, dGen: 1, arrive: time.Now()}
	a.st = c.chk.Initial()
	a.st.W = model.NewWorld(a.Cfg)
	c.atts[a.name] = a

	c.act(a, cCancel)
	if !a.holding || !a.wait[model.SourceSide] || !a.wait[model.DestinationSide] {
		t.Fatalf("the cancel did not wait on both held workers: holding %v, waiting %v", a.holding, a.wait)
	}
	// Both outcomes cross the holds on the wire.
	x := &a.st.W.H[0]
	x.Outcome[model.SourceSide] = model.OutcomeOK
	x.Outcome[model.DestinationSide] = model.OutcomeOK
	c.maybeFinish(a)
	if !a.done || c.atts[a.name] != nil {
		t.Fatal("the attempt did not end with both outcomes in")
	}
	for _, w := range []int{src, dst} {
		var held, released bool
		for _, f := range c.ws[w].pending {
			held = held || f.Kind == KHold && f.Attempt == a.name
			released = released || f.Kind == KRelease && f.Attempt == a.name
		}
		if !held || !released {
			t.Errorf("worker %d: held %v, released %v; a held worker of an ended attempt must be released", w, held, released)
		}
	}
	// The answers come late, for an attempt that is gone: nothing moves.
	for _, w := range []int{src, dst} {
		c.inbound(inbound{c: &wconn{w: w}, f: Frame{Kind: KHeld, Attempt: a.name}})
	}
	if a.st.W.H[0].Cancelled || c.rep.Cancelled != 0 {
		t.Errorf("a cancel was taken after the attempt ended (counted %d)", c.rep.Cancelled)
	}
}

// TestCoord_LateCancelCountsOnce: the client's cancel is taken by the
// router, but both sides had succeeded already (their outcomes were on
// the wire): the request counts once, as succeeded, not also as
// cancelled (a run counted 985 succeeded and 17 cancelled of 1000
// that way). A cancel that stops a side counts it cancelled, once.
func TestCoord_LateCancelCountsOnce(t *testing.T) {
	cfg := cluster.DefaultConfig()
	st, err := newStepper(nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &coord{cfg: cfg, stepper: st, epoch: time.Now(), errs: io.Discard, atts: map[string]*catt{}}
	c.wk = make([]model.Worker, cfg.NumWorkers())
	c.sums = make([]model.Holdings, cfg.NumWorkers())
	for w := range cfg.NumWorkers() {
		c.ws = append(c.ws, &cworker{w: w, gen: 1, starting: true})
	}
	wc := cfg.AttemptWorld(512, 0)
	if err := wc.Prepare(); err != nil {
		t.Fatal(err)
	}
	for i, outcome := range []model.Outcome{model.OutcomeOK, model.OutcomeFailed} {
		a := &catt{name: fmt.Sprintf("r%d", i), Window: cluster.Window{Cfg: wc}, p: 0, d: cfg.Prefill.Workers, pGen: 1, dGen: 1, arrive: time.Now()}
		a.st = c.chk.Initial()
		a.st.W = model.NewWorld(a.Cfg)
		c.atts[a.name] = a
		x := &a.st.W.H[0]
		x.Cancelled = true // the router took the client's cancel
		x.Outcome[model.SourceSide] = model.OutcomeOK
		x.Outcome[model.DestinationSide] = outcome
		c.maybeFinish(a)
		if !a.done {
			t.Fatalf("%s did not end with both outcomes in", a.name)
		}
	}
	if c.rep.Succeeded != 1 || c.rep.Cancelled != 1 || c.rep.Failed != 0 || c.finished != 2 {
		t.Fatalf("succeeded %d, cancelled %d, failed %d of %d finished; want 1, 1, 0 of 2",
			c.rep.Succeeded, c.rep.Cancelled, c.rep.Failed, c.finished)
	}
}

// offlineCoord is a coordinator of cfg with no process behind it: its
// workers are starting, so they keep what they are sent (pending), and a
// test reads the frames there instead of over a connection. It gives the
// first prefill and decode workers and the world of a 512-token attempt.
func offlineCoord(t *testing.T, cfg *cluster.Config) (c *coord, src, dst int, wc *model.Config) {
	t.Helper()
	st, err := newStepper(nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c = &coord{cfg: cfg, stepper: st, epoch: time.Now(), errs: io.Discard, atts: map[string]*catt{}}
	c.wk = make([]model.Worker, cfg.NumWorkers())
	c.sums = make([]model.Holdings, cfg.NumWorkers())
	for w := range cfg.NumWorkers() {
		c.ws = append(c.ws, &cworker{w: w, gen: 1, starting: true})
	}
	wc = cfg.AttemptWorld(512, 0)
	if err := wc.Prepare(); err != nil {
		t.Fatal(err)
	}
	return c, 0, cfg.Prefill.Workers, wc
}
