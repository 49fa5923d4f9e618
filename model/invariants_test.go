package model

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/spec"
)

// testConfig is one prefill worker (0), one decode worker (1) and n
// handoffs (1 to MaxHandoffs) of 48 tokens with 16-token pages: 3 blocks
// each, 1 of them a cached prefix on the decode worker.
func testConfig(t *testing.T, p spec.Policy, e Engine, n, slots int) *Config {
	t.Helper()
	return shapedConfig(t, p, e, n, slots, false, nil)
}

// shapedConfig is testConfig with the decode worker listed first when
// decodeFirst is set (decode worker 0, prefill worker 1), and with mod
// applied to the configuration before it is prepared.
func shapedConfig(t *testing.T, p spec.Policy, e Engine, n, slots int, decodeFirst bool, mod func(*Config)) *Config {
	t.Helper()
	hits := make([]Tokens, n)
	for i := range hits {
		hits[i] = 16
	}
	c := &Config{
		Policy: p, Engine: e,
		Workers: []WorkerConfig{
			{Role: PrefillWorker, Capacity: 12},
			{Role: DecodeWorker, Capacity: 12, Slots: slots, Headroom: 1024, PrefixHit: hits},
		},
		Linear: &LinearProfile{BytesPerToken: 1024, BlockSize: 16},
	}
	if decodeFirst {
		c.Workers[0], c.Workers[1] = c.Workers[1], c.Workers[0]
	}
	for i := 0; i < n; i++ {
		c.Handoffs = append(c.Handoffs, HandoffConfig{PromptTokens: 48, HeadroomTokens: 512})
	}
	if mod != nil {
		mod(c)
	}
	if err := c.Prepare(); err != nil {
		t.Fatal(err)
	}
	return c
}

// pw and dw are the first prefill and the first decode worker of the
// world a transaction works on: histories name workers by role, so that
// they run unchanged whichever role is listed first.
func pw(tx *Tx) int { return tx.W.cfg.d.prefill[0] }
func dw(tx *Tx) int { return tx.W.cfg.d.decode[0] }

// verdict is what a judge reported first: the invariant, the check inside
// it (the pattern of its detail), and the handoff and worker it names.
// The zero verdict is no violation.
type verdict struct {
	Invariant, Check string
	Handoff, Worker  int
}

func verdictOf(v *Violation) verdict {
	if v == nil {
		return verdict{}
	}
	return verdict{v.Invariant, v.Check, v.Handoff, v.Worker}
}

func (v verdict) String() string {
	if v == (verdict{}) {
		return "none"
	}
	return v.Invariant + " " + strconv.Quote(v.Check) + " handoff " + strconv.Itoa(v.Handoff) + " worker " + strconv.Itoa(v.Worker)
}

// history applies steps, one transaction each, and returns every
// invariant that fired on each step (step and state invariants together).
type history struct {
	t   *testing.T
	w   World
	rec Records
	// fastStep and fastState are what CheckStep and CheckState reported
	// first on the last step expect took.
	fastStep, fastState verdict
	// fired is the triggers every step so far fired.
	fired Triggers
}

func newHistory(t *testing.T, c *Config) *history {
	return &history{t: t, w: NewWorld(c)}
}

func (h *history) step(ops func(tx *Tx)) []string {
	before, beforeRec := h.w, h.rec
	tx := Tx{W: &h.w}
	ops(&tx)
	// StateClearFrom, from a world the state halves pass, passes exactly
	// the worlds CheckState passes.
	if CheckState(&before, &beforeRec) == nil {
		if clear, v := StateClearFrom(&before, &h.w, &beforeRec, &h.rec), CheckState(&h.w, &h.rec); clear != (v == nil) {
			h.t.Fatalf("StateClearFrom says %v, CheckState reports %v", clear, v)
		}
	}
	h.fired |= tx.J.Fired()
	// StepClear passes exactly the steps CheckStep passes, on every step
	// of every history: the clean ones and the ones each half objects to.
	if clear, v := StepClear(&h.w, &tx.J), CheckStep(&h.w, &tx.J); clear != (v == nil) {
		h.t.Fatalf("StepClear says %v, CheckStep reports %v", clear, v)
	}
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

// expect applies a step and demands exactly the named invariants fire
// (judged through the registry). It also records what the explorer's fast
// paths, CheckStep and CheckState, report first on it.
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
	h.fastStep = verdictOf(CheckStep(&h.w, &tx.J))
	h.fastState = verdictOf(CheckState(&h.w, &h.rec))
	slices.Sort(got)
	got = slices.Compact(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		h.t.Fatalf("fired %v, want exactly %v", got, want)
	}
}

// Source-first setup steps on handoff 0.
var (
	route    = func(tx *Tx) { tx.RoutePrefill(0, pw(tx)); tx.DeliverRequest(0) }
	accept   = func(tx *Tx) { tx.AcceptRequest(0, SourceSide); tx.StartPrefill(0, SourceSide) }
	computed = func(tx *Tx) {
		tx.FinishCompute(0)
		tx.PinSource(0, SourceSide)
		tx.RegisterSource(0, SourceSide)
		tx.ReportComputeDone(0, SourceSide)
		tx.PublishCached(0, SourceSide)
		tx.AnnouncePinned(0, SourceSide)
	}
	routed = func(tx *Tx) {
		tx.RouteDecode(0, dw(tx))
		tx.AcceptRequest(0, DestinationSide)
		tx.RequestReservation(0, DestinationSide)
	}
	reserved = func(tx *Tx) { tx.Reserve(0); tx.RegisterDestination(0, DestinationSide) }
	pulling  = func(tx *Tx) { tx.StartTransfer(0, DestinationSide, DestinationSide) }
	received = func(tx *Tx) { tx.CompleteTransfer(0) }
	// released is a source giving its pin up on an abort, as the lifecycle
	// allows: the registration is fenced in the same step.
	released = func(tx *Tx) { tx.FenceSource(0, SourceSide); tx.ReleaseSource(0, SourceSide, CauseAbort) }
	// acked and decoded end handoff 0 in success: the source releases
	// after the reads, the destination after decode.
	acked = func(tx *Tx) {
		tx.ReleaseSource(0, SourceSide, CauseReaderAck)
		tx.ReportSourceOutcome(0, SourceSide, true)
		tx.Complete(0, SourceSide)
	}
	decoded = func(tx *Tx) {
		tx.ReleaseActive(0, DestinationSide)
		tx.ReportDecodeOutcome(0, DestinationSide, true)
		tx.Complete(0, DestinationSide)
	}
)

// happyPath runs handoff 0 to success on both sides under the policy, every
// step clean, and leaves a drained world whose records are terminal.
func happyPath(h *history, policy spec.Policy) {
	h.t.Helper()
	if policy == spec.SourceFirst {
		h.clean(route, accept, computed, routed, reserved, pulling)
	} else {
		h.clean(route, func(tx *Tx) { tx.AcceptRequest(0, SourceSide) }, routed, reserved, func(tx *Tx) { tx.StartPrefill(0, SourceSide) },
			func(tx *Tx) {
				tx.FinishCompute(0)
				tx.PinSource(0, SourceSide)
				tx.RegisterSource(0, SourceSide)
				tx.ReportComputeDone(0, SourceSide)
				tx.PublishCached(0, SourceSide)
				tx.StartTransfer(0, SourceSide, SourceSide)
			})
	}
	h.clean(
		received,
		func(tx *Tx) { tx.ActivateDestination(0, DestinationSide); tx.PublishStored(0, DestinationSide) },
		acked,
		decoded,
	)
	h.rec.Terminal[0] = [2]bool{true, true}
	h.rec.Ended[0] = [2]Outcome{OutcomeOK, OutcomeOK}
}

func TestInvariants_HappyPathIsClean(t *testing.T) {
	for _, tc := range []struct {
		name        string
		policy      spec.Policy
		engine      Engine
		decodeFirst bool
	}{
		{"source-first-vllm", spec.SourceFirst, VLLM, false},
		{"destination-first-sglang", spec.DestinationFirst, SGLang, false},
		// The decode worker listed first: every ledger is kept per worker
		// index, and none may count worker 0 for both roles.
		{"source-first-vllm-decode-listed-first", spec.SourceFirst, VLLM, true},
		{"destination-first-sglang-decode-listed-first", spec.DestinationFirst, SGLang, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHistory(t, shapedConfig(t, tc.policy, tc.engine, 1, 2, tc.decodeFirst, nil))
			happyPath(h, tc.policy)
			if v := Quiescence(&h.w, &h.rec); v != nil {
				t.Fatalf("drained world fails Quiescence: %v", v)
			}
			if v := FaultFreeCompletion(&h.w); v != nil {
				t.Fatalf("a handoff that succeeded fails FaultFreeCompletion: %v", v)
			}
			if !h.w.Drained() {
				t.Fatalf("not drained: %s", h.w.DescribeHeld())
			}
		})
	}
}

// firing is a small history built to break one check of an invariant: its
// last step must fire exactly the invariants named in its h.expect (judged
// through the registry), and the explorer's fast paths, CheckStep and
// CheckState, must report step and state first on it (the zero verdict
// for none).
type firing struct {
	name        string
	step, state verdict
	run         func(t *testing.T) *history
}

// firings: every check of every invariant of docs/lifecycle.md section 4
// fires on a small history built to break it, and (where the breakage does
// not imply another) only it; TestInvariants_EveryCheckFires holds the
// table to the checks of invariants.go. Histories name workers by role, so
// the table runs with either role listed first.
//
// Where a check is about protocol behaviour, the history is made of the
// operations of ops.go, so that the effects they record are what the check
// judges. Where it cross-checks a ledger against the handoffs, the last
// step pokes the ledger directly: it stands for a buggy scheduler or
// router, which no operation of ops.go is.
func firings(decodeFirst bool) []firing {
	p, d := 0, 1
	if decodeFirst {
		p, d = 1, 0
	}
	cfg := func(t *testing.T, pol spec.Policy, e Engine, n, slots int) *history {
		return newHistory(t, shapedConfig(t, pol, e, n, slots, decodeFirst, nil))
	}
	sf := func(t *testing.T) *history { return cfg(t, spec.SourceFirst, VLLM, 1, 2) }
	step := func(inv string, h int, check string) verdict { return verdict{inv, check, h, -1} }
	state := func(inv string, h, w int, check string) verdict { return verdict{inv, check, h, w} }
	none := verdict{}
	const (
		neverPublished   = "activated pages were never published as Stored"
		destNotInFlight  = "the destination holds the request but does not count it in flight"
		decodeBooks      = "decode router books %d blocks here but the handoffs hold %d"
		categoryNegative = "a category is negative: %s"
		dstNotHeld       = "the index advertises the destination's received blocks but the worker holds them neither active nor cached (destination holds %s)"
	)
	return []firing{
		// ---- TransferNeedsReservation ----
		{name: NameTransferNeedsReservation, step: step(NameTransferNeedsReservation, 0, "transfer started before the destination reserved for the attempt"), state: none, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed)
			h.expect(pulling, NameTransferNeedsReservation)
			return h
		}},
		{name: NameTransferNeedsReservation + "/registration-without-reservation", step: step(NameTransferNeedsReservation, 0, "transfer started before the destination reserved for the attempt"), state: none, run: func(t *testing.T) *history {
			// A registration alone is no reservation.
			h := sf(t)
			h.clean(route, accept, computed, routed, func(tx *Tx) { tx.RegisterDestination(0, DestinationSide) })
			h.expect(pulling, NameTransferNeedsReservation)
			return h
		}},
		{name: NameTransferNeedsReservation + "/no-registration", step: step(NameTransferNeedsReservation, 0, "transfer started with no destination registration to write through"), state: none, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, func(tx *Tx) { tx.Reserve(0) })
			h.expect(pulling, NameTransferNeedsReservation)
			return h
		}},
		{name: NameTransferNeedsReservation + "/registration-outlived-reservation", step: step(NameTransferNeedsReservation, 0, "transfer started through a registration whose pages are not reserved for the attempt"), state: none, run: func(t *testing.T) *history {
			// The reservation was made and released; a registration made
			// afterwards points at pages no longer reserved.
			h := sf(t)
			h.clean(route, accept, computed, routed, func(tx *Tx) { tx.Reserve(0) },
				func(tx *Tx) { tx.ReleaseDestination(0, DestinationSide, CauseAbort) },
				func(tx *Tx) { tx.RegisterDestination(0, DestinationSide) })
			h.expect(pulling, NameTransferNeedsReservation)
			return h
		}},
		{name: NameTransferNeedsReservation + "/write-into-freed-pages", step: step(NameTransferNeedsReservation, 0, "transfer wrote into pages not reserved for the attempt"), state: none, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved, pulling)
			h.expect(func(tx *Tx) {
				tx.ReleaseDestination(0, DestinationSide, CauseAbort)
				// A destination that frees the pages but leaves the
				// registration open: the transfer writes into them.
				tx.W.H[0].DstReg = RegValid
				tx.CompleteTransfer(0)
			}, NameTransferNeedsReservation, NameDestinationHeldWhileWritten)
			return h
		}},

		// ---- SourcePinnedUntilRead ----
		{name: NameSourcePinnedUntilRead, step: step(NameSourcePinnedUntilRead, 0, "pin released while its registration was still valid and the transfer %s: a read may find freed blocks"), state: none, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved)
			h.expect(func(tx *Tx) { tx.ReleaseSource(0, SourceSide, CauseAbort) }, NameSourcePinnedUntilRead)
			return h
		}},
		{name: NameSourcePinnedUntilRead + "/read-unpinned", step: step(NameSourcePinnedUntilRead, 0, "a read through a valid registration found the blocks no longer pinned"), state: none, run: func(t *testing.T) *history {
			// A source that registers its blocks while they are still being
			// computed: the transfer reads blocks that were never pinned.
			h := sf(t)
			h.clean(route, accept, func(tx *Tx) { tx.RegisterSource(0, SourceSide) }, routed, reserved, pulling)
			h.expect(received, NameSourcePinnedUntilRead)
			return h
		}},

		// ---- NoActivationFromInvalidKv ----
		{name: NameNoActivationFromInvalidKv + "/no-reservation", step: step(NameNoActivationFromInvalidKv, 0, "activated with no reserved pages"), state: none, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed)
			h.expect(func(tx *Tx) { tx.ActivateDestination(0, DestinationSide) }, NameNoActivationFromInvalidKv)
			return h
		}},
		{name: NameNoActivationFromInvalidKv, step: step(NameNoActivationFromInvalidKv, 0, "activated while the transfer was %s"), state: state(NameNoStoredBeforeActivation, 0, d, neverPublished), run: func(t *testing.T) *history {
			// Activated pages must be published in the activation step, and
			// pages without valid KV must not be: activating from invalid KV
			// breaks NoStoredBeforeActivation too, whichever it does.
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved, pulling)
			h.expect(func(tx *Tx) { tx.ActivateDestination(0, DestinationSide) }, NameNoActivationFromInvalidKv, NameNoStoredBeforeActivation)
			return h
		}},
		{name: NameNoActivationFromInvalidKv + "/tainted", step: step(NameNoActivationFromInvalidKv, 0, "activated from a transfer whose source blocks were released while it read"), state: none, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved, pulling)
			// The pin ends while the transfer reads: ReleaseSource taints it.
			h.expect(func(tx *Tx) { tx.ReleaseSource(0, SourceSide, CauseAbort) }, NameSourcePinnedUntilRead)
			// A source that leaves its registration open after the release:
			// the transfer completes, reading freed blocks.
			h.expect(func(tx *Tx) { tx.W.H[0].SrcReg = RegValid; tx.CompleteTransfer(0) }, NameSourcePinnedUntilRead)
			h.expect(func(tx *Tx) { tx.ActivateDestination(0, DestinationSide); tx.PublishStored(0, DestinationSide) }, NameNoActivationFromInvalidKv)
			return h
		}},

		// ---- DestinationHeldWhileWritten ----
		{name: NameDestinationHeldWhileWritten, step: step(NameDestinationHeldWhileWritten, 0, "reserved pages freed while their registration was valid and the transfer %s"), state: none, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved, pulling)
			h.expect(func(tx *Tx) { tx.ReleaseDestination(0, DestinationSide, CauseAbort) }, NameDestinationHeldWhileWritten)
			return h
		}},

		// ---- FailedTransferNeverActivates ----
		{name: NameFailedTransferNeverActivates, step: step(NameFailedTransferNeverActivates, 0, "activated from a failed transfer"), state: state(NameNoStoredBeforeActivation, 0, d, neverPublished), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved, pulling, func(tx *Tx) { tx.FailTransfer(0) })
			h.expect(func(tx *Tx) { tx.ActivateDestination(0, DestinationSide) }, NameFailedTransferNeverActivates, NameNoStoredBeforeActivation)
			return h
		}},

		// ---- ReservationCountsAtOnce ----
		{name: NameReservationCountsAtOnce, step: none, state: state(NameReservationCountsAtOnce, -1, d, "reserved_destination is %d but the reservations hold %d"), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed)
			// A scheduler that reserves pages but reports them as free.
			h.expect(func(tx *Tx) {
				reserved(tx)
				r := tx.W.reserve(0, d)
				tx.W.W[d].Reserved -= r
				tx.W.W[d].Free += r
			}, NameReservationCountsAtOnce)
			return h
		}},
		{name: NameReservationCountsAtOnce + "/slots", step: none, state: state(NameReservationCountsAtOnce, -1, d, "%d request slots in use but the requests hold %d"), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved)
			// A scheduler that takes a request slot no request holds.
			h.expect(func(tx *Tx) { tx.W.W[d].SlotsUsed++ }, NameReservationCountsAtOnce)
			return h
		}},
		{name: NameReservationCountsAtOnce + "/headroom", step: none, state: state(NameReservationCountsAtOnce, -1, d, "headroom in use is %d but the reservations hold %d"), run: func(t *testing.T) *history {
			h := cfg(t, spec.SourceFirst, SGLang, 1, 2)
			h.clean(route, accept, computed, routed, reserved)
			// A scheduler that frees a reservation's headroom early.
			h.expect(func(tx *Tx) { tx.W.W[d].HeadroomUsed-- }, NameReservationCountsAtOnce)
			return h
		}},

		// ---- NoStoredBeforeActivation ----
		{name: NameNoStoredBeforeActivation, step: step(NameNoStoredBeforeActivation, 0, "Stored published before receive completion (transfer %s)"), state: state(NameIndexMatchesCache, 0, d, dstNotHeld), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved)
			// The index now also advertises pages the worker holds only reserved.
			h.expect(func(tx *Tx) { tx.PublishStored(0, DestinationSide) }, NameNoStoredBeforeActivation, NameIndexMatchesCache)
			return h
		}},
		{name: NameNoStoredBeforeActivation + "/never", step: none, state: state(NameNoStoredBeforeActivation, 0, d, neverPublished), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved, pulling, received)
			h.expect(func(tx *Tx) { tx.ActivateDestination(0, DestinationSide) }, NameNoStoredBeforeActivation)
			return h
		}},
		{name: NameNoStoredBeforeActivation + "/twice", step: step(NameNoStoredBeforeActivation, 0, "Stored published a second time"), state: none, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved, pulling, received,
				func(tx *Tx) { tx.ActivateDestination(0, DestinationSide); tx.PublishStored(0, DestinationSide) })
			h.expect(func(tx *Tx) { tx.PublishStored(0, DestinationSide) }, NameNoStoredBeforeActivation)
			return h
		}},
		{name: NameNoStoredBeforeActivation + "/index", step: none, state: state(NameNoStoredBeforeActivation, -1, d, "the KV index got %d Stored blocks, the handoffs published %d"), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved, pulling, received,
				func(tx *Tx) { tx.ActivateDestination(0, DestinationSide); tx.PublishStored(0, DestinationSide) })
			// A KV index that counts a Stored block nobody published.
			h.expect(func(tx *Tx) { tx.W.W[d].StoredBlocks++ }, NameNoStoredBeforeActivation)
			return h
		}},

		// ---- AtomicPrefillPin ----
		{name: NameAtomicPrefillPin, step: step(NameAtomicPrefillPin, 0, "pinned blocks whose compute had not finished"), state: none, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route)
			h.expect(func(tx *Tx) {
				tx.AcceptRequest(0, SourceSide)
				tx.StartPrefill(0, SourceSide)
				tx.PinSource(0, SourceSide)
			}, NameAtomicPrefillPin)
			return h
		}},
		{name: NameAtomicPrefillPin + "/unpinned-completion", step: step(NameComputeLoadIndependent, 0, "compute finished but the pinned occupancy did not stay (source holds %s)"),
			state: state(NameAtomicPrefillPin, 0, p, "compute finished but its blocks are still plain active blocks"), run: func(t *testing.T) *history {
				// Compute finished with nothing pinned: the occupancy did not
				// stay pinned either, so ComputeLoadIndependent fires with it.
				h := sf(t)
				h.clean(route, accept)
				h.expect(func(tx *Tx) { tx.FinishCompute(0); tx.ReportComputeDone(0, SourceSide) }, NameAtomicPrefillPin, NameComputeLoadIndependent)
				return h
			}},

		// ---- ComputeLoadIndependent ----
		{name: NameComputeLoadIndependent, step: step(NameComputeLoadIndependent, 0, "compute finished but the prefill router still counts its compute load"), state: none, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept)
			h.expect(func(tx *Tx) {
				tx.FinishCompute(0)
				tx.PinSource(0, SourceSide)
				tx.RegisterSource(0, SourceSide)
				tx.PublishCached(0, SourceSide)
			}, NameComputeLoadIndependent)
			return h
		}},
		{name: NameComputeLoadIndependent + "/fell-twice", step: step(NameComputeLoadIndependent, 0, "compute load fell twice"), state: none, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed)
			h.expect(func(tx *Tx) { tx.ReportComputeDone(0, SourceSide) }, NameComputeLoadIndependent)
			return h
		}},
		{name: NameComputeLoadIndependent + "/early-fall", step: none, state: state(NameComputeLoadIndependent, 0, p, "compute load fell before compute finished"), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route)
			h.expect(func(tx *Tx) {
				tx.AcceptRequest(0, SourceSide)
				tx.StartPrefill(0, SourceSide)
				tx.ReportComputeDone(0, SourceSide)
			}, NameComputeLoadIndependent)
			return h
		}},
		{name: NameComputeLoadIndependent + "/ledger", step: none, state: state(NameComputeLoadIndependent, -1, p, "active_prefill_tokens is %d but the handoffs count %d"), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept)
			// A prefill router that counts load no handoff brought.
			h.expect(func(tx *Tx) { tx.W.W[p].PrefillTokens++ }, NameComputeLoadIndependent)
			return h
		}},

		// ---- ReleaseNeedsReaderAck ----
		{name: NameReleaseNeedsReaderAck, step: step(NameReleaseNeedsReaderAck, 0, "pin released on %s, not on reader completion, abort or expiry"), state: none, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved)
			h.expect(func(tx *Tx) { tx.FenceSource(0, SourceSide); tx.ReleaseSource(0, SourceSide, CauseOther) }, NameReleaseNeedsReaderAck)
			return h
		}},
		{name: NameReleaseNeedsReaderAck + "/ack-without-reads", step: step(NameReleaseNeedsReaderAck, 0, "released on a reader acknowledgement while the reads had not completed (transfer %s)"), state: none, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved)
			h.expect(func(tx *Tx) { tx.FenceSource(0, SourceSide); tx.ReleaseSource(0, SourceSide, CauseReaderAck) }, NameReleaseNeedsReaderAck)
			return h
		}},

		{name: NameReleaseNeedsReaderAck + "/before-activation-applied", step: step(NameReleaseNeedsReaderAck, 0, "released on a reader acknowledgement while the destination's activation command was not yet applied"), state: none, run: func(t *testing.T) *history {
			// The command path: the reads completed and the activation was
			// asked for, but the scheduler core has not applied it yet.
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved, pulling, received, func(tx *Tx) { tx.QueueCommand(0, DestinationSide, DestinationSide, CmdActivate, CauseOther) })
			h.expect(func(tx *Tx) { tx.ReleaseSource(0, SourceSide, CauseReaderAck) }, NameReleaseNeedsReaderAck)
			return h
		}},

		// ---- ExactlyOnceRelease ----
		{name: NameExactlyOnceRelease, step: step(NameExactlyOnceRelease, 0, "%s released twice"), state: none, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, released)
			h.expect(func(tx *Tx) { tx.ReleaseSource(0, SourceSide, CauseAbort) }, NameExactlyOnceRelease)
			return h
		}},
		{name: NameExactlyOnceRelease + "/never-held", step: step(NameExactlyOnceRelease, 0, "%s released but it was never held"), state: none, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept)
			h.expect(func(tx *Tx) { tx.ReleaseSource(0, SourceSide, CauseAbort) }, NameExactlyOnceRelease)
			return h
		}},
		{name: NameExactlyOnceRelease + "/resurrected", step: step(NameExactlyOnceRelease, 0, "%s began again after it ended"), state: none, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, released)
			h.expect(func(tx *Tx) { tx.PinSource(0, SourceSide) }, NameExactlyOnceRelease)
			return h
		}},
		{name: NameExactlyOnceRelease + "/began-twice", step: step(NameExactlyOnceRelease, 0, "%s began twice"), state: state(NameRouterCleanup, -1, d, decodeBooks), run: func(t *testing.T) *history {
			// A decode router that books the same request twice: its
			// ledger then counts the booking twice too.
			h := sf(t)
			h.clean(route, accept, computed, routed)
			h.expect(func(tx *Tx) { tx.RouteDecode(0, dw(tx)) }, NameExactlyOnceRelease, NameRouterCleanup)
			return h
		}},
		{name: NameExactlyOnceRelease + "/after-terminal", step: step(NameExactlyOnceRelease, 0, "%s began after the %s reported its terminal outcome"), state: state(NameInFlightAccounting, 0, d, destNotInFlight), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, func(tx *Tx) {
				tx.WithdrawReservation(0, DestinationSide)
				tx.ReportDecodeOutcome(0, DestinationSide, false)
				tx.Complete(0, DestinationSide)
			})
			h.rec.Terminal[0][DestinationSide] = true
			// A scheduler that grants a reservation to an attempt that already ended.
			h.expect(func(tx *Tx) { tx.RequestReservation(0, DestinationSide); tx.Reserve(0) }, NameExactlyOnceRelease, NameInFlightAccounting)
			return h
		}},

		// ---- BlockCategoriesDisjoint ----
		{name: NameBlockCategoriesDisjoint, step: none, state: state(NameBlockCategoriesDisjoint, -1, p, "active is %d but the requests hold %d"), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept)
			// Counting blocks as active that nobody holds.
			h.expect(func(tx *Tx) { tx.W.W[p].Active++; tx.W.W[p].Free-- }, NameBlockCategoriesDisjoint)
			return h
		}},
		{name: NameBlockCategoriesDisjoint + "/negative", step: none, state: state(NameBlockCategoriesDisjoint, -1, p, categoryNegative), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept)
			// A cache that gives back a block it did not have.
			h.expect(func(tx *Tx) { tx.W.W[p].Cached--; tx.W.W[p].Free++ }, NameBlockCategoriesDisjoint)
			return h
		}},
		{name: NameBlockCategoriesDisjoint + "/sum", step: none, state: state(NameBlockCategoriesDisjoint, -1, p, "categories sum to %d, capacity is %d: %s"), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept)
			// A block freed twice.
			h.expect(func(tx *Tx) { tx.W.W[p].Free++ }, NameBlockCategoriesDisjoint)
			return h
		}},
		{name: NameBlockCategoriesDisjoint + "/pinned", step: none, state: state(NameBlockCategoriesDisjoint, -1, p, "pinned_source is %d but the handoffs pin %d"), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed)
			// A pin left behind by nobody.
			h.expect(func(tx *Tx) { tx.W.W[p].Pinned++; tx.W.W[p].Free-- }, NameBlockCategoriesDisjoint)
			return h
		}},
		{name: NameBlockCategoriesDisjoint + "/prefix", step: none, state: state(NameBlockCategoriesDisjoint, -1, d, "cached prefix is %d but the unlocked prefixes are %d"), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved)
			// A prefix cache that counts a block no handoff's prefix is.
			h.expect(func(tx *Tx) { tx.W.W[d].Prefix++; tx.W.W[d].Free-- }, NameBlockCategoriesDisjoint)
			return h
		}},
		{name: NameBlockCategoriesDisjoint + "/kept", step: none, state: state(NameBlockCategoriesDisjoint, -1, p, "kept cache is %d but the handoffs keep %d"), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, released)
			// A cache that counts a block as the handoff's that no handoff keeps.
			h.expect(func(tx *Tx) { tx.W.W[p].Kept++; tx.W.W[p].Free-- }, NameBlockCategoriesDisjoint)
			return h
		}},

		// ---- CapacityRespected ----
		{name: NameCapacityRespected, step: none, state: state(NameCapacityRespected, -1, d, "%d request slots in use, limit %d"), run: func(t *testing.T) *history {
			h := cfg(t, spec.DestinationFirst, SGLang, 2, 1)
			h.clean(func(tx *Tx) { tx.RoutePrefill(0, pw(tx)); tx.RoutePrefill(1, pw(tx)) },
				func(tx *Tx) {
					for i := 0; i < 2; i++ {
						tx.RouteDecode(i, dw(tx))
						tx.AcceptRequest(i, DestinationSide)
						tx.RequestReservation(i, DestinationSide)
					}
				},
				func(tx *Tx) { tx.Reserve(0) })
			// A scheduler that admits past its request-slot limit.
			h.expect(func(tx *Tx) { tx.Reserve(1) }, NameCapacityRespected)
			return h
		}},
		{name: NameCapacityRespected + "/headroom", step: none, state: state(NameCapacityRespected, -1, d, "headroom %d in use, limit %d"), run: func(t *testing.T) *history {
			h := newHistory(t, shapedConfig(t, spec.DestinationFirst, SGLang, 2, 2, decodeFirst, bindingHeadroom))
			h.clean(func(tx *Tx) {
				for i := 0; i < 2; i++ {
					tx.RouteDecode(i, dw(tx))
					tx.AcceptRequest(i, DestinationSide)
					tx.RequestReservation(i, DestinationSide)
				}
			}, func(tx *Tx) { tx.Reserve(0) })
			// A scheduler that admits past its headroom.
			h.expect(func(tx *Tx) { tx.Reserve(1) }, NameCapacityRespected)
			return h
		}},
		{name: NameCapacityRespected + "/overcommitted", step: none, state: state(NameCapacityRespected, -1, p, "pool overcommitted by %d blocks"), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept)
			// A pool that hands out a block it does not have: free goes
			// below zero while every block is accounted for.
			h.expect(func(tx *Tx) { tx.W.W[p].Free -= 10; tx.W.W[p].Cached += 10 }, NameCapacityRespected)
			return h
		}},
		{name: NameCapacityRespected + "/negative-counter", step: none, state: state(NameCapacityRespected, -1, p, "an admission counter went negative"), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept)
			// A worker that counts a request out twice.
			h.expect(func(tx *Tx) { tx.W.W[p].InFlight -= 2 }, NameCapacityRespected, NameInFlightAccounting)
			return h
		}},

		// ---- DestinationFirstGate ----
		{name: NameDestinationFirstGate, step: step(NameDestinationFirstGate, 0, "prefill dispatched before the destination reserved"), state: none, run: func(t *testing.T) *history {
			h := cfg(t, spec.DestinationFirst, SGLang, 1, 2)
			h.clean(route)
			h.expect(accept, NameDestinationFirstGate)
			return h
		}},

		// ---- RoleCommands ----
		{name: NameRoleCommands, step: step(NameRoleCommands, 0, "a %s-role machine issued a command of the other role"), state: none, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed)
			h.expect(func(tx *Tx) { tx.StartPrefill(0, DestinationSide) }, NameRoleCommands)
			return h
		}},

		// ---- RouterCleanup ----
		{name: NameRouterCleanup, step: step(NameRouterCleanup, 0, "prefill router freed request ownership while the source was still pinned"), state: none, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed)
			// Ownership freed at prefill's terminal token, not at release
			// (reported as a failure, so that the report itself is true).
			h.expect(func(tx *Tx) { tx.ReportSourceOutcome(0, SourceSide, false) }, NameRouterCleanup)
			return h
		}},
		{name: NameRouterCleanup + "/owned", step: none, state: state(NameRouterCleanup, -1, p, "prefill router owns %d requests here but the handoffs hold %d bookings"), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept)
			// A prefill router that owns a request nobody booked.
			h.expect(func(tx *Tx) { tx.W.W[p].Owned++ }, NameRouterCleanup)
			return h
		}},
		{name: NameRouterCleanup + "/source-no-terminal-outcome", step: none, state: state(NameRouterCleanup, 0, p, "the source finished without a terminal outcome: the prefill router still owns the request"), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, released, func(tx *Tx) { tx.Complete(0, SourceSide) })
			h.rec.Terminal[0][SourceSide] = true
			h.expect(func(tx *Tx) {}, NameRouterCleanup)
			return h
		}},
		{name: NameRouterCleanup + "/no-terminal-outcome", step: none, state: state(NameRouterCleanup, 0, d, "the destination finished without a terminal decode outcome: the decode router still books it"), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, func(tx *Tx) {
				tx.WithdrawReservation(0, DestinationSide)
				tx.Complete(0, DestinationSide)
			})
			h.rec.Terminal[0][DestinationSide] = true
			h.expect(func(tx *Tx) {}, NameRouterCleanup)
			return h
		}},
		{name: NameRouterCleanup + "/wrong-outcome", step: none, state: state(NameRouterCleanup, 0, d, "the %s ended as %s but its router was told %s"), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved, pulling, received,
				func(tx *Tx) { tx.ActivateDestination(0, DestinationSide); tx.PublishStored(0, DestinationSide) }, decoded)
			// The destination decoded and said so, truthfully, but the
			// table's terminal state says it failed.
			h.rec.Terminal[0][DestinationSide] = true
			h.rec.Ended[0][DestinationSide] = OutcomeFailed
			h.expect(func(tx *Tx) {}, NameRouterCleanup)
			return h
		}},

		// ---- OutcomeTruthful ----
		{name: NameOutcomeTruthful, step: none, state: state(NameOutcomeTruthful, 0, p, "the source reported a successful release but the transfer is %s"), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed)
			// The lease expired with no reader in sight; the source frees
			// its pin and tells the prefill router the release succeeded.
			h.clean(func(tx *Tx) { tx.FenceSource(0, SourceSide); tx.ReleaseSource(0, SourceSide, CauseExpiry) })
			h.expect(func(tx *Tx) { tx.ReportSourceOutcome(0, SourceSide, true) }, NameOutcomeTruthful)
			return h
		}},
		{name: NameOutcomeTruthful + "/release-not-acknowledged", step: none, state: state(NameOutcomeTruthful, 0, p, "the source reported a successful release but its pin did not end on the reader's acknowledgement"), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved, pulling, received)
			// The reads completed, but the pin ended on the lease, not on
			// the reader's acknowledgement: no reader told the source.
			h.clean(func(tx *Tx) { tx.FenceSource(0, SourceSide); tx.ReleaseSource(0, SourceSide, CauseExpiry) })
			h.expect(func(tx *Tx) { tx.ReportSourceOutcome(0, SourceSide, true) }, NameOutcomeTruthful)
			return h
		}},
		{name: NameOutcomeTruthful + "/success-without-activation", step: none, state: state(NameOutcomeTruthful, 0, d, "the destination reported success but never activated from a completed, valid transfer"), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved, pulling, func(tx *Tx) { tx.FailTransfer(0) },
				func(tx *Tx) { tx.ReleaseDestination(0, DestinationSide, CauseAbort) })
			// The pull failed and the pages went back, yet the router hears done.
			h.expect(func(tx *Tx) { tx.ReportDecodeOutcome(0, DestinationSide, true) }, NameOutcomeTruthful)
			return h
		}},
		{name: NameOutcomeTruthful + "/failure-after-activation", step: none, state: state(NameOutcomeTruthful, 0, d, "the destination reported failure but the attempt activated from a completed transfer"), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved, pulling, received,
				func(tx *Tx) { tx.ActivateDestination(0, DestinationSide); tx.PublishStored(0, DestinationSide) },
				func(tx *Tx) { tx.ReleaseActive(0, DestinationSide) })
			// The KV arrived and decoded; a failure report would have the
			// frontend retry a handoff that already moved its KV.
			h.expect(func(tx *Tx) { tx.ReportDecodeOutcome(0, DestinationSide, false) }, NameOutcomeTruthful)
			return h
		}},

		// ---- IndexMatchesCache ----
		{name: NameIndexMatchesCache, step: none, state: state(NameIndexMatchesCache, 0, p, "the index advertises the source's blocks but the worker holds them neither pinned nor cached (source holds %s)"), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route)
			// A source that advertises its prefix when the request arrives,
			// before its compute has produced any KV.
			h.expect(func(tx *Tx) { accept(tx); tx.PublishCached(0, SourceSide) }, NameIndexMatchesCache)
			return h
		}},
		{name: NameIndexMatchesCache + "/unadvertised-pin", step: none, state: state(NameIndexMatchesCache, 0, p, "the source's computed blocks are pinned but the index does not advertise them: computed KV is published at compute"), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept)
			// The pin step without its publish: the computed KV is valid
			// and held, and the index does not know it (the accounting
			// table publishes computed source KV as any computed KV).
			h.expect(func(tx *Tx) {
				tx.FinishCompute(0)
				tx.PinSource(0, SourceSide)
				tx.RegisterSource(0, SourceSide)
				tx.ReportComputeDone(0, SourceSide)
				tx.AnnouncePinned(0, SourceSide)
			}, NameIndexMatchesCache)
			return h
		}},
		{name: NameIndexMatchesCache + "/destination", step: none, state: state(NameIndexMatchesCache, 0, d, dstNotHeld), run: func(t *testing.T) *history {
			h := sf(t)
			happyPath(h, spec.SourceFirst)
			// A cache that evicts the received blocks and publishes no Removed.
			h.expect(func(tx *Tx) {
				r := tx.W.reserve(0, d)
				tx.W.H[0].DstKept = false
				tx.W.W[d].Kept -= r
				tx.W.W[d].Free += r
			}, NameIndexMatchesCache)
			return h
		}},

		// ---- InFlightAccounting ----
		{name: NameInFlightAccounting, step: step(NameInFlightAccounting, 0, "%s counted the request in flight twice"), state: none, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept)
			h.expect(func(tx *Tx) { tx.AcceptRequest(0, SourceSide) }, NameInFlightAccounting)
			return h
		}},
		{name: NameInFlightAccounting + "/counted-out-twice", step: step(NameInFlightAccounting, 0, "%s counted out a request that was not in flight"), state: none, run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route)
			h.expect(func(tx *Tx) { tx.Complete(0, SourceSide) }, NameInFlightAccounting)
			return h
		}},
		{name: NameInFlightAccounting + "/ledger", step: none, state: state(NameInFlightAccounting, -1, p, "in-flight count is %d but it owns %d requests"), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept)
			// A worker that counts a request nobody sent it.
			h.expect(func(tx *Tx) { tx.W.W[p].InFlight++ }, NameInFlightAccounting)
			return h
		}},
		{name: NameInFlightAccounting + "/source-not-counted", step: none, state: state(NameInFlightAccounting, 0, p, "the source holds the request but does not count it in flight"), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route)
			h.expect(func(tx *Tx) { tx.StartPrefill(0, SourceSide) }, NameInFlightAccounting)
			return h
		}},
		{name: NameInFlightAccounting + "/queued-not-counted", step: none, state: state(NameInFlightAccounting, 1, p, "the source holds the request but does not count it in flight"), run: func(t *testing.T) *history {
			// A prefill that queues for blocks holds none, yet it is the
			// worker's request.
			h := newHistory(t, shapedConfig(t, spec.SourceFirst, VLLM, 2, 2, decodeFirst, smallPrefillPool))
			h.clean(route, accept, func(tx *Tx) { tx.RoutePrefill(1, pw(tx)) })
			h.expect(func(tx *Tx) { tx.StartPrefill(1, SourceSide) }, NameInFlightAccounting)
			return h
		}},
		{name: NameInFlightAccounting + "/destination-not-counted", step: none, state: state(NameInFlightAccounting, 0, d, destNotInFlight), run: func(t *testing.T) *history {
			h := sf(t)
			h.clean(route, accept, computed)
			h.expect(func(tx *Tx) { tx.RouteDecode(0, dw(tx)); tx.RequestReservation(0, DestinationSide) }, NameInFlightAccounting)
			return h
		}},
		{name: NameInFlightAccounting + "/terminal-still-counted", step: none, state: state(NameInFlightAccounting, 0, d, "the %s finished but still counts the request in flight"), run: func(t *testing.T) *history {
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

// bindingHeadroom gives the decode worker the headroom of one handoff
// only: its second reservation must wait for the first to end.
func bindingHeadroom(c *Config) {
	for i := range c.Workers {
		if c.Workers[i].Role == DecodeWorker {
			c.Workers[i].Headroom = c.Handoffs[0].HeadroomTokens
		}
	}
}

// smallPrefillPool gives the prefill worker room for one handoff's
// compute (3 blocks) and 2 more: a second prefill queues.
func smallPrefillPool(c *Config) {
	for i := range c.Workers {
		if c.Workers[i].Role == PrefillWorker {
			c.Workers[i].Capacity = 5
		}
	}
}

func TestInvariants_EachCanFire(t *testing.T) {
	for _, order := range []struct {
		name        string
		decodeFirst bool
	}{{"prefill-listed-first", false}, {"decode-listed-first", true}} {
		t.Run(order.name, func(t *testing.T) {
			for _, tc := range firings(order.decodeFirst) {
				t.Run(tc.name, func(t *testing.T) {
					h := tc.run(t)
					if h.fastStep != tc.step {
						t.Errorf("CheckStep reported %v\nwant %v", h.fastStep, tc.step)
					}
					if h.fastState != tc.state {
						t.Errorf("CheckState reported %v\nwant %v", h.fastState, tc.state)
					}
				})
			}
		})
	}
}

// elsewhereFiring is a history that breaks a check of an invariant the
// checker judges itself (Quiescence, FaultFreeCompletion, AttemptIsolation):
// run returns what the invariant's own function reports on it.
type elsewhereFiring struct {
	name string
	want verdict
	run  func(t *testing.T) *Violation
}

func elsewhereFirings() []elsewhereFiring {
	sf := func(t *testing.T) *history { return newHistory(t, testConfig(t, spec.SourceFirst, VLLM, 1, 2)) }
	return []elsewhereFiring{
		{name: NameQuiescence + "/not-terminal", want: verdict{NameQuiescence, "nothing can happen any more but the %s is not terminal", 0, 0}, run: func(t *testing.T) *Violation {
			// Both sides placed, the destination terminal, the source (on
			// worker 0) not.
			h := sf(t)
			h.clean(route, accept, computed, routed)
			h.rec.Terminal[0][DestinationSide] = true
			return Quiescence(&h.w, &h.rec)
		}},
		{name: NameQuiescence + "/destination-not-terminal", want: verdict{NameQuiescence, "nothing can happen any more but the %s is not terminal", 0, 1}, run: func(t *testing.T) *Violation {
			h := sf(t)
			h.clean(route, accept, computed, routed)
			h.rec.Terminal[0][SourceSide] = true
			return Quiescence(&h.w, &h.rec)
		}},
		{name: NameQuiescence + "/held", want: verdict{NameQuiescence, "nothing can happen any more but resources are still held: %s", -1, -1}, run: func(t *testing.T) *Violation {
			h := sf(t)
			h.clean(route, accept, computed)
			h.rec.Terminal[0] = [2]bool{true, true}
			return Quiescence(&h.w, &h.rec)
		}},
		{name: NameFaultFreeCompletion, want: verdict{NameFaultFreeCompletion, "no fault happened, yet the %s ended %s", 0, 1}, run: func(t *testing.T) *Violation {
			// The source released after its reads; the destination gave up.
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved, pulling, received, func(tx *Tx) {
				tx.ReleaseSource(0, SourceSide, CauseReaderAck)
				tx.ReportSourceOutcome(0, SourceSide, true)
				tx.ReleaseDestination(0, DestinationSide, CauseAbort)
				tx.ReportDecodeOutcome(0, DestinationSide, false)
			})
			return FaultFreeCompletion(&h.w)
		}},
		{name: NameAttemptIsolation, want: verdict{NameAttemptIsolation, "a stale fact to the %s changed the world", 0, 0}, run: func(t *testing.T) *Violation {
			h := sf(t)
			h.clean(route)
			before := h.w
			before.H[0].Ch[SourceSide].Send(MsgReaderCompleted)
			after := before
			after.H[0].Ch[SourceSide].Take(0)
			after.H[0].Announced = true
			return AttemptIsolation(&before, &after, 0, SourceSide, 0)
		}},
	}
}

func TestInvariants_ElsewhereChecksFire(t *testing.T) {
	for _, tc := range elsewhereFirings() {
		t.Run(tc.name, func(t *testing.T) {
			if got := verdictOf(tc.run(t)); got != tc.want {
				t.Fatalf("reported %v\nwant %v", got, tc.want)
			}
		})
	}
}

// violateCall is one check of invariants.go: the invariant it belongs to
// and the pattern of its detail.
type violateCall struct{ invariant, check string }

// violateCalls parses invariants.go and returns every violate call, with
// the invariant name constant resolved to its value.
func violateCalls(t *testing.T) []violateCall {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "invariants.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, sp := range gd.Specs {
			vs := sp.(*ast.ValueSpec)
			for i, id := range vs.Names {
				if i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						names[id.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			}
		}
	}
	var out []violateCall
	ast.Inspect(f, func(n ast.Node) bool {
		c, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if id, ok := c.Fun.(*ast.Ident); !ok || id.Name != "violate" {
			return true
		}
		inv, ok1 := c.Args[0].(*ast.Ident)
		lit, ok2 := c.Args[3].(*ast.BasicLit)
		if !ok1 || !ok2 || lit.Kind != token.STRING || names[inv.Name] == "" {
			t.Errorf("a violate call whose invariant is not a name constant or whose format is not a literal: %v", c.Args)
			return true
		}
		check, _ := strconv.Unquote(lit.Value)
		out = append(out, violateCall{names[inv.Name], check})
		return true
	})
	return out
}

// Every check of invariants.go (every violate call) is what the explorer's
// fast path reports first on one firing history, or, for an invariant the
// checker judges itself, what its own function reports on one. A check
// added without a history that makes it fire fails here, by name; so does
// a check whose history stopped reaching it.
func TestInvariants_EveryCheckFires(t *testing.T) {
	calls := violateCalls(t)
	if len(calls) < 50 {
		t.Fatalf("found only %d violate calls in invariants.go: the parse went wrong", len(calls))
	}
	seen := map[violateCall]bool{}
	for _, c := range calls {
		if seen[c] {
			t.Errorf("%s: two checks share the pattern %q: reports cannot tell them apart", c.invariant, c.check)
		}
		seen[c] = true
	}
	fired := map[violateCall]bool{}
	for _, tc := range firings(false) {
		h := tc.run(t)
		for _, v := range []verdict{h.fastStep, h.fastState} {
			fired[violateCall{v.Invariant, v.Check}] = true
		}
	}
	for _, tc := range elsewhereFirings() {
		v := verdictOf(tc.run(t))
		fired[violateCall{v.Invariant, v.Check}] = true
	}
	for _, c := range calls {
		if !fired[c] {
			t.Errorf("%s: no firing history makes its check %q the first violation reported", c.invariant, c.check)
		}
	}
}

// Every half of every registered invariant is what the explorer's own fast
// path reports first on one of the firing histories: an invariant left out
// of CheckStep or CheckState fails here, with its name.
func TestInvariants_FastPathJudgesEveryRegisteredHalf(t *testing.T) {
	steps, states := map[string]bool{}, map[string]bool{}
	for _, tc := range firings(false) {
		steps[tc.step.Invariant], states[tc.state.Invariant] = true, true
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
	// A handoff never placed has no record to be terminal.
	w := NewWorld(testConfig(t, spec.SourceFirst, VLLM, 1, 2))
	if v := Quiescence(&w, &Records{}); v != nil {
		t.Fatalf("a world where nothing was placed fails Quiescence: %v", v)
	}
}

// A world of MaxHandoffs handoffs in mixed states, either role listed
// first: every half of every invariant runs on every step of it without a
// false alarm, and a check on the last handoff is reached (every loop over
// the handoffs runs to the end, and no further).
func TestInvariants_FourHandoffsMixedStates(t *testing.T) {
	for _, order := range orders {
		t.Run(order.name, func(t *testing.T) {
			h := newHistory(t, shapedConfig(t, spec.SourceFirst, VLLM, MaxHandoffs, 4, order.decodeFirst, nil))
			// Handoff 0 succeeds, 1 is mid-transfer, 2 is computing, 3 is
			// routed to prefill only.
			happyPath(h, spec.SourceFirst)
			h.clean(upTo(1, stPulling)...)
			h.clean(upTo(2, stComputing)...)
			h.clean(upTo(3, stRouted)...)
			if got := StateViolations(&h.w, &h.rec); len(got) != 0 {
				t.Fatalf("a clean world of %d handoffs violates %v", MaxHandoffs, got)
			}
			// Nothing is quiescent or done yet: handoff 1 is the first
			// placed record that is not terminal.
			if got := verdictOf(Quiescence(&h.w, &h.rec)); got.Handoff != 1 || got.Invariant != NameQuiescence {
				t.Errorf("Quiescence reports %v, want handoff 1 not terminal", got)
			}
			if got := verdictOf(FaultFreeCompletion(&h.w)); got.Handoff != 1 {
				t.Errorf("FaultFreeCompletion reports %v, want handoff 1", got)
			}
			if h.w.DescribeHeld() == "" {
				t.Error("nothing described as held on a world that holds a pin and a reservation")
			}
			// The last handoff breaks InFlightAccounting: the loops reach it.
			h.expect(startPrefill(3), NameInFlightAccounting)
			want := verdict{NameInFlightAccounting, "the source holds the request but does not count it in flight", 3, h.w.cfg.d.prefill[0]}
			if h.fastState != want || h.fastStep != (verdict{}) {
				t.Errorf("fast paths reported %v and %v, want none and %v", h.fastStep, h.fastState, want)
			}
		})
	}
}

// The exported state checks answer as the registry's state halves do, on
// every firing history's last world.
func TestInvariants_ExportedStateChecksMatchTheRegistry(t *testing.T) {
	exported := map[string]func(*World, *Records) *Violation{
		NameReservationCountsAtOnce:  func(w *World, _ *Records) *Violation { return ReservationCountsAtOnce(w) },
		NameBlockCategoriesDisjoint:  func(w *World, _ *Records) *Violation { return BlockCategoriesDisjoint(w) },
		NameCapacityRespected:        func(w *World, _ *Records) *Violation { return CapacityRespected(w) },
		NameAtomicPrefillPin:         func(w *World, _ *Records) *Violation { return AtomicPrefillPin(w) },
		NameComputeLoadIndependent:   func(w *World, _ *Records) *Violation { return ComputeLoadState(w) },
		NameNoStoredBeforeActivation: func(w *World, _ *Records) *Violation { return NoStoredState(w) },
		NameInFlightAccounting:       InFlightAccounting,
		NameRouterCleanup:            RouterCleanup,
		NameOutcomeTruthful:          func(w *World, _ *Records) *Violation { return OutcomeTruthful(w) },
		NameIndexMatchesCache:        func(w *World, _ *Records) *Violation { return IndexMatchesCache(w) },
	}
	fired := map[string]bool{}
	for _, tc := range firings(false) {
		h := tc.run(t)
		for name, check := range exported {
			inv, _ := LookupInvariant(name)
			want := verdictOf(inv.JudgeState(&h.w, &h.rec))
			if got := verdictOf(check(&h.w, &h.rec)); got != want {
				t.Errorf("%s: the exported check of %s reports %v, the registry %v", tc.name, name, got, want)
			}
			// Without records (a caller that knows no protocol state), the
			// checks that need them are skipped, never a crash.
			if got, want := verdictOf(check(&h.w, nil)), verdictOf(inv.JudgeState(&h.w, nil)); got != want {
				t.Errorf("%s: without records the exported check of %s reports %v, the registry %v", tc.name, name, got, want)
			}
			if want != (verdict{}) {
				fired[name] = true
			}
		}
	}
	for name := range exported {
		if !fired[name] {
			t.Errorf("%s: no firing history breaks it, the comparison shows nothing", name)
		}
	}
}

// Each category of a worker's pool is judged negative on its own (a free
// pool below zero is an overcommitted one, judged by CapacityRespected),
// and so is each admission counter.
func TestInvariants_EachCounterJudgedNegative(t *testing.T) {
	for _, tc := range []struct {
		name  string
		poke  func(k *Worker)
		check verdict
	}{
		{"cached", func(k *Worker) { k.Cached--; k.Free++ }, verdict{NameBlockCategoriesDisjoint, "a category is negative: %s", -1, 0}},
		{"prefix", func(k *Worker) { k.Prefix--; k.Free++ }, verdict{NameBlockCategoriesDisjoint, "a category is negative: %s", -1, 0}},
		{"active", func(k *Worker) { k.Active--; k.Free++ }, verdict{NameBlockCategoriesDisjoint, "a category is negative: %s", -1, 0}},
		{"pinned", func(k *Worker) { k.Pinned--; k.Free++ }, verdict{NameBlockCategoriesDisjoint, "a category is negative: %s", -1, 0}},
		{"reserved", func(k *Worker) { k.Reserved--; k.Free++ }, verdict{NameBlockCategoriesDisjoint, "a category is negative: %s", -1, 0}},
		{"free", func(k *Worker) { k.Cached += k.Free + 1; k.Free = -1 }, verdict{NameCapacityRespected, "pool overcommitted by %d blocks", -1, 0}},
		{"slots", func(k *Worker) { k.SlotsUsed-- }, verdict{NameCapacityRespected, "an admission counter went negative", -1, 0}},
		{"headroom", func(k *Worker) { k.HeadroomUsed-- }, verdict{NameCapacityRespected, "an admission counter went negative", -1, 0}},
		{"in-flight", func(k *Worker) { k.InFlight-- }, verdict{NameCapacityRespected, "an admission counter went negative", -1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// On the prefill worker 0: no decode ledger is judged before.
			w := NewWorld(testConfig(t, spec.SourceFirst, VLLM, 1, 2))
			tc.poke(&w.W[0])
			if got := verdictOf(CheckState(&w, &Records{})); got != tc.check {
				t.Fatalf("CheckState reported %v\nwant %v", got, tc.check)
			}
		})
	}
}

// The only causes that end a pin are reader completion, abort and expiry.
func TestInvariants_ReleaseCauses(t *testing.T) {
	for _, tc := range []struct {
		cause Cause
		ok    bool
	}{{CauseReaderAck, true}, {CauseAbort, true}, {CauseExpiry, true}, {CauseDecodeDone, false}, {CauseOther, false}} {
		t.Run(tc.cause.String(), func(t *testing.T) {
			h := newHistory(t, testConfig(t, spec.SourceFirst, VLLM, 1, 2))
			h.clean(upTo(0, stReceived)...)
			release := func(tx *Tx) { tx.ReleaseSource(0, SourceSide, tc.cause) }
			if tc.ok {
				h.clean(release)
				return
			}
			h.expect(release, NameReleaseNeedsReaderAck)
			if h.fastStep.Check != "pin released on %s, not on reader completion, abort or expiry" {
				t.Fatalf("CheckStep reported %v", h.fastStep)
			}
		})
	}
}

func TestInvariants_ViolationError(t *testing.T) {
	for _, tc := range []struct {
		v    Violation
		want string
	}{
		{Violation{Invariant: "X", Handoff: -1, Worker: -1, Detail: "d"}, "X: d"},
		{Violation{Invariant: "X", Handoff: 0, Worker: -1, Detail: "d"}, "X: handoff 0: d"},
		{Violation{Invariant: "X", Handoff: -1, Worker: 0, Detail: "d"}, "X: worker 0: d"},
		{Violation{Invariant: "X", Handoff: 2, Worker: 1, Detail: "d"}, "X: handoff 2 worker 1: d"},
	} {
		if got := tc.v.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
	v := violate(NameCapacityRespected, -1, 3, "pool overcommitted by %d blocks", 2)
	if v.Detail != "pool overcommitted by 2 blocks" || v.Check != "pool overcommitted by %d blocks" || v.Worker != 3 || v.Handoff != -1 {
		t.Errorf("violate gave %+v", v)
	}
}

// The derived lists and lookups of the registry.
func TestInvariants_Registry(t *testing.T) {
	var safety, progress []string
	for i := range Invariants {
		if Invariants[i].Kind == Progress {
			progress = append(progress, Invariants[i].Name)
		} else {
			safety = append(safety, Invariants[i].Name)
		}
	}
	if !slices.Equal(SafetyInvariants, safety) || !slices.Equal(ProgressInvariants, progress) {
		t.Errorf("SafetyInvariants %v, ProgressInvariants %v", SafetyInvariants, ProgressInvariants)
	}
	if want := []string{NameQuiescence, NameEventuallyDrained, NameFaultFreeCompletion}; !slices.Equal(ProgressInvariants, want) {
		t.Errorf("ProgressInvariants %v, want %v", ProgressInvariants, want)
	}
	if inv, ok := LookupInvariant(NameRouterCleanup); !ok || inv.Name != NameRouterCleanup || !inv.HasStep() || !inv.HasState() {
		t.Errorf("LookupInvariant(RouterCleanup) = %v, %v", inv, ok)
	}
	if _, ok := LookupInvariant("NoSuchInvariant"); ok {
		t.Error("LookupInvariant found an invariant that does not exist")
	}
	// An invariant without a half judges nothing through it.
	w := NewWorld(testConfig(t, spec.SourceFirst, VLLM, 1, 2))
	w.W[0].Free++
	st, _ := LookupInvariant(NameBlockCategoriesDisjoint)
	if st.JudgeStep(&w, &Journal{N: 1}) != nil || st.JudgeState(&w, nil) == nil {
		t.Error("a state invariant judged a step, or missed a broken state")
	}
	steps := 0
	for i := range Invariants {
		if Invariants[i].HasStep() {
			steps++
		}
	}
	if len(StepInvariants) != steps {
		t.Errorf("%d step invariants listed, the registry has %d step halves", len(StepInvariants), steps)
	}
	kinds := map[InvariantKind]string{SafetyStep: "safety (step)", SafetyState: "safety (state)", SafetyStepAndState: "safety (step and state)", Progress: "progress"}
	for k, s := range kinds {
		if k.String() != s {
			t.Errorf("kind %d is %q, want %q", k, k.String(), s)
		}
	}
}

// What the lifecycle allows raises no alarm: each history below is the
// allowed neighbour of a firing history (the same step, with the one
// condition that makes it safe), and every step of it is clean.
func TestInvariants_AllowedNeighboursAreClean(t *testing.T) {
	for _, order := range orders {
		for _, tc := range allowedNeighbours() {
			t.Run(order.name+"/"+tc.name, func(t *testing.T) {
				h := newHistory(t, tc.cfg(t, order.decodeFirst))
				h.clean(tc.steps...)
			})
		}
	}
}

// neighbour is a history the lifecycle allows next to one that breaks an
// invariant: name starts with the invariant's name.
type neighbour struct {
	name  string
	cfg   func(*testing.T, bool) *Config
	steps []func(*Tx)
}

func allowedNeighbours() []neighbour {
	src, dst := SourceSide, DestinationSide
	return []neighbour{
		// A registration fenced before its reservation ended: the
		// transfer may start, and will fail.
		{"TransferNeedsReservation/fenced-registration", vllm1, upTo(0, stReserved, fenceDestination, releaseDestination, path(0)[stPulling-1])},
		// A pin ends mid-transfer once its registration is fenced.
		{"SourcePinnedUntilRead/fenced-then-released", vllm1, upTo(0, stPulling, released)},
		// Pages are freed mid-transfer once their registration is fenced,
		// or after the transfer finished.
		{"DestinationHeldWhileWritten/fenced-then-freed", vllm1, upTo(0, stPulling, fenceDestination, releaseDestination)},
		{"DestinationHeldWhileWritten/freed-after-transfer", vllm1, upTo(0, stReceived, releaseDestination)},
		// A failed transfer's pages are freed; the destination never activates.
		{"FailedTransferNeverActivates/failed-then-freed", vllm1, upTo(0, stPulling, func(tx *Tx) { tx.FailTransfer(0) }, releaseDestination)},
		// A source that reports failure while computing: its compute load
		// and its booking end together, the compute may finish later.
		{"ComputeLoadIndependent/failed-while-computing", vllm1, upTo(0, stComputing, func(tx *Tx) { tx.ReportSourceOutcome(0, src, false) },
			func(tx *Tx) { tx.StopPrefill(0, src); tx.Complete(0, src) })},
		// Source-first dispatches prefill before any reservation.
		{"DestinationFirstGate/source-first", vllm1, upTo(0, stComputing)},
		// Destination-first dispatches it after the reservation.
		{"DestinationFirstGate/after-reservation", conf(spec.DestinationFirst, SGLang, 1, 2, nil),
			upTo(0, stRouted, func(tx *Tx) { tx.AcceptRequest(0, src) }, path(0)[stDecodeRouted-1], path(0)[stReserved-1], startPrefill(0))},
		// A pushing source that sees its own writes complete releases on it.
		{"ReleaseNeedsReaderAck/push", vllm1, upTo(0, stReserved, func(tx *Tx) { tx.StartTransfer(0, src, src) }, received,
			func(tx *Tx) { tx.ReleaseSource(0, src, CauseReaderAck) })},
		// The decode worker restarts mid-transfer: its reservation,
		// booking and in-flight count end with it.
		{"Restart/decode-mid-transfer", sglang1, upTo(0, stPulling, restartDecode, received)},
		// The prefill worker restarts mid-transfer: pin, booking and
		// in-flight count end with it; the transfer fails.
		{"Restart/prefill-mid-transfer", vllm1, upTo(0, stPulling, restartPrefill, received, func(tx *Tx) { tx.ReleaseDestination(0, dst, CauseAbort) })},
		// A restart of a worker with background load and a cached prefix.
		{"Restart/background", background1, upTo(0, stPinned, restartDecode, path(0)[stDecodeRouted-1], path(0)[stReserved-1])},
		// Background load comes and goes.
		{"Background/free-and-occupy", background1, []func(*Tx){freeBackground, func(tx *Tx) { tx.OccupyBackground(dw(tx)) }}},
		// Two handoffs share one slot: the second waits, then runs.
		{"Promote/one-slot", oneSlot2, append(upTo(0, stActivated), append(path(1)[:stActivated],
			func(tx *Tx) { tx.ReleaseActive(0, dst) }, func(tx *Tx) { tx.Promote(1) })...)},
		// An engine that cannot reserve refuses; both sides end failed.
		{"Refuse/trtllm", trtllm1, upTo(0, stDecodeRouted, func(tx *Tx) {
			tx.Refuse(0)
			tx.ReportDecodeOutcome(0, dst, false)
			tx.Complete(0, dst)
		}, released, func(tx *Tx) { tx.ReportSourceOutcome(0, src, false); tx.Complete(0, src) })},
	}
}

// A world of MaxWorkers workers, two prefill and three decode, decode
// listed first and last: the happy path on the last of each role is clean,
// and every per-worker loop runs to the last worker and no further.
func TestInvariants_FiveWorkers(t *testing.T) {
	hits := []Tokens{16}
	c := &Config{
		Policy: spec.SourceFirst, Engine: SGLang,
		Workers: []WorkerConfig{
			{Role: DecodeWorker, Capacity: 12, Slots: 2, Headroom: 1024, PrefixHit: hits},
			{Role: PrefillWorker, Capacity: 12},
			{Role: DecodeWorker, Capacity: 12, Slots: 2, Headroom: 1024, PrefixHit: hits},
			{Role: PrefillWorker, Capacity: 12},
			{Role: DecodeWorker, Capacity: 12, Slots: 2, Headroom: 1024, PrefixHit: hits},
		},
		Handoffs: []HandoffConfig{{PromptTokens: 48, HeadroomTokens: 512}},
		Linear:   &LinearProfile{BytesPerToken: 1024, BlockSize: 16},
	}
	if err := c.Prepare(); err != nil {
		t.Fatal(err)
	}
	h := newHistory(t, c)
	h.clean(func(tx *Tx) { tx.RoutePrefill(0, 3); tx.DeliverRequest(0) }, accept, computed, func(tx *Tx) {
		tx.RouteDecode(0, 4)
		tx.AcceptRequest(0, DestinationSide)
		tx.RequestReservation(0, DestinationSide)
	}, reserved, pulling, received)
	// The last decode worker's ledger, broken, is reported.
	h.expect(func(tx *Tx) { tx.W.W[4].StoredBlocks++ }, NameNoStoredBeforeActivation)
	if want := (verdict{NameNoStoredBeforeActivation, "the KV index got %d Stored blocks, the handoffs published %d", -1, 4}); h.fastState != want {
		t.Fatalf("CheckState reported %v, want %v", h.fastState, want)
	}
	h.w.W[4].StoredBlocks--
	h.clean(func(tx *Tx) { tx.ActivateDestination(0, DestinationSide); tx.PublishStored(0, DestinationSide) },
		acked,
		decoded,
		func(tx *Tx) { tx.Restart(4) })
	h.rec.Terminal[0] = [2]bool{true, true}
	if v := Quiescence(&h.w, &h.rec); v != nil {
		t.Fatalf("Quiescence: %v", v)
	}
}

// An invariant whose halves do not match its kind is refused (init panics
// on one): each kind with each wrong set of halves.
func TestInvariants_HalvesMatchTheKind(t *testing.T) {
	step := func(*World, *Journal) *Violation { return nil }
	state := func(*World, *Records, *allHoldings) *Violation { return nil }
	type halves struct {
		step  func(*World, *Journal) *Violation
		state func(*World, *Records, *allHoldings) *Violation
	}
	sets := map[string]halves{"none": {}, "step": {step, nil}, "state": {nil, state}, "both": {step, state}}
	for _, tc := range []struct {
		kind      InvariantKind
		elsewhere bool
		ok        string // the one set of halves that is consistent, "" for none
	}{
		{SafetyStep, false, "step"}, {SafetyState, false, "state"}, {SafetyStepAndState, false, "both"}, {Progress, false, ""},
		{SafetyStep, true, "none"}, {Progress, true, "none"}, {SafetyState, true, ""}, {SafetyStepAndState, true, ""},
	} {
		for name, hv := range sets {
			inv := Invariant{Kind: tc.kind, step: hv.step, state: hv.state}
			if tc.elsewhere {
				inv.Elsewhere = "the checker"
			}
			if got := inv.consistent(); got != (name == tc.ok) {
				t.Errorf("%v (elsewhere %v) with halves %s: consistent() = %v", tc.kind, tc.elsewhere, name, got)
			}
		}
	}
}
