package cluster

import (
	"fmt"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// The legacy disaggregated path (policy Disabled, the handoff design's
// HandoffPolicy::Disabled) as role tables of the same kind as the
// lifecycle's: one table for the prefill worker, one for the decode
// worker, each row a (state, event) → state + actions with a why, checked
// by spec.Validate like the lifecycle's tables (every peer message and
// timer handled in every live state). The tables are role-local and know
// no adapter; the adapters differ only in when facts arrive:
//
//   - the live rendezvous: decode is routed and connects to the bootstrap
//     room (DecodeConnected reaches prefill), prefill waits for that
//     connection before it is submitted, runs to scheduler completion and
//     frees its KV, the adapter sleeps the modeled delay (DelayElapsed)
//     and marks the room complete (RoomCompleted reaches decode), and
//     decode enters its normal scheduler path;
//   - the replay harness (the simulator): no rendezvous, so the adapter
//     delivers DecodeConnected as the request arrives; prefill completion
//     frees the prefill router's ownership at once; after the modeled
//     delay decode is routed and RoomCompleted delivered at once; decode
//     allocates only when its scheduler admits it.
//
// Nothing in them pins a source or reserves a destination: that absence
// is what the lifecycle exists to fix, and what --compare shows beside it.

// Legacy event names (the tables' vocabulary).
const (
	LegacyRequestArrived  = "RequestArrived"
	LegacyDecodeConnected = "DecodeConnected"
	LegacyAdmitted        = "Admitted"
	LegacyPrefillFinished = "PrefillFinished"
	LegacyDelayElapsed    = "DelayElapsed"
	LegacyClientCancelled = "ClientCancelled"
	LegacyDecodeRouted    = "DecodeRouted"
	LegacyRoomCompleted   = "RoomCompleted"
	LegacyRoomCancelled   = "RoomCancelled"
	LegacyDecodeFinished  = "DecodeFinished"
)

// Legacy action names.
const (
	LegacyAcceptRequest     = "AcceptRequest"
	LegacySubmitPrefill     = "SubmitPrefill"
	LegacyAllocatePrefill   = "AllocatePrefill"
	LegacyWithdrawPrefill   = "WithdrawPrefill"
	LegacyStopPrefill       = "StopPrefill"
	LegacyFreePrefill       = "FreePrefill"
	LegacyReportComputeDone = "ReportComputeDone"
	LegacyReportRequestDone = "ReportRequestDone"
	LegacySleepDelay        = "SleepDelay"
	LegacyMarkRoomComplete  = "MarkRoomComplete"
	LegacyCancelRoom        = "CancelRoom"
	LegacyConnectBootstrap  = "ConnectBootstrap"
	LegacySubmitDecode      = "SubmitDecode"
	LegacyAllocateDecode    = "AllocateDecode"
	LegacyWithdrawDecode    = "WithdrawDecode"
	LegacyFreeDecode        = "FreeDecode"
	LegacyReportDecodeDone  = "ReportDecodeDone"
	LegacyReportDecodeFail  = "ReportDecodeFailed"
	LegacyComplete          = "Complete"
)

// legacyAll is the rows' policy list: the legacy path has no ordering of
// its own, so every row holds under both of the spec's policies.
var legacyAll = []spec.Policy{spec.SourceFirst, spec.DestinationFirst}

// LegacySpec is the legacy disaggregated path's role tables. Every call
// returns a spec of its own.
func LegacySpec() *spec.Spec {
	return &spec.Spec{Name: "legacy", Source: legacySource(), Destination: legacyDestination()}
}

func legacySource() spec.Table {
	row := func(from []string, ev, to string, acts []string, why string) spec.Row {
		return spec.Row{From: from, Event: ev, Policies: legacyAll, To: to, Actions: acts, Why: why}
	}
	return spec.Table{
		Role: spec.Source,
		States: []spec.State{
			{Name: "Idle", Initial: true, Doc: "routed to this worker at most; the request has not arrived"},
			{Name: "AwaitingDecode", Doc: "the request arrived; it is not submitted until decode has connected to the bootstrap room"},
			{Name: "Queued", Doc: "submitted to the scheduler: waits for its prompt's blocks"},
			{Name: "Computing", Doc: "admitted: its blocks are active and it computes"},
			{Name: "Sleeping", Doc: "scheduler completion freed the KV; the adapter sleeps the modeled handoff delay"},
			{Name: "Done", Terminal: true, Outcome: spec.OutcomeSuccess, Doc: "the room is marked complete: decode continues"},
			{Name: "Aborted", Terminal: true, Outcome: spec.OutcomeFailure, Doc: "cancelled; everything held was freed"},
		},
		Events: []spec.Event{
			{Name: LegacyRequestArrived, Origin: spec.Client, Doc: "the prefill router's request reaches the worker"},
			{Name: LegacyDecodeConnected, Origin: spec.Peer, Doc: "decode connected to the bootstrap room (the replay adapter: at once)"},
			{Name: LegacyAdmitted, Origin: spec.Local, Doc: "the scheduler admitted the request: its prompt's blocks were free"},
			{Name: LegacyPrefillFinished, Origin: spec.Local, Doc: "prefill reached scheduler completion"},
			{Name: LegacyDelayElapsed, Origin: spec.Timer, Doc: "the modeled handoff delay passed"},
			{Name: LegacyClientCancelled, Origin: spec.Client, Doc: "the client aborted the request"},
		},
		Actions: []spec.Action{
			{Name: LegacyAcceptRequest, Doc: "count the request in flight; the prefill router owns it and counts its compute load"},
			{Name: LegacySubmitPrefill, Doc: "submit the request to the scheduler"},
			{Name: LegacyAllocatePrefill, Doc: "allocate the prompt's blocks as active and start computing"},
			{Name: LegacyWithdrawPrefill, Doc: "take the queued request out of the scheduler"},
			{Name: LegacyStopPrefill, Doc: "abort the computing prefill and free its blocks"},
			{Name: LegacyFreePrefill, Doc: "the normal terminal path frees the request's blocks to the cache: nothing is pinned"},
			{Name: LegacyReportComputeDone, Doc: "the prefill router's compute load falls"},
			{Name: LegacyReportRequestDone, Doc: "the prefill router's request ownership ends"},
			{Name: LegacySleepDelay, Doc: "start the modeled handoff delay"},
			{Name: LegacyMarkRoomComplete, Doc: "mark the bootstrap room complete: decode may continue"},
			{Name: LegacyCancelRoom, Doc: "tell decode the room will never complete"},
			{Name: LegacyComplete, Doc: "count the request out of this worker's in-flight requests"},
		},
		Rows: []spec.Row{
			row([]string{"Idle"}, LegacyRequestArrived, "AwaitingDecode", []string{LegacyAcceptRequest},
				"the live rendezvous: prefill is not submitted before decode connects"),
			row([]string{"AwaitingDecode"}, LegacyDecodeConnected, "Queued", []string{LegacySubmitPrefill},
				"a connection is taken for decode readiness, though decode has reserved nothing"),
			row([]string{"Idle", "Queued", "Computing", "Sleeping"}, LegacyDecodeConnected, "", nil,
				"a connection before the request, or a duplicate, changes nothing"),
			row([]string{"Queued"}, LegacyAdmitted, "Computing", []string{LegacyAllocatePrefill},
				"ordinary scheduler allocation: the prompt's blocks are active while it computes"),
			row([]string{"Computing"}, LegacyPrefillFinished, "Sleeping",
				[]string{LegacyFreePrefill, LegacyReportComputeDone, LegacyReportRequestDone, LegacyComplete, LegacySleepDelay},
				"scheduler completion frees the KV and the router's ownership at once: nothing keeps the blocks for a reader"),
			row([]string{"Sleeping"}, LegacyDelayElapsed, "Done", []string{LegacyMarkRoomComplete},
				"the modeled delay stands for the transfer, with no resource held on either side"),
			row([]string{"Idle", "AwaitingDecode", "Queued", "Computing"}, LegacyDelayElapsed, "", nil,
				"no delay runs here; a stale one changes nothing"),
			row([]string{"AwaitingDecode"}, LegacyClientCancelled, "Aborted",
				[]string{LegacyReportComputeDone, LegacyReportRequestDone, LegacyComplete, LegacyCancelRoom},
				"cancelled before submission: nothing is allocated"),
			row([]string{"Queued"}, LegacyClientCancelled, "Aborted",
				[]string{LegacyWithdrawPrefill, LegacyReportComputeDone, LegacyReportRequestDone, LegacyComplete, LegacyCancelRoom},
				"cancelled while waiting for blocks"),
			row([]string{"Computing"}, LegacyClientCancelled, "Aborted",
				[]string{LegacyStopPrefill, LegacyReportComputeDone, LegacyReportRequestDone, LegacyComplete, LegacyCancelRoom},
				"cancelled while computing: the blocks are freed at once"),
			row([]string{"Sleeping"}, LegacyClientCancelled, "Aborted", []string{LegacyCancelRoom},
				"cancelled during the delay: the KV is already gone; decode must not continue"),
		},
	}
}

func legacyDestination() spec.Table {
	row := func(from []string, ev, to string, acts []string, why string) spec.Row {
		return spec.Row{From: from, Event: ev, Policies: legacyAll, To: to, Actions: acts, Why: why}
	}
	return spec.Table{
		Role: spec.Destination,
		States: []spec.State{
			{Name: "Idle", Initial: true, Doc: "not routed to this worker yet"},
			{Name: "AwaitingRoom", Doc: "routed and booked by the decode router, connected to the bootstrap room; nothing is reserved"},
			{Name: "Queued", Doc: "submitted to the decode scheduler: waits for its blocks and a slot"},
			{Name: "Decoding", Doc: "admitted: its blocks and a slot are allocated and it decodes"},
			{Name: "Done", Terminal: true, Outcome: spec.OutcomeSuccess, Doc: "decode finished and its blocks were freed"},
			{Name: "Aborted", Terminal: true, Outcome: spec.OutcomeFailure, Doc: "cancelled; everything held was freed"},
		},
		Events: []spec.Event{
			{Name: LegacyDecodeRouted, Origin: spec.Client, Doc: "the decode router selected this worker and booked it"},
			{Name: LegacyRoomCompleted, Origin: spec.Peer, Doc: "prefill marked the room complete after the modeled delay"},
			{Name: LegacyRoomCancelled, Origin: spec.Peer, Doc: "prefill says the room will never complete"},
			{Name: LegacyAdmitted, Origin: spec.Local, Doc: "the scheduler admitted the request: its blocks and a slot were free"},
			{Name: LegacyDecodeFinished, Origin: spec.Local, Doc: "decode produced its last token"},
			{Name: LegacyClientCancelled, Origin: spec.Client, Doc: "the client aborted the request"},
		},
		Actions: []spec.Action{
			{Name: LegacyAcceptRequest, Doc: "count the request in flight on this worker"},
			{Name: LegacyConnectBootstrap, Doc: "connect to the prefill's bootstrap room"},
			{Name: LegacySubmitDecode, Doc: "submit the request to the decode scheduler"},
			{Name: LegacyAllocateDecode, Doc: "allocate the prompt's blocks as active and a slot: only now does decode hold memory"},
			{Name: LegacyWithdrawDecode, Doc: "take the queued request out of the scheduler"},
			{Name: LegacyFreeDecode, Doc: "free the request's blocks to the cache and its slot"},
			{Name: LegacyReportDecodeDone, Doc: "terminal outcome to the decode router: its booking ends"},
			{Name: LegacyReportDecodeFail, Doc: "terminal failure to the decode router: its booking ends"},
			{Name: LegacyComplete, Doc: "count the request out of this worker's in-flight requests"},
		},
		Rows: []spec.Row{
			row([]string{"Idle"}, LegacyDecodeRouted, "AwaitingRoom", []string{LegacyAcceptRequest, LegacyConnectBootstrap},
				"the router's booking precedes any physical capacity: connecting reserves nothing"),
			row([]string{"AwaitingRoom"}, LegacyRoomCompleted, "Queued", []string{LegacySubmitDecode},
				"only after the room completes does decode enter its normal scheduler path"),
			row([]string{"Idle", "Queued", "Decoding"}, LegacyRoomCompleted, "", nil,
				"a completion before routing, or a duplicate, changes nothing"),
			row([]string{"AwaitingRoom"}, LegacyRoomCancelled, "Aborted", []string{LegacyReportDecodeFail, LegacyComplete},
				"the prefill gave up: end the booking, nothing is held"),
			row([]string{"Idle", "Queued", "Decoding"}, LegacyRoomCancelled, "", nil,
				"a cancel before routing, or after the room completed, changes nothing"),
			row([]string{"Queued"}, LegacyAdmitted, "Decoding", []string{LegacyAllocateDecode},
				"ordinary scheduler allocation at admission: no reservation kept memory for it before"),
			row([]string{"Decoding"}, LegacyDecodeFinished, "Done", []string{LegacyFreeDecode, LegacyReportDecodeDone, LegacyComplete},
				"decode ended: free its blocks and slot, end the booking"),
			row([]string{"AwaitingRoom"}, LegacyClientCancelled, "Aborted", []string{LegacyReportDecodeFail, LegacyComplete},
				"cancelled before the room completed: nothing is held"),
			row([]string{"Queued"}, LegacyClientCancelled, "Aborted", []string{LegacyWithdrawDecode, LegacyReportDecodeFail, LegacyComplete},
				"cancelled while waiting for blocks"),
			row([]string{"Decoding"}, LegacyClientCancelled, "Aborted", []string{LegacyFreeDecode, LegacyReportDecodeFail, LegacyComplete},
				"cancelled while decoding: free its blocks and slot"),
		},
	}
}

// Legacy is the legacy tables prepared for stepping: each (role, state,
// event) looked up once.
type Legacy struct {
	spec  *spec.Spec
	steps [2]map[[2]string]LegacyRow
}

// LegacyRow is a fired row of the legacy tables: its 1-based number, the
// state it leads to and its actions.
type LegacyRow struct {
	Row     int
	From    string
	To      string
	Actions []string
}

// NewLegacy prepares the legacy tables; it refuses tables spec.Validate
// refuses.
func NewLegacy(s *spec.Spec) (*Legacy, error) {
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%w: the legacy tables: %v", ErrConfig, err)
	}
	l := &Legacy{spec: s}
	for _, r := range spec.Roles {
		t := s.Table(r)
		l.steps[r] = map[[2]string]LegacyRow{}
		for _, st := range t.States {
			for _, ev := range t.Events {
				if i := t.Lookup(spec.SourceFirst, st.Name, ev.Name); i >= 0 {
					row := t.Rows[i]
					l.steps[r][[2]string{st.Name, ev.Name}] = LegacyRow{Row: i + 1, From: st.Name, To: row.Target(st.Name), Actions: row.Actions}
				}
			}
		}
	}
	return l, nil
}

// Spec is the tables stepped.
func (l *Legacy) Spec() *spec.Spec { return l.spec }

// Initial is a role's initial state.
func (l *Legacy) Initial(r spec.Role) string { return l.spec.Table(r).Initial() }

// Terminal reports whether a role's state is terminal.
func (l *Legacy) Terminal(r spec.Role, state string) bool {
	st, _ := l.spec.Table(r).State(state)
	return st.Terminal
}

// Outcome is the outcome a role's terminal state stands for ("" while
// the state is not terminal).
func (l *Legacy) Outcome(r spec.Role, state string) string {
	st, _ := l.spec.Table(r).State(state)
	return st.Outcome
}

// Step fires an event of a role in a state: the row, or ok false when
// the table has no row for it (the tables allow no step here).
func (l *Legacy) Step(r spec.Role, state, event string) (LegacyRow, bool) {
	row, ok := l.steps[r][[2]string{state, event}]
	return row, ok
}

// LegacyHold is what one request holds on one worker of the legacy path:
// its blocks and slot, whether the worker counts it in flight, and the
// routers' ledgers about it there (the prefill router's ownership and
// compute load, the decode router's booking).
type LegacyHold struct {
	Blocks          model.Blocks
	Slot            bool
	InFlight, Owned bool
	Tokens          model.Tokens
	Booked          model.Blocks
}

// LegacyDemand is what a request asks of its worker in a role: its
// blocks there and its prompt (the prefill router's compute load); Slots
// is the worker's slot limit (decode; 0 on prefill).
type LegacyDemand struct {
	Blocks model.Blocks
	Prompt model.Tokens
	Slots  int
}

// LegacyDemandOf is what a request of world wc (its prompt prompt) asks
// of its worker in a role on the legacy path: the blocks the lifecycle
// would compute at the source and reserve at the destination, so that the
// two paths are priced alike, and on decode the slot limit. Every driver
// of the legacy path asks this.
func (c *Config) LegacyDemandOf(wc *model.Config, role spec.Role, prompt model.Tokens) LegacyDemand {
	if role == spec.Source {
		return LegacyDemand{Blocks: wc.SourceQuote(0).ComputeBlocks, Prompt: prompt}
	}
	return LegacyDemand{Blocks: wc.DestQuote(0, 1, false).ReservedBlocks, Prompt: prompt, Slots: c.Decode.Slots}
}

// LegacyDelayUS is the legacy path's modeled handoff delay for a request
// of world wc, its network latency apart: the transfer time the lifecycle
// would price for it (no prefix lost).
func (c *Config) LegacyDelayUS(wc *model.Config) int64 { return c.TransferUS(wc, false) }

// LegacyBreach is an action the counters refuse: the invariant it
// breaks, and how.
type LegacyBreach struct{ Invariant, Detail string }

// LegacyFits reports whether a worker can admit the request now: its
// blocks are free (or evictable cache), and on decode a slot is free.
func LegacyFits(role spec.Role, d LegacyDemand, k *model.Worker) bool {
	if role == spec.Destination && int(k.SlotsUsed) >= d.Slots {
		return false
	}
	return d.Blocks <= k.Free+k.Cached
}

// LegacyBook is the decode router's booking at selection, which the
// legacy path lets run ahead of any physical capacity.
func LegacyBook(d LegacyDemand, h *LegacyHold, k *model.Worker) {
	h.Booked = d.Blocks
	k.BookedBlocks += d.Blocks
}

// LegacyOwn is the prefill router's part of AcceptRequest: it owns the
// request and counts its prompt as compute load on the worker, until
// ReportRequestDone and ReportComputeDone. A driver whose routers keep
// ledgers apart from the workers' counters (live: the coordinator's)
// applies it at selection; ApplyLegacy applies it with the rest of the
// action.
func LegacyOwn(d LegacyDemand, h *LegacyHold, k *model.Worker) {
	h.Owned, h.Tokens = true, d.Prompt
	k.Owned++
	k.PrefillTokens += d.Prompt
}

// ApplyLegacy carries out the effect of an action of the legacy tables
// on a worker's counters and the request's holding there: the
// environment's rules for the legacy path, written once for every driver
// (the simulator's replay adapter and live's workers, whose coordinator
// applies the routers' part to its ledgers: LegacyOwn, LegacyBook and the
// Report actions).
// An action whose effect is not on the counters (a submission, a timer,
// a message) changes nothing here; the driver carries it out. An action
// the holding cannot take (a second free, a count out of a request not
// counted) is refused, naming the invariant, and changes nothing.
func ApplyLegacy(role spec.Role, action string, d LegacyDemand, h *LegacyHold, k *model.Worker) *LegacyBreach {
	refuse := func(inv, what string, args ...any) *LegacyBreach {
		return &LegacyBreach{Invariant: inv, Detail: fmt.Sprintf("the %s's %s %s", role, action, fmt.Sprintf(what, args...))}
	}
	switch action {
	case LegacyAcceptRequest:
		if h.InFlight {
			return refuse(model.NameInFlightAccounting, "counts the request in flight a second time")
		}
		h.InFlight = true
		k.InFlight++
		if role == spec.Source {
			LegacyOwn(d, h, k)
		}
	case LegacyAllocatePrefill, LegacyAllocateDecode:
		if h.Blocks != 0 || !LegacyFits(role, d, k) {
			return refuse(model.NameCapacityRespected, "takes %d blocks with %d free or cached, %d of %d slots used, holding %d", int64(d.Blocks), int64(k.Free+k.Cached), k.SlotsUsed, d.Slots, int64(h.Blocks))
		}
		free := min(d.Blocks, k.Free)
		k.Free -= free
		k.Cached -= d.Blocks - free
		k.Active += d.Blocks
		h.Blocks = d.Blocks
		if role == spec.Destination {
			k.SlotsUsed++
			h.Slot = true
		}
	case LegacyStopPrefill, LegacyFreePrefill, LegacyFreeDecode:
		if h.Blocks == 0 {
			return refuse(model.NameExactlyOnceRelease, "frees blocks the request does not hold")
		}
		// The normal terminal path returns the blocks. The cache model is
		// the lifecycle runs': a finished request's blocks are evicted,
		// since no later request of a run reuses them.
		k.Active -= h.Blocks
		k.Free += h.Blocks
		h.Blocks = 0
		if h.Slot {
			k.SlotsUsed--
			h.Slot = false
		}
	case LegacyReportComputeDone:
		if h.Tokens == 0 {
			return refuse(model.NameExactlyOnceRelease, "ends compute load the prefill router does not count")
		}
		k.PrefillTokens -= h.Tokens
		h.Tokens = 0
	case LegacyReportRequestDone:
		if !h.Owned {
			return refuse(model.NameRouterCleanup, "ends ownership the prefill router does not hold")
		}
		k.Owned--
		h.Owned = false
	case LegacyReportDecodeDone, LegacyReportDecodeFail:
		if h.Booked == 0 {
			return refuse(model.NameRouterCleanup, "ends a booking the decode router does not hold")
		}
		k.BookedBlocks -= h.Booked
		h.Booked = 0
	case LegacyComplete:
		if !h.InFlight {
			return refuse(model.NameInFlightAccounting, "counts out a request that is not in flight")
		}
		k.InFlight--
		h.InFlight = false
	}
	return nil
}

// LegacyObserved is what a fired row of the legacy tables makes
// observable, in the log's vocabulary, in order: the side's cancel or
// decode's end (the event), its acceptance of the request, and its
// outcome on its request stream, which the source reports at scheduler
// completion (a success) or at a cancel before it (a failure). Every
// driver logs these, so that a legacy log reads the same from the
// simulator and from live processes; its header names the policy
// disabled, and conform refuses to judge it.
func LegacyObserved(role spec.Role, event string, row LegacyRow) []obslog.Label {
	by := obslog.BySource
	if role == spec.Destination {
		by = obslog.ByDestination
	}
	var ls []obslog.Label
	switch event {
	case LegacyClientCancelled:
		ls = append(ls, obslog.Label{Kind: obslog.Cancelled, By: by})
	case LegacyDecodeFinished:
		ls = append(ls, obslog.Label{Kind: obslog.DecodeFinished, By: by})
	}
	for _, a := range row.Actions {
		switch a {
		case LegacyAcceptRequest:
			ls = append(ls, obslog.Label{Kind: obslog.RequestAccepted, By: by})
		case LegacyReportRequestDone, LegacyReportDecodeDone, LegacyReportDecodeFail:
			ok := event == LegacyPrefillFinished || a == LegacyReportDecodeDone
			out := model.OutcomeFailed
			if ok {
				out = model.OutcomeOK
			}
			ls = append(ls, obslog.Label{Kind: obslog.OutcomeReported, By: by, Outcome: out})
		}
	}
	return ls
}
