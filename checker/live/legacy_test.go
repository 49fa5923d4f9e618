package live

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

func legacyConfig(t *testing.T) *cluster.Config {
	t.Helper()
	cfg := cluster.DefaultConfig()
	if err := cfg.SetPolicy(cluster.Disabled); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestLegacySmoke: the legacy path over real processes: every request
// succeeds, nothing is held on a worker or a router, nothing is found.
func TestLegacySmoke(t *testing.T) {
	cfg := legacyConfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rs := spaced(20, 200_000)
	rep, err := Run(ctx, Options{Config: cfg, Workload: &slice{rs: rs}, Rewind: again(rs), Scale: 0.01, Dir: dirFor(t), Spawn: &GoSpawner{}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean || rep.Succeeded != 20 || len(rep.Findings) > 0 || rep.Policy != cluster.Disabled {
		rep.Write(os.Stderr)
		t.Fatalf("want 20 clean successes of policy disabled")
	}
}

// legacyWorker is a worker of a legacy run stepped by hand: frames go in
// through frame, its own events are taken one at a time in their order
// (their wall-clock times do not matter here), and what it sends is read
// back.
type legacyWorker struct {
	t   *testing.T
	w   *worker
	out bytes.Buffer
}

func newLegacyWorker(t *testing.T, cfg *cluster.Config, w int) *legacyWorker {
	t.Helper()
	side := model.SourceSide
	if w >= cfg.Prefill.Workers {
		side = model.DestinationSide
	}
	wk, err := newWorker(WorkerOptions{Side: side, Worker: w, Config: cfg, Scale: 0.001, Epoch: time.Now(), Errors: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	lw := &legacyWorker{t: t, w: wk}
	wk.out = bufio.NewWriter(&lw.out)
	return lw
}

// next takes the worker's next event, which must be the legacy event ev.
func (lw *legacyWorker) next(ev string) {
	lw.t.Helper()
	if lw.w.q.Len() == 0 {
		lw.t.Fatalf("no event pending; want %s", ev)
	}
	e := lw.w.q.pop()
	if e.kind != wLegacy || e.ev != ev {
		lw.t.Fatalf("the next event is %s (kind %d); want %s", e.ev, e.kind, ev)
	}
	lw.w.legacyEvent(e)
}

// sent is what the worker sent since the last call, as "kind msg/side
// outcome" lines.
func (lw *legacyWorker) sent() []string {
	lw.t.Helper()
	lw.w.out.Flush()
	r := bufio.NewReader(&lw.out)
	var out []string
	for {
		f, _, err := ReadFrame(r, nil)
		if err == io.EOF {
			return out
		}
		if err != nil {
			lw.t.Fatal(err)
		}
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s %s%s", f.Kind, f.Attempt, f.Msg, f.Side+" "+f.Outcome)))
	}
}

func (lw *legacyWorker) state(name string) string {
	if a := lw.w.latts[name]; a != nil {
		return a.st
	}
	return "(retired)"
}

// One request through a legacy prefill worker and a legacy decode
// worker, by hand (the default configuration: a 960-token prompt is 60
// blocks of 16 tokens). The prefill holds nothing until decode has
// connected, 60 active blocks while it computes, and frees them all at
// scheduler completion, before the modeled delay: never a pinned block.
// The decode worker holds no block while it waits for the room (only the
// router's booking, mirrored), and allocates its 60 at admission.
func TestLegacyWorker_OneRequestByHand(t *testing.T) {
	cfg := legacyConfig(t)
	route := func(stage string) *Frame {
		return &Frame{Kind: KRoute, Attempt: "r0", Stage: stage, Request: &RequestInfo{Index: 0, PromptTokens: 960, OutputTokens: 4}}
	}
	p := newLegacyWorker(t, cfg, 0)
	k := &p.w.k
	p.w.frame(route("prefill"))
	if p.state("r0") != "AwaitingDecode" || k.Active != 0 || k.InFlight != 1 || k.Owned != 1 || k.PrefillTokens != 960 {
		t.Fatalf("routed: state %s, active %d, in flight %d, owned %d, prefill tokens %d; want AwaitingDecode, 0, 1, 1, 960",
			p.state("r0"), k.Active, k.InFlight, k.Owned, k.PrefillTokens)
	}
	p.w.frame(&Frame{Kind: KFact, Attempt: "r0", To: "source", Msg: cluster.LegacyDecodeConnected})
	p.next(cluster.LegacyDecodeConnected)
	if p.state("r0") != "Computing" || k.Active != 60 || k.Pinned != 0 {
		t.Fatalf("connected: state %s, active %d, pinned %d; want Computing, 60, 0", p.state("r0"), k.Active, k.Pinned)
	}
	p.next(cluster.LegacyPrefillFinished)
	if p.state("r0") != "Sleeping" || k.Active != 0 || k.Pinned != 0 || k.Free != cfg.Prefill.CapacityBlocks || k.InFlight != 0 || k.Owned != 0 || k.PrefillTokens != 0 {
		t.Fatalf("completed: state %s, active %d, pinned %d, free %d, in flight %d, owned %d; want Sleeping with everything freed",
			p.state("r0"), k.Active, k.Pinned, k.Free, k.InFlight, k.Owned)
	}
	if got := p.sent(); !slices.Equal(got, []string{"outcome r0 source ok"}) {
		t.Fatalf("at completion the worker sent %q; want its outcome, ok", got)
	}
	p.next(cluster.LegacyDelayElapsed)
	if got := p.sent(); p.state("r0") != "(retired)" || !slices.Equal(got, []string{"fact r0 RoomCompleted"}) {
		t.Fatalf("after the delay: %s, sent %q; want retired, the room marked complete", p.state("r0"), got)
	}

	d := newLegacyWorker(t, cfg, cfg.Prefill.Workers)
	k = &d.w.k
	d.w.frame(route("decode"))
	if got := d.sent(); d.state("r0") != "AwaitingRoom" || k.Active != 0 || k.SlotsUsed != 0 || k.BookedBlocks != 60 || !slices.Equal(got, []string{"fact r0 DecodeConnected"}) {
		t.Fatalf("routed: state %s, active %d, slots %d, booked %d, sent %q; want AwaitingRoom, 0, 0, 60, the connection",
			d.state("r0"), k.Active, k.SlotsUsed, k.BookedBlocks, got)
	}
	d.w.frame(&Frame{Kind: KFact, Attempt: "r0", To: "destination", Msg: cluster.LegacyRoomCompleted})
	if k.Active != 0 {
		t.Fatalf("the room's completion is taken a latency later: active %d before it", k.Active)
	}
	d.next(cluster.LegacyRoomCompleted)
	if d.state("r0") != "Decoding" || k.Active != 60 || k.SlotsUsed != 1 || k.Reserved != 0 {
		t.Fatalf("room completed: state %s, active %d, slots %d, reserved %d; want Decoding, 60, 1, 0", d.state("r0"), k.Active, k.SlotsUsed, k.Reserved)
	}
	d.next(cluster.LegacyDecodeFinished)
	if got := d.sent(); d.state("r0") != "(retired)" || *k != (model.Worker{Free: cfg.Decode.CapacityBlocks}) || !slices.Equal(got, []string{"outcome r0 destination ok"}) {
		t.Fatalf("decode finished: %s, counters %+v, sent %q; want retired, nothing held, its outcome", d.state("r0"), *k, got)
	}
	if len(p.w.findings)+len(d.w.findings) > 0 {
		t.Fatalf("findings: %v %v", p.w.findings, d.w.findings)
	}
}

// A decode worker whose pool holds one request's 60 blocks: the second
// request, its room complete, waits in the scheduler holding nothing,
// and is admitted when the first one's decode ends and frees its blocks.
func TestLegacyWorker_DecodeAllocatesAtAdmission(t *testing.T) {
	cfg := legacyConfig(t)
	cfg.Decode.CapacityBlocks = 60
	d := newLegacyWorker(t, cfg, cfg.Prefill.Workers)
	k := &d.w.k
	for _, name := range []string{"r0", "r1"} {
		d.w.frame(&Frame{Kind: KRoute, Attempt: name, Stage: "decode", Request: &RequestInfo{PromptTokens: 960, OutputTokens: 4}})
		d.w.frame(&Frame{Kind: KFact, Attempt: name, To: "destination", Msg: cluster.LegacyRoomCompleted})
	}
	d.next(cluster.LegacyRoomCompleted)
	d.next(cluster.LegacyRoomCompleted)
	if d.state("r0") != "Decoding" || d.state("r1") != "Queued" || k.Active != 60 || k.Free != 0 || k.BookedBlocks != 120 {
		t.Fatalf("r0 %s, r1 %s, active %d, free %d, booked %d; want r1 queued holding nothing while r0 decodes (the booking runs ahead: 120)",
			d.state("r0"), d.state("r1"), k.Active, k.Free, k.BookedBlocks)
	}
	d.next(cluster.LegacyDecodeFinished)
	if d.state("r0") != "(retired)" || d.state("r1") != "Decoding" || k.Active != 60 || k.BookedBlocks != 60 {
		t.Fatalf("after r0: r1 %s, active %d, booked %d; want r1 admitted with its 60 blocks", d.state("r1"), k.Active, k.BookedBlocks)
	}
	d.next(cluster.LegacyDecodeFinished)
	if *k != (model.Worker{Free: 60}) || len(d.w.findings) > 0 {
		t.Fatalf("the end: counters %+v, findings %v; want nothing held", *k, d.w.findings)
	}
}

// TestLegacyCancels: the legacy path over real processes with clients
// cancelling at every phase (before prefill is submitted, while it
// computes, during the modeled delay, while decode waits or decodes):
// whatever the machine's load makes of the timing, each request counts
// once, nothing is held on a worker or router, no worker found a step
// its table has no row for, and every log's header names the policy
// disabled.
func TestLegacyCancels(t *testing.T) {
	cfg := legacyConfig(t)
	rs := spaced(40, 50_000)
	for i := range rs {
		if i%3 == 0 {
			rs[i].CancelUS = rs[i].ArrivalUS + int64(i%5)*10_000
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := Run(ctx, Options{Config: cfg, Workload: &slice{rs: rs}, Rewind: again(rs), Scale: 0.01, Dir: dirFor(t), Spawn: execSpawner()})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean || len(rep.Findings) > 0 || rep.Finished != 40 || rep.Succeeded+rep.Cancelled != 40 || rep.Cancelled == 0 {
		rep.Write(os.Stderr)
		t.Fatalf("finished %d: %d succeeded, %d failed, %d cancelled; want 40 clean, each once, some cancelled", rep.Finished, rep.Succeeded, rep.Failed, rep.Cancelled)
	}
	for _, name := range rep.Logs {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		r, err := obslog.NewReader(f, name)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Header().Legacy {
			t.Errorf("%s: the header does not name the policy disabled", name)
		}
		f.Close()
	}
}

// The legacy path's two adapters of the same tables agree: requests
// far apart, run through the simulator (the replay harness) and through
// live processes (the rendezvous), log the same facts per request and
// role (routes, acceptances, outcomes, decode's end, with their figures),
// though decode is routed after the delay in one and at arrival in the
// other.
func TestLegacyParity(t *testing.T) {
	cfg := legacyConfig(t)
	cfg.JitterUS = 0
	want, _ := simTransitions(t, cfg, nil)
	got, rep := liveTransitions(t, cfg, nil, &GoSpawner{})
	if !rep.Clean || rep.Succeeded != len(parityRequests()) {
		rep.Write(os.Stderr)
		t.Fatal("the live run lost something")
	}
	if len(want) != len(parityRequests()) || len(want["r0"]["decode"]) != 3 {
		t.Fatalf("the simulator's legacy log has transitions %v: want each request's, decode's three facts among them", want)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("the legacy path's transitions differ between the simulator and live (-sim +live):\n%s", d)
	}
}

// A live worker judges the legacy tables it steps with the rules the
// simulator's run judges them by: a completion row that forgets to free
// the prefill's blocks leaves the request retiring with them held
// (Quiescence) and the worker's ledger holding them; one that frees them
// twice is refused (ExactlyOnceRelease) and changes nothing.
func TestLegacyWorker_BrokenTablesAreFound(t *testing.T) {
	defer func(f func() *spec.Spec) { legacyTables = f }(legacyTables)
	for _, c := range []struct {
		name string
		edit func(acts []string) []string
		want string
		held string
	}{
		{"no free", func(a []string) []string {
			return slices.DeleteFunc(a, func(s string) bool { return s == cluster.LegacyFreePrefill })
		}, model.NameQuiescence, "[active 60]"},
		{"free twice", func(a []string) []string { return append(a, cluster.LegacyStopPrefill) }, model.NameExactlyOnceRelease, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			legacyTables = func() *spec.Spec {
				s := cluster.LegacySpec()
				for i, r := range s.Source.Rows {
					if r.Event == cluster.LegacyPrefillFinished {
						s.Source.Rows[i].Actions = c.edit(slices.Clone(r.Actions))
					}
				}
				return s
			}
			p := newLegacyWorker(t, legacyConfig(t), 0)
			p.w.frame(&Frame{Kind: KRoute, Attempt: "r0", Stage: "prefill", Request: &RequestInfo{PromptTokens: 960, OutputTokens: 4}})
			p.w.frame(&Frame{Kind: KFact, Attempt: "r0", To: "source", Msg: cluster.LegacyDecodeConnected})
			p.next(cluster.LegacyDecodeConnected)
			p.next(cluster.LegacyPrefillFinished)
			p.next(cluster.LegacyDelayElapsed)
			if len(p.w.findings) != 1 || !strings.Contains(p.w.findings[0], c.want) {
				t.Fatalf("findings %q; want one naming %s", p.w.findings, c.want)
			}
			k := &p.w.k
			l := Ledger{Active: int64(k.Active), InFlight: int64(k.InFlight), Open: len(p.w.latts)}
			if l.Held() != c.held {
				t.Fatalf("the worker holds %q; want %q", l.Held(), c.held)
			}
		})
	}
}
