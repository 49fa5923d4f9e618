package system

import (
	"fmt"

	"github.com/handoffcheck/handoffcheck/machines"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// model.Side and spec.Role number the two roles alike: roleOf and sideOf
// convert by number, and a renumbering of either stops the build here.
var (
	_ = [1]struct{}{}[model.SourceSide-model.Side(spec.Source)]
	_ = [1]struct{}{}[model.DestinationSide-model.Side(spec.Destination)]
)

// roleOf is the role machine of a side.
func roleOf(sd model.Side) spec.Role { return spec.Role(sd) }

// sideOf is the side of a role machine.
func sideOf(r spec.Role) model.Side { return model.Side(r) }

// Event ids of the fixed vocabulary. A Protocol numbers events as the
// generated machines do (FromStepper finds a spec's events by name), so
// these are the machines' own constants.
const (
	evSrcRequestArrived     = uint8(machines.SourceEventRequestArrived)
	evSrcDestinationReserve = uint8(machines.SourceEventDestinationReserved)
	evSrcPrefillPinned      = uint8(machines.SourceEventPrefillPinned)
	evSrcTransferDone       = uint8(machines.SourceEventTransferDone)
	evSrcTransferFailed     = uint8(machines.SourceEventTransferFailed)
	evSrcReaderCompleted    = uint8(machines.SourceEventReaderCompleted)
	evSrcLeaseRenewed       = uint8(machines.SourceEventLeaseRenewed)
	evSrcLeaseExpired       = uint8(machines.SourceEventLeaseExpired)
	evSrcBootstrapExpired   = uint8(machines.SourceEventBootstrapExpired)
	evSrcCancelled          = uint8(machines.SourceEventCancelled)
	evSrcClientCancelled    = uint8(machines.SourceEventClientCancelled)
	evSrcLocalAbort         = uint8(machines.SourceEventLocalAbort)
	evSrcPeerRestarted      = uint8(machines.SourceEventPeerRestarted)
	evSrcTransferTimeout    = uint8(machines.SourceEventTransferTimeout)

	evDstRouted             = uint8(machines.DestinationEventDestinationRouted)
	evDstReserved           = uint8(machines.DestinationEventDestinationReserved)
	evDstRefused            = uint8(machines.DestinationEventReservationRefused)
	evDstTransferDone       = uint8(machines.DestinationEventTransferDone)
	evDstTransferFailed     = uint8(machines.DestinationEventTransferFailed)
	evDstReceiveCompleted   = uint8(machines.DestinationEventReceiveCompleted)
	evDstHeartbeatDue       = uint8(machines.DestinationEventHeartbeatDue)
	evDstReservationExpired = uint8(machines.DestinationEventReservationExpired)
	evDstDecodeFinished     = uint8(machines.DestinationEventDecodeFinished)
	evDstCancelled          = uint8(machines.DestinationEventCancelled)
	evDstClientCancelled    = uint8(machines.DestinationEventClientCancelled)
	evDstLocalAbort         = uint8(machines.DestinationEventLocalAbort)
	evDstPeerRestarted      = uint8(machines.DestinationEventPeerRestarted)
	evDstRestarted          = uint8(machines.DestinationEventRestarted)
	evDstTransferTimeout    = uint8(machines.DestinationEventTransferTimeout)
	evDstActivationApplied  = uint8(machines.DestinationEventActivationApplied)
	evDstActivationNoOp     = uint8(machines.DestinationEventActivationNoOp)
	evSrcCancelApplied      = uint8(machines.SourceEventCancelApplied)
	evSrcCancelNoOp         = uint8(machines.SourceEventCancelNoOp)
	evDstCancelApplied      = uint8(machines.DestinationEventCancelApplied)
	evDstCancelNoOp         = uint8(machines.DestinationEventCancelNoOp)
	evSrcRestarted          = uint8(machines.SourceEventRestarted)
	evSrcDeferred           = uint8(machines.SourceEventDeferred)
	evDstDeferred           = uint8(machines.DestinationEventDeferred)
)

// msgEvent is the event a message becomes at its receiver.
func msgEvent(to model.Side, m model.Msg) uint8 {
	if to == model.SourceSide {
		switch m {
		case model.MsgDestinationReserved:
			return evSrcDestinationReserve
		case model.MsgReaderCompleted:
			return evSrcReaderCompleted
		case model.MsgLeaseRenewed:
			return evSrcLeaseRenewed
		case model.MsgCancelled:
			return evSrcCancelled
		}
	} else {
		switch m {
		case model.MsgReceiveCompleted:
			return evDstReceiveCompleted
		case model.MsgCancelled:
			return evDstCancelled
		}
	}
	panic(fmt.Sprintf("checker: message %s cannot go to the %s", m, to))
}

// timerEvent is the event a timer fires.
func timerEvent(t model.Timer) uint8 {
	switch t {
	case model.TimerLease:
		return evSrcLeaseExpired
	case model.TimerBootstrap:
		return evSrcBootstrapExpired
	case model.TimerHeartbeat:
		return evDstHeartbeatDue
	case model.TimerPush:
		return evSrcTransferTimeout
	case model.TimerPull:
		return evDstTransferTimeout
	}
	return evDstReservationExpired
}

// causeOf is why a side releases, judged from the event that drove the
// step. A deferred step has no cause of its own (the checker does not
// remember which row queued it): what it releases counts as released for
// another reason.
func causeOf(r spec.Role, ev uint8) model.Cause {
	if r == spec.Source {
		switch ev {
		case evSrcReaderCompleted, evSrcTransferDone:
			return model.CauseReaderAck
		case evSrcTransferFailed, evSrcCancelled, evSrcClientCancelled, evSrcLocalAbort, evSrcPeerRestarted,
			evSrcCancelApplied, evSrcCancelNoOp: // the core's answer to a cancel the side sent
			return model.CauseAbort
		case evSrcLeaseExpired, evSrcBootstrapExpired, evSrcTransferTimeout:
			return model.CauseExpiry
		}
		return model.CauseOther
	}
	switch ev {
	case evDstTransferDone, evDstTransferFailed, evDstCancelled, evDstClientCancelled, evDstLocalAbort, evDstPeerRestarted, evDstRefused,
		evDstCancelApplied, evDstCancelNoOp: // the core's answer to a cancel the side sent
		return model.CauseAbort
	case evDstReservationExpired, evDstTransferTimeout:
		return model.CauseExpiry
	case evDstDecodeFinished:
		return model.CauseDecodeDone
	}
	return model.CauseOther
}

// Action ids of the vocabulary: the generated machines' source actions,
// then their destination actions (SourceAction, DestinationAction);
// FromStepper finds a spec's actions by name.
const (
	aSrcAcceptRequest          = action(machines.SourceActionAcceptRequest)
	aSrcStartPrefill           = action(machines.SourceActionStartPrefill)
	aSrcStopPrefill            = action(machines.SourceActionStopPrefill)
	aSrcPinSource              = action(machines.SourceActionPinSource)
	aSrcRegisterSource         = action(machines.SourceActionRegisterSource)
	aSrcFenceSource            = action(machines.SourceActionFenceSource)
	aSrcReleaseSource          = action(machines.SourceActionReleaseSource)
	aSrcReportComputeDone      = action(machines.SourceActionReportComputeDone)
	aSrcAnnouncePinned         = action(machines.SourceActionAnnouncePinned)
	aSrcStartPush              = action(machines.SourceActionStartPush)
	aSrcArmLease               = action(machines.SourceActionArmLease)
	aSrcRenewLease             = action(machines.SourceActionRenewLease)
	aSrcDisarmLease            = action(machines.SourceActionDisarmLease)
	aSrcArmBootstrap           = action(machines.SourceActionArmBootstrap)
	aSrcDisarmBootstrap        = action(machines.SourceActionDisarmBootstrap)
	aSrcSendReceiveCompleted   = action(machines.SourceActionSendReceiveCompleted)
	aSrcSendCancelled          = action(machines.SourceActionSendCancelled)
	aSrcReportReleased         = action(machines.SourceActionReportSourceReleased)
	aSrcReportAborted          = action(machines.SourceActionReportSourceAborted)
	aSrcComplete               = action(machines.SourceActionComplete)
	aSrcArmTransferDeadline    = action(machines.SourceActionArmTransferDeadline)
	aSrcDisarmTransferDeadline = action(machines.SourceActionDisarmTransferDeadline)
	aSrcPublishCached          = action(machines.SourceActionPublishCached)

	aDstAcceptRequest           = action(machines.NumSourceActions + int(machines.DestinationActionAcceptRequest))
	aDstRequestReservation      = action(machines.NumSourceActions + int(machines.DestinationActionRequestReservation))
	aDstWithdrawReservation     = action(machines.NumSourceActions + int(machines.DestinationActionWithdrawReservation))
	aDstRegisterDestination     = action(machines.NumSourceActions + int(machines.DestinationActionRegisterDestination))
	aDstStartPull               = action(machines.NumSourceActions + int(machines.DestinationActionStartPull))
	aDstFenceDestination        = action(machines.NumSourceActions + int(machines.DestinationActionFenceDestination))
	aDstReleaseDestination      = action(machines.NumSourceActions + int(machines.DestinationActionReleaseDestination))
	aDstActivateDestination     = action(machines.NumSourceActions + int(machines.DestinationActionActivateDestination))
	aDstPublishStored           = action(machines.NumSourceActions + int(machines.DestinationActionPublishStored))
	aDstReleaseActive           = action(machines.NumSourceActions + int(machines.DestinationActionReleaseActive))
	aDstArmHeartbeat            = action(machines.NumSourceActions + int(machines.DestinationActionArmHeartbeat))
	aDstDisarmHeartbeat         = action(machines.NumSourceActions + int(machines.DestinationActionDisarmHeartbeat))
	aDstSendLeaseRenewed        = action(machines.NumSourceActions + int(machines.DestinationActionSendLeaseRenewed))
	aDstArmReservationTimer     = action(machines.NumSourceActions + int(machines.DestinationActionArmReservationTimer))
	aDstDisarmReservationTimer  = action(machines.NumSourceActions + int(machines.DestinationActionDisarmReservationTimer))
	aDstSendDestinationReserved = action(machines.NumSourceActions + int(machines.DestinationActionSendDestinationReserved))
	aDstSendReaderCompleted     = action(machines.NumSourceActions + int(machines.DestinationActionSendReaderCompleted))
	aDstSendCancelled           = action(machines.NumSourceActions + int(machines.DestinationActionSendCancelled))
	aDstReportDecodeDone        = action(machines.NumSourceActions + int(machines.DestinationActionReportDecodeDone))
	aDstReportDecodeFailed      = action(machines.NumSourceActions + int(machines.DestinationActionReportDecodeFailed))
	aDstComplete                = action(machines.NumSourceActions + int(machines.DestinationActionComplete))
	aDstArmTransferDeadline     = action(machines.NumSourceActions + int(machines.DestinationActionArmTransferDeadline))
	aDstDisarmTransferDeadline  = action(machines.NumSourceActions + int(machines.DestinationActionDisarmTransferDeadline))
)

// transferEvent is the event the runner of a transfer gets when it ends.
func transferEvent(runner model.Side, done bool) (spec.Role, uint8) {
	if runner == model.SourceSide {
		if done {
			return spec.Source, evSrcTransferDone
		}
		return spec.Source, evSrcTransferFailed
	}
	if done {
		return spec.Destination, evDstTransferDone
	}
	return spec.Destination, evDstTransferFailed
}

func cancelEvent(sd model.Side) uint8 {
	if sd == model.SourceSide {
		return evSrcClientCancelled
	}
	return evDstClientCancelled
}

func peerRestartedEvent(sd model.Side) uint8 {
	if sd == model.SourceSide {
		return evSrcPeerRestarted
	}
	return evDstPeerRestarted
}

func abortEvent(sd model.Side) uint8 {
	if sd == model.SourceSide {
		return evSrcLocalAbort
	}
	return evDstLocalAbort
}

func deferredEvent(sd model.Side) uint8 {
	if sd == model.SourceSide {
		return evSrcDeferred
	}
	return evDstDeferred
}
