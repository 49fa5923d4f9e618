package system

import (
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// RoleOf is the role machine that plays a side of a handoff: the one
// conversion every driver uses (model.Side and spec.Role number the roles
// alike; vocabulary.go stops the build if either is renumbered).
func RoleOf(sd model.Side) spec.Role { return roleOf(sd) }

// TimerOf is the timer an action arms, renews or disarms, as the composed
// system applies it (apply.go): a driver that runs timers on a clock
// schedules exactly the timer the step armed. Action ids already tell the
// roles apart (a source's ArmTransferDeadline is the push deadline, a
// destination's the pull deadline), so no role is needed.
func TimerOf(a action) (model.Timer, bool) {
	switch a {
	case aSrcArmLease, aSrcRenewLease, aSrcDisarmLease:
		return model.TimerLease, true
	case aSrcArmBootstrap, aSrcDisarmBootstrap:
		return model.TimerBootstrap, true
	case aSrcArmTransferDeadline, aSrcDisarmTransferDeadline:
		return model.TimerPush, true
	case aDstArmTransferDeadline, aDstDisarmTransferDeadline:
		return model.TimerPull, true
	case aDstArmHeartbeat, aDstDisarmHeartbeat:
		return model.TimerHeartbeat, true
	case aDstArmReservationTimer, aDstDisarmReservationTimer:
		return model.TimerReservation, true
	}
	return 0, false
}
