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
// 121 still: the search asks the system which fault a move taken now
// spends (Move.SpendsAt, was the search's switch on deliveries and
// timers) and which process makes a move (Move.Process, ProcessName, was
// the search's table for weak fairness), so reorder and early_timer,
// which only protocol moves taken out of order spend, are named only
// here; FaultKind, the row type of FaultKinds, which nothing outside
// named, unexported. Whether a side waits for its worker's capacity is
// asked of the system (WaitsForCapacity, was a list of kinds in the
// simulator and in live); MoveSet.Handoff, a field read, folded.
// 119: the tables of move kinds the search and the drivers kept are the
// system's: which slot of a sleep set a move takes and which workers it
// reads (Move.SleepSlot, Move.SleepWorkers, RenameSleepLane, was the
// search's), how long a move takes on a driver's clock (Move.Takes,
// priced by Durations, was a switch in the simulator and one in live),
// who takes a move (Move.Taker, was live's), how a move is drawn in a
// counterexample's sequence diagram (System.WriteSequenceStep, was the
// report's); the kinds only those tables named (deliver-request,
// reserve, refuse, decode-finish, deliver-cancel, peer-restarted,
// free-background, deferred, apply) are unexported.
// 118: live strikes a planned fault in place of a fact it relays or a
// transfer it runs by the protocol move the fault replaces, not by
// naming the kinds; transfer_failure, named then only by the system,
// unexported.
// 120: the search's hot path unpacks into a state it keeps (UnpackTo)
// and makes a successor's key from its parent's (CanonicalFrom).
// 115: one entry point per question: the enabled moves are MovesInto (a
// nil buffer for a new list; Moves folded), a key's state is UnpackTo
// (Unpack folded), the canonical key is Canonical with an optional naming
// (CanonicalNaming folded into it); the types Action and Stepper, which
// no user names, unexported.
// 112: the hash of a key is the search's, beside its visited set (was
// Fingerprint); how many words a key and how many moves a move set hold
// are the lengths of Key and MoveSet.M (KeyWords and MaxMoves unexported).
// 111: whether a handoff's role is terminal is asked of the system
// (System.Terminal); the protocol's own table, Protocol.Terminal, which
// only the property view read, unexported.
// 108: sleep sets ask the system one question per move (System.Sleep:
// the move's slot where it may sleep, and the workers it reads; was
// Move.SleepSlot, Move.SleepWorkers and Reducible) and one to rename a
// set as the canonical form renames its state (System.RenameSleep; was
// Naming, RenameSleepLane and Canonical's naming argument).
// 107: whether the system makes a move on its own and which process
// makes it are one question of the move set (MoveSet.Process; was
// MoveSet.Own and Move.Process).
// 102: the fault kinds no driver names (abort, loss, delay, hang,
// background_load) are unexported, as reorder and early_timer are; tests
// outside name them as configurations, plans and trace files do
// (ParseFault, ParseMove).
// 100: how many handoffs and workers a run has is asked of its world
// (System.World's NumHandoffs and NumWorkers; System.Handoffs and
// System.Workers folded).
// 99: the canonical key of a state is asked one way, Key (Canonical,
// which wrote it into a caller's key and which only the search called
// outside its hot path, unexported); the explorer's successors ask
// CanonicalFrom.
// 97: a reader that knows its configuration passes its world to
// ParseMove, which refuses a handoff or worker number the world lacks in
// the configuration's terms (was NumberError and its Error, which the
// trace reader took apart to say the range, then checked the range again
// itself).
// 96: that each renaming the canonical form reduces by is a true
// symmetry is the system's test (TestSymmetry_RenamingsAreSymmetries);
// Renamings, which only the search's tests read for it, removed.
// 92: whether a state is quiescent and, if so, its judgement are one
// question (Quiescence; was Quiescent and CheckQuiescence, which every
// caller but the search asked together, so the quiescence invariants are
// never judged on a state with a protocol move enabled); the judge of
// logs and a reproduction ask a fault kind's row (Delivers, LeftOut)
// instead of naming duplicate and no_show, which are unexported as the
// kinds no driver names are; the count leaves out the methods of
// unexported types, which no user reaches by name (Go's api tool leaves
// them out too): action.String, the one such method, is no longer
// counted.
// 91: a step's journal says whether it delivered a fact to a finished
// record (model.Journal.Stale, set by ApplyTx and counted by
// Journal.Fired), so the search, the drivers' stepper and the explorer no
// longer ask StaleDelivery before each step; unexported.
// 90: a fault kind's row writes its move's step syntax as the
// documentation shows it (FaultKinds[f].Syntax, "duplicate h=H to=S
// msg=M", read into the move's name and arguments at start; was MoveName
// and an argument list), so the documentation generator reads the row:
// MoveKind.Syntax, which only it asked, removed.
const maxExported = 90

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
