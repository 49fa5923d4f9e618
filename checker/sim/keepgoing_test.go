package sim

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/internal/variant"
	"github.com/handoffcheck/handoffcheck/checker/sim/faultplan"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/machines/interp"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// keepGoingRun is the default workload on the default cluster under
// destination-first with a variant whose source still computes after it
// aborted (ExactlyOnceRelease), the abort aimed at one request in ten,
// right after its destination registered.
func keepGoingRun(t *testing.T, keep bool) (*Sim, *Result) {
	t.Helper()
	cfg := cluster.DefaultConfig()
	if err := cfg.SetPolicy("destination-first"); err != nil {
		t.Fatal(err)
	}
	cfg.Engine = model.SGLang
	// Without jitter the destination's fact reaches the aborted source
	// in the order the plan was written for.
	cfg.JitterUS = 0
	reqs := defaultRequests(t)
	var faults []cluster.Fault
	for i := 0; i < len(reqs); i += 10 {
		faults = append(faults, cluster.Fault{File: "plan", Line: i + 2, Kind: "abort", Request: i, Worker: -1, Side: "source", After: "registered", AfterSide: "destination"})
	}
	s, err := newSim(cfg, &SliceSource{Reqs: reqs}, Options{Faults: faults, Protocol: variant.Protocol(t, "../../testdata/variants/prefill-after-early-outcome.json"), KeepGoing: keep})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.run(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s, res
}

// A run that keeps going shows the same first violation as one that
// stops there, and goes on to the end of the workload: every request
// either retires (succeeded, failed or cancelled) or broke an invariant
// and keeps what it held, and what the broken requests hold at the end
// is exactly what the workers' counters still hold in use. Twice over,
// the same figures.
func TestKeepGoing_CountsTheCostToTheEnd(t *testing.T) {
	_, stopped := keepGoingRun(t, false)
	if stopped.Violation == nil || stopped.Summary.KeptGoing != nil {
		t.Fatalf("the variant's run: violation %v, kept going %v", stopped.Violation, stopped.Summary.KeptGoing)
	}
	s, res := keepGoingRun(t, true)
	if diff := cmp.Diff(stopped.Violation, res.Violation); diff != "" {
		t.Fatalf("the first violation differs (-stopped +kept going):\n%s", diff)
	}
	k, sum := res.Summary.KeptGoing, &res.Summary
	if k == nil || k.Stopped != "" || len(k.Violations) != 1 || k.Violations[0].Invariant != model.NameExactlyOnceRelease {
		t.Fatalf("kept going: %+v", k)
	}
	reqs := len(defaultRequests(t))
	if want := (reqs + 9) / 10; k.Total() != want || k.Requests != want {
		t.Errorf("%d violations on %d requests, want one on each of the %d requests the plan aborts", k.Total(), k.Requests, want)
	}
	if sum.Requests != reqs || sum.Succeeded+sum.Failed+sum.Cancelled+k.Requests != reqs {
		t.Errorf("%d requests: %d succeeded, %d failed, %d cancelled, %d broke an invariant; want all %d accounted for",
			sum.Requests, sum.Succeeded, sum.Failed, sum.Cancelled, k.Requests, reqs)
	}
	if held := heldByBroken(s); k.InUseBlocks <= 0 || held != k.InUseBlocks {
		t.Errorf("%d blocks in use at the end; the broken requests' records hold %d", k.InUseBlocks, held)
	}
	_, again := keepGoingRun(t, true)
	if diff := cmp.Diff(res.Summary, again.Summary, cmp.AllowUnexported(KeptGoing{})); diff != "" {
		t.Errorf("the same run twice (-first +second):\n%s", diff)
	}
}

// Without a violation, keeping going changes nothing but the line that
// says so.
func TestKeepGoing_CleanRunUnchanged(t *testing.T) {
	cfg := cluster.DefaultConfig()
	reqs := defaultRequests(t)
	plain, err := Run(context.Background(), cfg, &SliceSource{Reqs: reqs}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	kept, err := Run(context.Background(), cfg, &SliceSource{Reqs: reqs}, Options{KeepGoing: true})
	if err != nil {
		t.Fatal(err)
	}
	if kept.Violation != nil || kept.Summary.KeptGoing == nil || kept.Summary.KeptGoing.Total() != 0 || kept.Summary.KeptGoing.InUseBlocks != 0 {
		t.Fatalf("a clean run kept going: violation %v, %+v", kept.Violation, kept.Summary.KeptGoing)
	}
	kept.Summary.KeptGoing = nil
	if diff := cmp.Diff(plain.Summary, kept.Summary); diff != "" {
		t.Errorf("a clean run's summary moved (-plain +kept going):\n%s", diff)
	}
}

// On every shipped variant under drawn fault plans (restarts among
// them), both policies: the run that keeps going shows the first
// violation of the run that stops, every request is accounted for, and
// unless a violation no request carries stopped it, what the broken
// requests hold at the end is what the workers hold in use.
func TestKeepGoing_VariantsUnderDrawnFaults(t *testing.T) {
	files, err := filepath.Glob("../../testdata/variants/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("variants: %v %v", files, err)
	}
	reqs := defaultRequests(t)
	seeds := []uint64{1, 2, 3}
	if testing.Short() {
		seeds = seeds[:1]
	}
	kept, lateOnly := 0, 0
	for _, file := range files {
		if strings.Contains(file, "broken-vocabulary") {
			continue // not a protocol: refused when loaded
		}
		p := variant.Protocol(t, file)
		for _, pol := range []string{"source-first", "destination-first"} {
			for _, seed := range seeds {
				cfg := cluster.DefaultConfig()
				if err := cfg.SetPolicy(pol); err != nil {
					t.Fatal(err)
				}
				plan, err := faultplan.Draw(seed, 20, len(reqs), cfg.NumWorkers(), faultplan.Kinds(), reqs[len(reqs)-1].ArrivalUS)
				if err != nil {
					t.Fatal(err)
				}
				var faults []cluster.Fault
				for _, f := range plan.Faults {
					faults = append(faults, cluster.Fault{File: "drawn", Line: f.Line, AtUS: f.AtUS, Kind: f.Kind, Request: f.Request, Worker: f.Worker, To: f.To, Side: f.Side, Msg: f.Msg, After: f.After, AfterSide: f.AfterSide})
				}
				name := fmt.Sprintf("%s %s seed %d", filepath.Base(file), pol, seed)
				stopped, err := Run(context.Background(), cfg, &SliceSource{Reqs: reqs}, Options{Faults: faults, Protocol: p})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				s, err := newSim(cfg, &SliceSource{Reqs: reqs}, Options{Faults: faults, Protocol: p, KeepGoing: true})
				if err != nil {
					t.Fatal(err)
				}
				stepped := map[int]bool{}
				s.watch = func(r *request) {
					if r.broken {
						stepped[r.Index] = true
					}
				}
				res, err := s.run(context.Background(), Options{})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if len(stepped) > 0 {
					t.Errorf("%s: requests %v took a step after breaking an invariant", name, stepped)
				}
				for w := range s.jobs {
					if n := s.jobs[w].Len(); n > 0 && s.kept.Stopped == "" {
						t.Errorf("%s: worker %d still has %d prefills booked at the end", name, w, n)
					}
				}
				if diff := cmp.Diff(stopped.Violation, res.Violation); diff != "" {
					t.Fatalf("%s: the first violation differs (-stopped +kept going):\n%s", name, diff)
				}
				k, sum := res.Summary.KeptGoing, &res.Summary
				if k.Total() > 1 {
					kept++
				}
				if k.Stopped != "" {
					continue
				}
				late := k.Count(cluster.NameBoundedReclaim) + k.Count(cluster.NameBoundedGiveUp)
				if late == k.Total() && k.Requests != 0 {
					t.Errorf("%s: only bounds on time broken (%d), yet %d requests took no step after", name, late, k.Requests)
				}
				if late > 0 && late == k.Total() {
					lateOnly++
				}
				if k.Requests > k.Total() || (res.Violation != nil) != (k.Total() > 0) {
					t.Errorf("%s: %d violations on %d requests, first %v", name, k.Total(), k.Requests, res.Violation)
				}
				if sum.Retried == 0 && sum.Succeeded+sum.Failed+sum.Cancelled+k.Requests != sum.Requests {
					t.Errorf("%s: %d requests: %d succeeded, %d failed, %d cancelled, %d broke an invariant in flight",
						name, sum.Requests, sum.Succeeded, sum.Failed, sum.Cancelled, k.Requests)
				}
				if held := heldByBroken(s); held != k.InUseBlocks && k.Count(model.NameBlockCategoriesDisjoint) == 0 {
					// (A request that broke BlockCategoriesDisjoint
					// counts some of its blocks twice.)
					t.Errorf("%s: %d blocks in use at the end; the broken requests' records hold %d (%+v)", name, k.InUseBlocks, held, k)
				}
			}
		}
	}
	if kept == 0 {
		t.Errorf("no run went past a violation to another")
	}
	t.Logf("%d runs went past a violation to another, %d broke only bounds on time", kept, lateOnly)
}

// heldByBroken is what the broken requests' own records hold in use at
// the end of a run: active, pinned, reserved and a locked prefix, on
// both sides.
func heldByBroken(s *Sim) int64 {
	var n model.Blocks
	for _, r := range s.sortedActive() {
		if r.broken {
			n += r.Hold[0].Used() + r.Hold[0].Prefix() + r.Hold[1].Used() + r.Hold[1].Prefix()
		}
	}
	return int64(n)
}

// A request that breaks an invariant while its prefill is on the compute
// queue gives its worker back: every other request retires, and nothing
// stays booked.
func TestKeepGoing_BrokenDuringComputeGivesTheWorkerBack(t *testing.T) {
	cfg := cluster.DefaultConfig()
	s, err := newSim(cfg, &SliceSource{Reqs: defaultRequests(t)}, Options{KeepGoing: true})
	if err != nil {
		t.Fatal(err)
	}
	var victim *request
	s.watch = func(r *request) {
		if victim == nil && r.job != nil {
			// Its prefill is on the queue (another of its moves was
			// taken meanwhile): the break must take it off.
			victim = r
			s.fail(r, "a test's invariant", "broken while its prefill waits on the compute queue")
		}
	}
	res, err := s.run(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if victim == nil {
		t.Fatal("no request took a step while its prefill was on the compute queue")
	}
	k := res.Summary.KeptGoing
	if k.Total() != 1 || k.Requests != 1 || res.Summary.Succeeded+res.Summary.Failed+res.Summary.Cancelled != res.Summary.Requests-1 {
		t.Fatalf("one request broken while queued: %+v, summary %+v", k, res.Summary)
	}
	for w := range s.jobs {
		if n := s.jobs[w].Len(); n > 0 {
			t.Errorf("worker %d still has %d prefills booked at the end", w, n)
		}
	}
}

// A run that keeps going past a broken bound on time takes the broken
// obligation off the request: every obligation opened is either met or
// broken, never both (a side that releases late, after its obligation
// broke, meets none), and the request retires once it holds nothing.
// BoundedReclaim: the source forgets a Cancelled that overtook its
// request (TestCancelledBeforeItsRequest's old row) and holds the request
// until its bootstrap deadline, far past the bound. BoundedGiveUp: the
// source ignores its transfer's failure (a mutant the clock kills,
// mutation-timed.txt) and keeps its pins past the bound; every request
// returns what it holds in the end.
func TestKeepGoing_BrokenObligationIsNotMetLater(t *testing.T) {
	forgets := spec.Default()
	tb := forgets.Table(spec.Source)
	i := tb.Lookup(spec.DestinationFirst, "Idle", "Cancelled")
	tb.Rows[i].To, tb.Rows[i].Actions = "", nil
	var ignores *spec.Spec
	for _, m := range spec.Mutants(spec.Default(), spec.Operators) {
		if m.Name == "source row 19 ignore TransferFailed" {
			ignores = m.Spec
		}
	}
	if ignores == nil {
		t.Fatal("no mutant source row 19 ignore TransferFailed")
	}
	for _, tc := range []struct {
		scenario, invariant string
		tables              *spec.Spec
		// opened and met are the invariant's obligations: those a
		// request has open, each seen at the step that opens it, and
		// those the run counts met.
		opened func(r *request) [2]*obligation
		met    func(sum *Summary) int
	}{
		{"reorder-sweep", cluster.NameBoundedReclaim, forgets,
			func(r *request) [2]*obligation { return r.owed },
			func(sum *Summary) int { return sum.ReclaimObligated }},
		{"fault-sweep", cluster.NameBoundedGiveUp, ignores,
			func(r *request) [2]*obligation { return r.gaveUp },
			func(sum *Summary) int { return sum.GiveUpObligated }},
	} {
		t.Run(tc.invariant, func(t *testing.T) {
			sc, _ := LookupScenario(tc.scenario)
			cfg, reqs, faults, err := sc.Setup("destination-first")
			if err != nil {
				t.Fatal(err)
			}
			it, err := interp.New(tc.tables)
			if err != nil {
				t.Fatal(err)
			}
			p, err := system.FromStepper(tc.invariant, tc.tables, it)
			if err != nil {
				t.Fatal(err)
			}
			s, err := newSim(cfg, &SliceSource{Reqs: reqs}, Options{Faults: faults, FaultFree: sc.FaultFree, Protocol: p, KeepGoing: true})
			if err != nil {
				t.Fatal(err)
			}
			opened := map[*obligation]bool{}
			s.watch = func(r *request) {
				for _, o := range tc.opened(r) {
					if o != nil {
						opened[o] = true
					}
				}
			}
			res, err := s.run(context.Background(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			k, sum := res.Summary.KeptGoing, &res.Summary
			broken := k.Count(tc.invariant)
			if k.Stopped != "" || broken == 0 || broken != k.Total() {
				t.Fatalf("want %s broken, nothing else, and the run gone to its end: %+v", tc.invariant, k)
			}
			if met := tc.met(sum); met == 0 || met+broken != len(opened) {
				t.Errorf("%s: %d obligations opened, %d met and %d broken: a broken one was counted met when its side released late", tc.invariant, len(opened), met, broken)
			}
			if len(s.active) != 0 || sum.Succeeded+sum.Failed+sum.Cancelled != sum.Requests {
				t.Errorf("%d requests still active at the end; %d of %d finished: a request whose obligation broke never retired", len(s.active), sum.Succeeded+sum.Failed+sum.Cancelled, sum.Requests)
			}
		})
	}
}
