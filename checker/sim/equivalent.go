package sim

// Why a mutant of the built-in tables survives both the checker and the
// clock. TestMutateTimed_Survivors fails when a survivor has no reason
// here, or a reason names a mutant that no longer survives, so the list
// stays the list `mutate --timed` prints.
const (
	whyClientCancel = "equivalent: the frontend cancels both request streams, and a side not yet routed is never routed, so the peer hears the client's cancel itself; this copy of it changes nothing"
	whyPeerRestart  = "equivalent under BoundedReclaim: after the peer's restart the side may wait for its own deadline, and it does (its bootstrap deadline, reservation deadline or lease); the row only ends the wait sooner"
	whyPushFails    = "equivalent under BoundedReclaim: untold of the destination's restart, the source computes on, and its push into the dead destination fails as soon as the prefill ends, well within the health check that would have told it"
	whyFencedPull   = "equivalent: the source fences its registration before it tells (or its restart voids it), so the pull fails and the destination reclaims on that failure (row 9 or 11) within the bound"
	whyFenceEnds    = "equivalent: the row's own actions fence and free the pages, so the fenced pull fails at once and the failure's row ends the record"
	whyDrainedAck   = "equivalent: a draining destination has already told the source it gave up, or the source gave up or restarted itself, so the reader's acknowledgement adds nothing (with that Cancelled lost, the source may wait for its lease)"
	whySuccessName  = "equivalent: Done and Stopped are both success terminals, reached with the same actions; only the final state's name differs"
	whyOneStep      = "equivalent: both actions take effect in the one step the row is; their order inside it cannot be observed"
	whyPushDeadline = "equivalent for every stated property: another deadline still ends a hung push (the destination's reservation deadline fences it, or the source's lease runs out); the push deadline only ends it sooner, and no property bounds how soon"
	whyPrimed       = "equivalent under BoundedReclaim: a destination-first source told of its destination's restart before its request came forgets the reservation, and the request then waits for its bootstrap deadline, as BoundedReclaim allows after a restart; ignoring the notice (computing, then failing the push into the dead destination at once) or refusing the request ends sooner; and on the clock a health check never outruns a request's delivery"
)

// Equivalent gives, for each mutant of the built-in tables that survives
// the checker and the clock, the reason no stated property can tell it
// from the table it was made from. (A survivor the scenario set merely
// fails to reach or to tell apart would be listed here as such, with what
// would; there is none today.)
var Equivalent = map[string]string{
	"source row 9 ignore PeerRestarted":                        whyPrimed,
	"source row 9 retarget to Primed":                          whyPrimed,
	"source row 9 retarget to Abandoned":                       whyPrimed,
	"source row 14 drop-action ArmTransferDeadline":            whyPushDeadline,
	"source row 29 ignore PeerRestarted":                       whyPeerRestart,
	"source row 30 drop-action SendCancelled":                  whyClientCancel,
	"source row 33 ignore PeerRestarted":                       whyPushFails,
	"source row 34 drop-action SendCancelled":                  whyClientCancel,
	"source row 37 swap-actions PinSource<->ReportComputeDone": whyOneStep,
	"source row 40 ignore PeerRestarted":                       whyPeerRestart,
	"source row 41 drop-action SendCancelled":                  whyClientCancel,
	"destination row 10 drop-action SendReaderCompleted":       whyDrainedAck,
	"destination row 12 ignore Cancelled":                      whyFencedPull,
	"destination row 12 retarget to Receiving":                 whyFencedPull,
	"destination row 13 ignore PeerRestarted":                  whyFencedPull,
	"destination row 13 retarget to Receiving":                 whyFencedPull,
	"destination row 14 drop-action SendCancelled":             whyClientCancel,
	"destination row 20 ignore PeerRestarted":                  whyPeerRestart,
	"destination row 21 drop-action SendCancelled":             whyClientCancel,
	"destination row 31 drop-action SendCancelled":             whyClientCancel,
	"destination row 32 drop-action SendCancelled":             whyClientCancel,
	"destination row 39 retarget to Stopped":                   whySuccessName,
	"destination row 40 retarget to Done":                      whySuccessName,
	"destination row 41 retarget to Done":                      whySuccessName,
	"destination row 50 retarget to Receiving":                 whyFenceEnds,
	"destination row 50 retarget to Draining":                  whyFenceEnds,
	"destination row 51 retarget to Receiving":                 whyFenceEnds,
	"destination row 51 retarget to Draining":                  whyFenceEnds,
}
