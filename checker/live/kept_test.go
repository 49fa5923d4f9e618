package live

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/internal/variant"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// keptSource is a destination-first source worker (tables proto; nil:
// the generated machines) with attempt r0 routed to it and aborted by a
// planned abort before the destination's reservation came: its side
// finished holding nothing, so it retired. Its log goes to the buffer.
func keptSource(t *testing.T, proto *system.Protocol) (*worker, *attempt, *bytes.Buffer) {
	t.Helper()
	cfg := policyConfig(t, "destination-first")
	var log bytes.Buffer
	// A configured second lasts a microsecond: every event queued is due
	// at once, and drive takes them as they come due.
	w, err := newWorker(WorkerOptions{Side: model.SourceSide, Worker: 0, Gen: 1, Config: cfg, Protocol: proto, Scale: 1e-6,
		Epoch: time.Now(), Errors: io.Discard, Log: &log, Header: cfg.LogHeader(obslog.All)})
	if err != nil {
		t.Fatal(err)
	}
	w.frame(&Frame{Kind: KRoute, Attempt: "r0", Stage: "prefill", Request: &RequestInfo{PromptTokens: 512, OutputTokens: 4}, PeerGen: 1})
	a := w.atts["r0"]
	if a == nil {
		t.Fatal("the route made no attempt")
	}
	// The request arrives (a configured latency): the source waits for
	// the destination's reservation, and the abort strikes there.
	until(t, w, "the request's arrival", func() bool { return len(a.sched) == 0 })
	w.frame(&Frame{Kind: KMark, Attempt: "r0", Fault: "abort"})
	if !a.kept || a.st.W.H[0].Outcome[model.SourceSide] == model.OutcomeNone {
		t.Fatalf("the aborted source did not retire: state %s; %s",
			w.chk.Protocol().StateName(system.RoleOf(w.mine), a.st.Role(system.RoleOf(w.mine), 0)), ownHeld(&a.st.W.H[0], w.mine))
	}
	if w.open() != 0 {
		t.Fatalf("a retired attempt counts as open: %d", w.open())
	}
	return w, a, &log
}

// until takes the worker's events as they come due until done says so,
// within a generous bound of the wall clock: the test waits for what
// must happen, not for a time.
func until(t *testing.T, w *worker, what string, done func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !done(); {
		if time.Now().After(end) {
			t.Fatalf("%s did not come", what)
		}
		time.Sleep(50 * time.Microsecond)
		w.runDue()
	}
}

// drive takes the worker's events until the attempt took every fact it
// was sent (a configured latency each).
func drive(t *testing.T, w *worker, a *attempt) {
	t.Helper()
	until(t, w, "the fact sent to the attempt", func() bool { return a.pending == 0 })
}

// kinds lists the kinds of the facts a worker logged (its log has no
// header: the run's is written before the workers start).
func kinds(t *testing.T, w *worker, log *bytes.Buffer) []string {
	t.Helper()
	if err := w.log.Flush(); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		_, rest, _ := strings.Cut(line, `"kind":"`)
		k, _, _ := strings.Cut(rest, `"`)
		out = append(out, k)
	}
	return out
}

// TestWorker_KeptMachineTakesALateFact: a fact the peer sent before the
// attempt ended reaches a side that retired. The worker kept its
// machine, so the tables' row for that fact in the terminal state runs,
// as in the model: prefill-after-early-outcome's source starts the
// prefill its abort gave up (what breaks ExactlyOnceRelease), logs it,
// and holds the attempt open again; the generated machines' row changes
// nothing, and the attempt stays retired, nothing held.
func TestWorker_KeptMachineTakesALateFact(t *testing.T) {
	late := Frame{Kind: KFact, Attempt: "r0", To: "source", Msg: model.MsgDestinationReserved.String(), Gen: 1, PeerGen: 1}

	w, a, log := keptSource(t, variant.Protocol(t, "../../testdata/variants/prefill-after-early-outcome.json"))
	w.frame(&late)
	drive(t, w, a)
	if got := strings.Join(kinds(t, w, log), " "); got != "request_accepted aborted outcome_reported prefill_dispatched" {
		t.Errorf("the variant's source logged %q; want its prefill dispatched after its outcome", got)
	}
	if a.kept || w.open() != 1 || w.atts["r0"] != a {
		t.Errorf("the variant's source, computing again, is not open: kept %v, %d open", a.kept, w.open())
	}

	w, a, log = keptSource(t, nil)
	w.frame(&late)
	drive(t, w, a)
	if got := strings.Join(kinds(t, w, log), " "); got != "request_accepted aborted outcome_reported" {
		t.Errorf("the generated source logged %q after its outcome", got)
	}
	if !a.kept || w.open() != 0 || w.refused != 0 {
		t.Errorf("the late fact changed the retired source: kept %v, %d open, %d refused", a.kept, w.open(), w.refused)
	}
	l := w.ledgerNow()
	if h := l.Held(); h != "" || l.Open != 0 || len(l.OpenAttempts) != 0 {
		t.Errorf("the ledger of a worker with only a kept attempt holds %q, %d open %v", h, l.Open, l.OpenAttempts)
	}
}

// TestWorker_EndedForgetsAfterFactsRelayedBefore: the coordinator's
// ended comes behind every fact it relayed for the attempt. A fact still
// on its way to the kept machine (its configured latency) is taken
// first; the machine is forgotten then, and a frame after that finds no
// attempt.
func TestWorker_EndedForgetsAfterFactsRelayedBefore(t *testing.T) {
	w, a, _ := keptSource(t, nil)
	w.frame(&Frame{Kind: KFact, Attempt: "r0", To: "source", Msg: model.MsgDestinationReserved.String(), Gen: 1, PeerGen: 1})
	w.frame(&Frame{Kind: KEnded, Attempt: "r0"})
	if w.atts["r0"] != a || a.pending != 1 {
		t.Fatalf("ended forgot an attempt with a fact on its way to it")
	}
	drive(t, w, a)
	if w.atts["r0"] != nil || w.nkept != 0 || w.open() != 0 {
		t.Fatalf("the attempt was not forgotten once it took the fact: %d attempts, %d kept", len(w.atts), w.nkept)
	}
	w.frame(&Frame{Kind: KFact, Attempt: "r0", To: "source", Msg: model.MsgDestinationReserved.String(), Gen: 1, PeerGen: 1})
	if w.refusedWhy["unknown attempt"] != 1 {
		t.Errorf("a fact after ended was not refused as one of an unknown attempt: %v", w.refusedWhy)
	}
	// An ended for an attempt the worker never had, or forgot, is no
	// refusal: the coordinator sends it to both sides whatever they did.
	w.frame(&Frame{Kind: KEnded, Attempt: "r9"})
	if w.refused != 1 {
		t.Errorf("%d frames refused, want the one fact", w.refused)
	}
}

// TestCoord_EndedToWorkersOfTheAttempt: once the frontend has both
// outcomes it relays nothing more for the attempt, and tells each of its
// workers still of the generation it was routed to (ended), behind the
// facts it relayed; a side forgotten by a restart is told nothing.
func TestCoord_EndedToWorkersOfTheAttempt(t *testing.T) {
	c, src, dst, wc := offlineCoord(t, policyConfig(t, "source-first"))
	ended := func(w int, name string) bool {
		for _, f := range c.ws[w].pending {
			if f.Kind == KEnded && f.Attempt == name {
				return true
			}
		}
		return false
	}
	for i, dstOut := range []model.Outcome{model.OutcomeOK, model.OutcomeForgotten} {
		a := &catt{name: fmt.Sprintf("r%d", i), Window: cluster.Window{Cfg: wc}, p: src, d: dst, pGen: 1, dGen: 1, arrive: time.Now()}
		a.st = c.chk.Initial()
		a.st.W = model.NewWorld(a.Cfg)
		c.atts[a.name] = a
		x := &a.st.W.H[0]
		x.Outcome[model.SourceSide] = model.OutcomeOK
		x.Outcome[model.DestinationSide] = dstOut
		a.outcome = x.Outcome
		c.maybeFinish(a)
		if !ended(src, a.name) {
			t.Errorf("%s: the source was not told the attempt ended", a.name)
		}
		if got := ended(dst, a.name); got != (dstOut == model.OutcomeOK) {
			t.Errorf("%s: destination of outcome %s told the attempt ended: %v", a.name, dstOut, got)
		}
	}
}
