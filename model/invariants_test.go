package model

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/spec"
)

// testConfig is one prefill worker, one decode worker and n handoffs of 48
// tokens with 16-token pages: 3 blocks each, 1 of them a cached prefix on
// the decode worker.
func testConfig(t *testing.T, p spec.Policy, e Engine, n, slots int) *Config {
	t.Helper()
	c := &Config{
		Policy: p, Engine: e,
		Workers: []WorkerConfig{
			{Role: PrefillWorker, Capacity: 12},
			{Role: DecodeWorker, Capacity: 12, Slots: slots, Headroom: 1024, PrefixHit: []Tokens{16, 16, 16}[:n]},
		},
		Linear: &LinearProfile{BytesPerToken: 1024, BlockSize: 16},
	}
	for i := 0; i < n; i++ {
		c.Handoffs = append(c.Handoffs, HandoffConfig{PromptTokens: 48, HeadroomTokens: 512})
	}
	if err := c.Prepare(); err != nil {
		t.Fatal(err)
	}
	return c
}

// history applies steps, one transaction each, and returns every
// invariant that fired on each step (step and state invariants together).
type history struct {
	t   *testing.T
	w   World
	rec Records
	// fastStep and fastState are what CheckStep and CheckState reported on
	// the last step expect took.
	fastStep, fastState string
}

func newHistory(t *testing.T, c *Config) *history {
	return &history{t: t, w: NewWorld(c)}
}

func (h *history) step(ops func(tx *Tx)) []string {
	tx := Tx{W: &h.w}
	ops(&tx)
	var names []string
	for _, v := range StepViolations(&h.w, &tx.J) {
		names = append(names, v.Invariant)
	}
	for _, v := range StateViolations(&h.w, &h.rec) {
		names = append(names, v.Invariant)
	}
	return names
}

// clean applies steps that must not violate anything.
func (h *history) clean(steps ...func(tx *Tx)) {
	h.t.Helper()
	for i, s := range steps {
		if got := h.step(s); len(got) > 0 {
			h.t.Fatalf("setup step %d violated %v", i+1, got)
		}
	}
}

// expect applies a last step and demands exactly the named invariants
// fire. It also records what the explorer's fast paths report on it.
func (h *history) expect(last func(tx *Tx), want ...string) {
	h.t.Helper()
	before := h.w
	got := h.step(last)
	// The same step again, judged by the fast paths.
	after := h.w
	h.w = before
	tx := Tx{W: &h.w}
	last(&tx)
	if h.w != after {
		h.t.Fatal("the last step is not deterministic")
	}
	h.fastStep, h.fastState = "", ""
	if v := CheckStep(&h.w, &tx.J); v != nil {
		h.fastStep = v.Invariant
	}
	if v := CheckState(&h.w, &h.rec); v != nil {
		h.fastState = v.Invariant
	}
	slices.Sort(got)
	got = slices.Compact(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		h.t.Fatalf("fired %v, want exactly %v", got, want)
	}
}

// Source-first setup steps on handoff 0 (prefill worker 0, decode worker 1).
var (
	route    = func(tx *Tx) { tx.RoutePrefill(0, 0); tx.DeliverRequest(0) }
	accept   = func(tx *Tx) { tx.AcceptRequest(0, SourceSide); tx.StartPrefill(0, SourceSide) }
	computed = func(tx *Tx) {
		tx.FinishCompute(0)
		tx.PinSource(0, SourceSide)
		tx.RegisterSource(0, SourceSide)
		tx.ReportComputeDone(0, SourceSide)
		tx.AnnouncePinned(0, SourceSide)
	}
	routed = func(tx *Tx) {
		tx.RouteDecode(0, 1)
		tx.AcceptRequest(0, DestinationSide)
		tx.RequestReservation(0, DestinationSide)
	}
	reserved = func(tx *Tx) { tx.Reserve(0); tx.RegisterDestination(0, DestinationSide) }
	pulling  = func(tx *Tx) { tx.StartTransfer(0, DestinationSide, DestinationSide) }
)

func TestInvariants_HappyPathIsClean(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy spec.Policy
		engine Engine
	}{{"source-first-vllm", spec.SourceFirst, VLLM}, {"destination-first-sglang", spec.DestinationFirst, SGLang}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHistory(t, testConfig(t, tc.policy, tc.engine, 1, 2))
			if tc.policy == spec.SourceFirst {
				h.clean(route, accept, computed, routed, reserved, pulling)
			} else {
				h.clean(route, func(tx *Tx) { tx.AcceptRequest(0, SourceSide) }, routed, reserved, func(tx *Tx) { tx.StartPrefill(0, SourceSide) },
					func(tx *Tx) {
						tx.FinishCompute(0)
						tx.PinSource(0, SourceSide)
						tx.RegisterSource(0, SourceSide)
						tx.ReportComputeDone(0, SourceSide)
						tx.StartTransfer(0, SourceSide, SourceSide)
					})
			}
			h.clean(
				func(tx *Tx) { tx.CompleteTransfer(0) },
				func(tx *Tx) { tx.ActivateDestination(0, DestinationSide); tx.PublishStored(0, DestinationSide) },
				func(tx *Tx) {
					tx.ReleaseSource(0, SourceSide, CauseReaderAck)
					tx.ReportSourceOutcome(0, SourceSide, true)
					tx.Complete(0, SourceSide)
				},
				func(tx *Tx) {
					tx.ReleaseActive(0, DestinationSide)
					tx.ReportDecodeOutcome(0, DestinationSide, true)
					tx.Complete(0, DestinationSide)
				},
			)
			h.rec.Terminal[0] = [2]bool{true, true}
			if v := Quiescence(&h.w, &h.rec); v != nil {
				t.Fatalf("drained world fails Quiescence: %v", v)
			}
			if !h.w.Drained() {
				t.Fatalf("not drained: %s", h.w.DescribeHeld())
			}
		})
	}
}

// firing is a small history built to break an invariant: its last step
// must fire exactly the invariants named in its h.expect (judged through
// the registry), and the explorer's fast paths, CheckStep and CheckState,
// must return step and state on it ("" for none).
type firing struct {
	name        string
	step, state string
	run         func(t *testing.T) *history
}

// firings: each invariant of docs/lifecycle.md section 4 fires on a small
// history built to break it, and (where the breakage does not imply
// another) only it. Together they make every step half and every state
// half of the registry the first violation its fast path reports.
func firings() []firing {
	sf := func(t *testing.T) *history { return newHistory(t, testConfig(t, spec.SourceFirst, VLLM, 1, 2)) }
	return []firing{
		{name: NameTransferNeedsReservation, step: NameTransferNeedsReservation, state: "", run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed)
			h.expect(pulling, NameTransferNeedsReservation)
			return h
		}},
		{name: NameTransferNeedsReservation + "/unreserved-registration", step: NameTransferNeedsReservation, state: "", run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, func(tx *Tx) { tx.RegisterDestination(0, DestinationSide) })
			h.expect(pulling, NameTransferNeedsReservation)
			return h
		}},
		{name: NameSourcePinnedUntilRead, step: NameSourcePinnedUntilRead, state: "", run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved)
			h.expect(func(tx *Tx) { tx.ReleaseSource(0, SourceSide, CauseAbort) }, NameSourcePinnedUntilRead)
			return h
		}},
		{name: NameNoActivationFromInvalidKv, step: NameNoActivationFromInvalidKv, state: NameNoStoredBeforeActivation, run: func(t *testing.T) *history {
			// Activated pages must be published in the activation step, and
			// pages without valid KV must not be: activating from invalid KV
			// breaks NoStoredBeforeActivation too, whichever it does.
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved, pulling)
			h.expect(func(tx *Tx) { tx.ActivateDestination(0, DestinationSide) }, NameNoActivationFromInvalidKv, NameNoStoredBeforeActivation)
			return h
		}},
		{name: NameDestinationHeldWhileWritten, step: NameDestinationHeldWhileWritten, state: "", run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved, pulling)
			h.expect(func(tx *Tx) { tx.ReleaseDestination(0, DestinationSide, CauseAbort) }, NameDestinationHeldWhileWritten)
			return h
		}},
		{name: NameFailedTransferNeverActivates, step: NameFailedTransferNeverActivates, state: NameNoStoredBeforeActivation, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved, pulling, func(tx *Tx) { tx.FailTransfer(0) })
			h.expect(func(tx *Tx) { tx.ActivateDestination(0, DestinationSide) }, NameFailedTransferNeverActivates, NameNoStoredBeforeActivation)
			return h
		}},
		{name: NameReservationCountsAtOnce, step: "", state: NameReservationCountsAtOnce, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed)
			// A scheduler that reserves pages but reports them as free.
			h.expect(func(tx *Tx) {
				reserved(tx)
				r := tx.W.reserve(0, 1)
				tx.W.W[1].Reserved -= r
				tx.W.W[1].Free += r
			}, NameReservationCountsAtOnce)
			return h
		}},
		{name: NameNoStoredBeforeActivation, step: NameNoStoredBeforeActivation, state: "", run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved)
			h.expect(func(tx *Tx) { tx.PublishStored(0, DestinationSide) }, NameNoStoredBeforeActivation)
			return h
		}},
		{name: NameNoStoredBeforeActivation + "/never", step: "", state: NameNoStoredBeforeActivation, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved, pulling, func(tx *Tx) { tx.CompleteTransfer(0) })
			h.expect(func(tx *Tx) { tx.ActivateDestination(0, DestinationSide) }, NameNoStoredBeforeActivation)
			return h
		}},
		{name: NameNoStoredBeforeActivation + "/twice", step: NameNoStoredBeforeActivation, state: "", run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved, pulling, func(tx *Tx) { tx.CompleteTransfer(0) },
				func(tx *Tx) { tx.ActivateDestination(0, DestinationSide); tx.PublishStored(0, DestinationSide) })
			h.expect(func(tx *Tx) { tx.PublishStored(0, DestinationSide) }, NameNoStoredBeforeActivation)
			return h
		}},
		{name: NameAtomicPrefillPin, step: NameAtomicPrefillPin, state: "", run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route)
			h.expect(func(tx *Tx) {
				tx.AcceptRequest(0, SourceSide)
				tx.StartPrefill(0, SourceSide)
				tx.PinSource(0, SourceSide)
			}, NameAtomicPrefillPin)
			return h
		}},
		{name: NameAtomicPrefillPin + "/unpinned-completion", step: NameComputeLoadIndependent, state: NameAtomicPrefillPin, run: func(t *testing.T) *history {
			// Compute finished with nothing pinned: the occupancy did not
			// stay pinned either, so ComputeLoadIndependent fires with it.
			h := sf(t)
			h.clean(route, accept)
			h.expect(func(tx *Tx) { tx.FinishCompute(0); tx.ReportComputeDone(0, SourceSide) }, NameAtomicPrefillPin, NameComputeLoadIndependent)
			return h
		}},
		{name: NameComputeLoadIndependent, step: NameComputeLoadIndependent, state: "", run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept)
			h.expect(func(tx *Tx) { tx.FinishCompute(0); tx.PinSource(0, SourceSide); tx.RegisterSource(0, SourceSide) }, NameComputeLoadIndependent)
			return h
		}},
		{name: NameComputeLoadIndependent + "/early-fall", step: "", state: NameComputeLoadIndependent, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route)
			h.expect(func(tx *Tx) {
				tx.AcceptRequest(0, SourceSide)
				tx.StartPrefill(0, SourceSide)
				tx.ReportComputeDone(0, SourceSide)
			}, NameComputeLoadIndependent)
			return h
		}},
		{name: NameReleaseNeedsReaderAck, step: NameReleaseNeedsReaderAck, state: "", run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved)
			h.expect(func(tx *Tx) { tx.FenceSource(0, SourceSide); tx.ReleaseSource(0, SourceSide, CauseOther) }, NameReleaseNeedsReaderAck)
			return h
		}},
		{name: NameReleaseNeedsReaderAck + "/ack-without-reads", step: NameReleaseNeedsReaderAck, state: "", run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved)
			h.expect(func(tx *Tx) { tx.FenceSource(0, SourceSide); tx.ReleaseSource(0, SourceSide, CauseReaderAck) }, NameReleaseNeedsReaderAck)
			return h
		}},
		{name: NameExactlyOnceRelease, step: NameExactlyOnceRelease, state: "", run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, func(tx *Tx) { tx.FenceSource(0, SourceSide); tx.ReleaseSource(0, SourceSide, CauseAbort) })
			h.expect(func(tx *Tx) { tx.ReleaseSource(0, SourceSide, CauseAbort) }, NameExactlyOnceRelease)
			return h
		}},
		{name: NameExactlyOnceRelease + "/after-terminal", step: NameExactlyOnceRelease, state: NameInFlightAccounting, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, func(tx *Tx) {
				tx.WithdrawReservation(0, DestinationSide)
				tx.ReportDecodeOutcome(0, DestinationSide, false)
				tx.Complete(0, DestinationSide)
			})
			h.rec.Terminal[0][DestinationSide] = true
			// A scheduler that grants a reservation to an attempt that already ended.
			h.expect(func(tx *Tx) { tx.W.H[0].Pending = true; tx.Reserve(0) }, NameExactlyOnceRelease, NameInFlightAccounting)
			return h
		}},
		{name: NameBlockCategoriesDisjoint, step: "", state: NameBlockCategoriesDisjoint, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept)
			// Counting blocks as active that nobody holds.
			h.expect(func(tx *Tx) { tx.W.W[0].Active++; tx.W.W[0].Free-- }, NameBlockCategoriesDisjoint)
			return h
		}},
		{name: NameCapacityRespected, step: "", state: NameCapacityRespected, run: func(t *testing.T) *history {
			h := newHistory(t, testConfig(t, spec.DestinationFirst, SGLang, 2, 1))
			h.clean(func(tx *Tx) { tx.RoutePrefill(0, 0); tx.RoutePrefill(1, 0) },
				func(tx *Tx) {
					for i := 0; i < 2; i++ {
						tx.RouteDecode(i, 1)
						tx.AcceptRequest(i, DestinationSide)
						tx.RequestReservation(i, DestinationSide)
					}
				},
				func(tx *Tx) { tx.Reserve(0) })
			// A scheduler that admits past its request-slot limit.
			h.expect(func(tx *Tx) { tx.Reserve(1) }, NameCapacityRespected)
			return h
		}},
		{name: NameDestinationFirstGate, step: NameDestinationFirstGate, state: "", run: func(t *testing.T) *history {
			h := newHistory(t, testConfig(t, spec.DestinationFirst, SGLang, 1, 2))
			h.clean(route)
			h.expect(accept, NameDestinationFirstGate)
			return h
		}},
		{name: NameRoleCommands, step: NameRoleCommands, state: "", run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed)
			h.expect(func(tx *Tx) { tx.StartPrefill(0, DestinationSide) }, NameRoleCommands)
			return h
		}},
		{name: NameRouterCleanup, step: NameRouterCleanup, state: "", run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed)
			// Ownership freed at prefill's terminal token, not at release.
			h.expect(func(tx *Tx) { tx.ReportSourceOutcome(0, SourceSide, true) }, NameRouterCleanup)
			return h
		}},
		{name: NameRouterCleanup + "/no-terminal-outcome", step: "", state: NameRouterCleanup, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, func(tx *Tx) {
				tx.WithdrawReservation(0, DestinationSide)
				tx.Complete(0, DestinationSide)
			})
			h.rec.Terminal[0][DestinationSide] = true
			h.expect(func(tx *Tx) {}, NameRouterCleanup)
			return h
		}},
		{name: NameRouterCleanup + "/wrong-outcome", step: "", state: NameRouterCleanup, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, func(tx *Tx) {
				tx.WithdrawReservation(0, DestinationSide)
				tx.ReportDecodeOutcome(0, DestinationSide, true)
				tx.Complete(0, DestinationSide)
			})
			// The destination gave up (a failure state) but told its router done.
			h.rec.Terminal[0][DestinationSide] = true
			h.rec.Ended[0][DestinationSide] = OutcomeFailed
			h.expect(func(tx *Tx) {}, NameRouterCleanup)
			return h
		}},
		{name: NameInFlightAccounting, step: NameInFlightAccounting, state: "", run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept)
			h.expect(func(tx *Tx) { tx.AcceptRequest(0, SourceSide) }, NameInFlightAccounting)
			return h
		}},
		{name: NameInFlightAccounting + "/terminal-still-counted", step: "", state: NameInFlightAccounting, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, func(tx *Tx) {
				tx.WithdrawReservation(0, DestinationSide)
				tx.ReportDecodeOutcome(0, DestinationSide, false)
			})
			h.rec.Terminal[0][DestinationSide] = true
			h.expect(func(tx *Tx) {}, NameInFlightAccounting)
			return h
		}},
	}
}

func TestInvariants_EachCanFire(t *testing.T) {
	for _, tc := range firings() {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.run(t)
			if h.fastStep != tc.step || h.fastState != tc.state {
				t.Fatalf("the explorer's fast paths reported CheckStep %q, CheckState %q; want %q and %q", h.fastStep, h.fastState, tc.step, tc.state)
			}
		})
	}
}

// Every half of every registered invariant is what the explorer's own fast
// path reports first on one of the firing histories: an invariant left out
// of CheckStep or CheckState fails here, with its name.
func TestInvariants_FastPathJudgesEveryRegisteredHalf(t *testing.T) {
	steps, states := map[string]bool{}, map[string]bool{}
	for _, tc := range firings() {
		steps[tc.step], states[tc.state] = true, true
	}
	for i := range Invariants {
		inv := &Invariants[i]
		if inv.HasStep() && !steps[inv.Name] {
			t.Errorf("%s: no firing history makes CheckStep report it", inv.Name)
		}
		if inv.HasState() && !states[inv.Name] {
			t.Errorf("%s: no firing history makes CheckState report it", inv.Name)
		}
	}
}

// The fast paths call exactly the registry's halves, each once: a half
// added to the registry but not to CheckStep or CheckState (or the other
// way round) fails here, whether or not a history exercises it.
func TestInvariants_FastPathCallsExactlyTheRegistry(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "invariants.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string][]string{}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv != nil || (fd.Name.Name != "CheckStep" && fd.Name.Name != "CheckState") {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if id, ok := c.Fun.(*ast.Ident); ok {
					calls[fd.Name.Name] = append(calls[fd.Name.Name], id.Name)
				}
			}
			return true
		})
	}
	funcName := func(fn any) string {
		full := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
		return full[strings.LastIndex(full, ".")+1:]
	}
	// owner names, per fast path, the invariant each registered half belongs to.
	owner := map[string]map[string]string{"CheckStep": {}, "CheckState": {}}
	for i := range Invariants {
		if fn := Invariants[i].step; fn != nil {
			owner["CheckStep"][funcName(fn)] = Invariants[i].Name
		}
		if fn := Invariants[i].state; fn != nil {
			owner["CheckState"][funcName(fn)] = Invariants[i].Name
		}
	}
	for fast, halves := range owner {
		n := map[string]int{}
		for _, c := range calls[fast] {
			n[c]++
		}
		for fn, inv := range halves {
			if n[fn] != 1 {
				t.Errorf("%s calls %s %d times, want once: it is a half of %s in the registry", fast, fn, n[fn], inv)
			}
		}
		for fn := range n {
			if _, ok := halves[fn]; !ok {
				t.Errorf("%s calls %s, which is no half of a registered invariant", fast, fn)
			}
		}
	}
}

func TestInvariants_AttemptIsolation(t *testing.T) {
	c := testConfig(t, spec.SourceFirst, VLLM, 1, 2)
	before := NewWorld(c)
	before.H[0].Ch[SourceSide].Send(MsgReaderCompleted)
	after := before
	after.H[0].Ch[SourceSide].Take(0)
	if v := AttemptIsolation(&before, &after, 0, SourceSide, 0); v != nil {
		t.Fatalf("dropping a stale fact flagged: %v", v)
	}
	after.H[0].Announced = true
	v := AttemptIsolation(&before, &after, 0, SourceSide, 0)
	if v == nil || v.Invariant != NameAttemptIsolation {
		t.Fatalf("a stale fact that changed the world was not flagged: %v", v)
	}
}

func TestInvariants_FaultFreeCompletion(t *testing.T) {
	h := newHistory(t, testConfig(t, spec.SourceFirst, VLLM, 1, 2))
	h.clean(route, accept, computed, routed, func(tx *Tx) {
		tx.WithdrawReservation(0, DestinationSide)
		tx.ReportDecodeOutcome(0, DestinationSide, false)
		tx.Complete(0, DestinationSide)
	})
	v := FaultFreeCompletion(&h.w)
	if v == nil || v.Invariant != NameFaultFreeCompletion {
		t.Fatalf("a failed handoff was not flagged: %v", v)
	}
	// On a world where nothing happened, only an engine that cannot
	// reserve is spared.
	for e := Engine(0); e < NumEngines; e++ {
		w := NewWorld(testConfig(t, spec.SourceFirst, e, 1, 2))
		v := FaultFreeCompletion(&w)
		if exempt := Engines[e].ExemptFromFaultFreeCompletion(); (v == nil) != exempt || exempt == Engines[e].CanReserve {
			t.Errorf("engine %s (can reserve: %v): FaultFreeCompletion gives %v", e, Engines[e].CanReserve, v)
		}
	}
}

func TestInvariants_Quiescence(t *testing.T) {
	h := newHistory(t, testConfig(t, spec.SourceFirst, VLLM, 1, 2))
	h.clean(route, accept, computed)
	h.rec.Terminal[0] = [2]bool{true, true}
	v := Quiescence(&h.w, &h.rec)
	if v == nil || v.Invariant != NameQuiescence {
		t.Fatalf("a pinned source in a quiescent state was not flagged: %v", v)
	}
	h.rec.Terminal[0] = [2]bool{false, false}
	if v := Quiescence(&h.w, &h.rec); v == nil {
		t.Fatal("a live record in a quiescent state was not flagged")
	}
}
