package model

import (
	"slices"
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

// expect applies a last step and demands exactly the named invariants fire.
func (h *history) expect(last func(tx *Tx), want ...string) {
	h.t.Helper()
	got := h.step(last)
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

// Each invariant of LIFECYCLE.md section 4 fires on a small history built
// to break it, and (where the breakage does not imply another) only it.
func TestInvariants_EachCanFire(t *testing.T) {
	sf := func(t *testing.T) *history { return newHistory(t, testConfig(t, spec.SourceFirst, VLLM, 1, 2)) }
	cases := []struct {
		name string
		run  func(t *testing.T)
	}{
		{NameTransferNeedsReservation, func(t *testing.T) {
			h := sf(t)
			h.clean(route, accept, computed, routed)
			h.expect(pulling, NameTransferNeedsReservation)
		}},
		{NameTransferNeedsReservation + "/unreserved-registration", func(t *testing.T) {
			h := sf(t)
			h.clean(route, accept, computed, routed, func(tx *Tx) { tx.RegisterDestination(0, DestinationSide) })
			h.expect(pulling, NameTransferNeedsReservation)
		}},
		{NameSourcePinnedUntilRead, func(t *testing.T) {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved)
			h.expect(func(tx *Tx) { tx.ReleaseSource(0, SourceSide, CauseAbort) }, NameSourcePinnedUntilRead)
		}},
		{NameNoActivationFromInvalidKv, func(t *testing.T) {
			// Activated pages must be published in the activation step, and
			// pages without valid KV must not be: activating from invalid KV
			// breaks NoStoredBeforeActivation too, whichever it does.
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved, pulling)
			h.expect(func(tx *Tx) { tx.ActivateDestination(0, DestinationSide) }, NameNoActivationFromInvalidKv, NameNoStoredBeforeActivation)
		}},
		{NameDestinationHeldWhileWritten, func(t *testing.T) {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved, pulling)
			h.expect(func(tx *Tx) { tx.ReleaseDestination(0, DestinationSide, CauseAbort) }, NameDestinationHeldWhileWritten)
		}},
		{NameFailedTransferNeverActivates, func(t *testing.T) {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved, pulling, func(tx *Tx) { tx.FailTransfer(0) })
			h.expect(func(tx *Tx) { tx.ActivateDestination(0, DestinationSide) }, NameFailedTransferNeverActivates, NameNoStoredBeforeActivation)
		}},
		{NameReservationCountsAtOnce, func(t *testing.T) {
			h := sf(t)
			h.clean(route, accept, computed, routed)
			// A scheduler that reserves pages but reports them as free.
			h.expect(func(tx *Tx) {
				reserved(tx)
				r := tx.W.reserve(0, 1)
				tx.W.W[1].Reserved -= r
				tx.W.W[1].Free += r
			}, NameReservationCountsAtOnce)
		}},
		{NameNoStoredBeforeActivation, func(t *testing.T) {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved)
			h.expect(func(tx *Tx) { tx.PublishStored(0, DestinationSide) }, NameNoStoredBeforeActivation)
		}},
		{NameNoStoredBeforeActivation + "/never", func(t *testing.T) {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved, pulling, func(tx *Tx) { tx.CompleteTransfer(0) })
			h.expect(func(tx *Tx) { tx.ActivateDestination(0, DestinationSide) }, NameNoStoredBeforeActivation)
		}},
		{NameNoStoredBeforeActivation + "/twice", func(t *testing.T) {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved, pulling, func(tx *Tx) { tx.CompleteTransfer(0) },
				func(tx *Tx) { tx.ActivateDestination(0, DestinationSide); tx.PublishStored(0, DestinationSide) })
			h.expect(func(tx *Tx) { tx.PublishStored(0, DestinationSide) }, NameNoStoredBeforeActivation)
		}},
		{NameAtomicPrefillPin, func(t *testing.T) {
			h := sf(t)
			h.clean(route)
			h.expect(func(tx *Tx) {
				tx.AcceptRequest(0, SourceSide)
				tx.StartPrefill(0, SourceSide)
				tx.PinSource(0, SourceSide)
			}, NameAtomicPrefillPin)
		}},
		{NameAtomicPrefillPin + "/unpinned-completion", func(t *testing.T) {
			// Compute finished with nothing pinned: the occupancy did not
			// stay pinned either, so ComputeLoadIndependent fires with it.
			h := sf(t)
			h.clean(route, accept)
			h.expect(func(tx *Tx) { tx.FinishCompute(0); tx.ReportComputeDone(0, SourceSide) }, NameAtomicPrefillPin, NameComputeLoadIndependent)
		}},
		{NameComputeLoadIndependent, func(t *testing.T) {
			h := sf(t)
			h.clean(route, accept)
			h.expect(func(tx *Tx) { tx.FinishCompute(0); tx.PinSource(0, SourceSide); tx.RegisterSource(0, SourceSide) }, NameComputeLoadIndependent)
		}},
		{NameComputeLoadIndependent + "/early-fall", func(t *testing.T) {
			h := sf(t)
			h.clean(route)
			h.expect(func(tx *Tx) {
				tx.AcceptRequest(0, SourceSide)
				tx.StartPrefill(0, SourceSide)
				tx.ReportComputeDone(0, SourceSide)
			}, NameComputeLoadIndependent)
		}},
		{NameReleaseNeedsReaderAck, func(t *testing.T) {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved)
			h.expect(func(tx *Tx) { tx.FenceSource(0, SourceSide); tx.ReleaseSource(0, SourceSide, CauseOther) }, NameReleaseNeedsReaderAck)
		}},
		{NameReleaseNeedsReaderAck + "/ack-without-reads", func(t *testing.T) {
			h := sf(t)
			h.clean(route, accept, computed, routed, reserved)
			h.expect(func(tx *Tx) { tx.FenceSource(0, SourceSide); tx.ReleaseSource(0, SourceSide, CauseReaderAck) }, NameReleaseNeedsReaderAck)
		}},
		{NameExactlyOnceRelease, func(t *testing.T) {
			h := sf(t)
			h.clean(route, accept, computed, func(tx *Tx) { tx.FenceSource(0, SourceSide); tx.ReleaseSource(0, SourceSide, CauseAbort) })
			h.expect(func(tx *Tx) { tx.ReleaseSource(0, SourceSide, CauseAbort) }, NameExactlyOnceRelease)
		}},
		{NameExactlyOnceRelease + "/after-terminal", func(t *testing.T) {
			h := sf(t)
			h.clean(route, accept, computed, routed, func(tx *Tx) {
				tx.WithdrawReservation(0, DestinationSide)
				tx.ReportDecodeOutcome(0, DestinationSide, false)
				tx.Complete(0, DestinationSide)
			})
			h.rec.Terminal[0][DestinationSide] = true
			// A scheduler that grants a reservation to an attempt that already ended.
			h.expect(func(tx *Tx) { tx.W.H[0].Pending = true; tx.Reserve(0) }, NameExactlyOnceRelease, NameInFlightAccounting)
		}},
		{NameBlockCategoriesDisjoint, func(t *testing.T) {
			h := sf(t)
			h.clean(route, accept)
			// Counting blocks as active that nobody holds.
			h.expect(func(tx *Tx) { tx.W.W[0].Active++; tx.W.W[0].Free-- }, NameBlockCategoriesDisjoint)
		}},
		{NameCapacityRespected, func(t *testing.T) {
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
		}},
		{NameDestinationFirstGate, func(t *testing.T) {
			h := newHistory(t, testConfig(t, spec.DestinationFirst, SGLang, 1, 2))
			h.clean(route)
			h.expect(accept, NameDestinationFirstGate)
		}},
		{NameRoleCommands, func(t *testing.T) {
			h := sf(t)
			h.clean(route, accept, computed, routed)
			h.expect(func(tx *Tx) { tx.StartPrefill(0, DestinationSide) }, NameRoleCommands)
		}},
		{NameRouterCleanup, func(t *testing.T) {
			h := sf(t)
			h.clean(route, accept, computed)
			// Ownership freed at prefill's terminal token, not at release.
			h.expect(func(tx *Tx) { tx.ReportSourceOutcome(0, SourceSide, true) }, NameRouterCleanup)
		}},
		{NameRouterCleanup + "/no-terminal-outcome", func(t *testing.T) {
			h := sf(t)
			h.clean(route, accept, computed, routed, func(tx *Tx) {
				tx.WithdrawReservation(0, DestinationSide)
				tx.Complete(0, DestinationSide)
			})
			h.rec.Terminal[0][DestinationSide] = true
			h.expect(func(tx *Tx) {}, NameRouterCleanup)
		}},
		{NameRouterCleanup + "/wrong-outcome", func(t *testing.T) {
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
		}},
		{NameInFlightAccounting, func(t *testing.T) {
			h := sf(t)
			h.clean(route, accept)
			h.expect(func(tx *Tx) { tx.AcceptRequest(0, SourceSide) }, NameInFlightAccounting)
		}},
		{NameInFlightAccounting + "/terminal-still-counted", func(t *testing.T) {
			h := sf(t)
			h.clean(route, accept, computed, routed, func(tx *Tx) {
				tx.WithdrawReservation(0, DestinationSide)
				tx.ReportDecodeOutcome(0, DestinationSide, false)
			})
			h.rec.Terminal[0][DestinationSide] = true
			h.expect(func(tx *Tx) {}, NameInFlightAccounting)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, tc.run)
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
