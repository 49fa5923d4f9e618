package system

import (
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/internal/surface"
)

// maxExported is how many names the package exports: package-level names
// and methods. Names nothing outside the package uses are unexported, so
// that what the package offers is what its users need; a change that
// must export more raises this with the reason in its message.
// 121: drivers ask what a move names (MoveKind.Names) instead of learning
// the step syntax's arguments (Arg and its constants); a move is a fault
// when Spends says so (MoveKind.Fault folded); a remaining budget answers
// Left; logic with a single user moved to it (Apply to cluster's Stepper,
// FiringText to sim, SwarmFaultMoves and Coverage.Add/Reset to the
// search); Transition, MaxActions, Protocol.Step and StateIndex, which
// nothing outside used, unexported; Commands.String, unread, removed.
// 123: the search's hot path unpacks into a state it keeps (UnpackTo)
// and makes a successor's key from its parent's (CanonicalFrom).
const maxExported = 123

// exportedNames lists the exported package-level names and methods
// (Type.Method) of the package's non-test files.
func exportedNames(t *testing.T) []string {
	t.Helper()
	names, err := surface.Exported(".")
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// The package exports no more than maxExported names: the seam the
// search (checker) and the drivers step the system through, the move
// kinds and fault kinds they name, and the configuration they build it
// from.
func TestSurface_ExportsAtMostTheCeiling(t *testing.T) {
	names := exportedNames(t)
	if len(names) > maxExported {
		t.Errorf("system exports %d names, more than %d", len(names), maxExported)
	}
	t.Logf("system exports %d names", len(names))
}
