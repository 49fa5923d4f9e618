package system

import (
	"testing"

	"github.com/handoffcheck/handoffcheck/spec"
)

// The checker runs every spec that spec.Validate accepts: its fixed-size
// tables must be exactly as large as the limits the spec enforces, or a
// file would pass validate and be refused (or overflow) only at check.
func TestLimits_MatchTheSpec(t *testing.T) {
	if maxActions != spec.MaxActions {
		t.Errorf("system.maxActions = %d, spec.MaxActions = %d", maxActions, spec.MaxActions)
	}
	if maxStates != spec.MaxStates {
		t.Errorf("checker.MaxStates = %d, spec.MaxStates = %d", maxStates, spec.MaxStates)
	}
	// Role states are packed in four bits per role.
	if spec.MaxStates > 1<<4 {
		t.Errorf("spec.MaxStates = %d does not fit four bits", spec.MaxStates)
	}
}
