package spec

import "slices"

// LaterEvent names an event the built-in vocabulary gained after spec
// files were first exported. The schema stays handoffcheck.spec/v1, so a
// file written before the event existed keeps loading with the meaning it
// had: it may leave the event out, and then its role has no row for it
// and the event never fires. A file that declares the event gives it rows
// like any other (ValidateVariant holds the declaration to the built-in
// origin).
type LaterEvent struct {
	Role Role
	Name string
}

// LaterEvents lists the events a spec file may leave out, one entry per
// role's event, in the order they were added. An event joins the
// vocabulary at the end of its role's events in Default (so the ids of
// the others stay what files, traces and the checker know), gets its
// meaning in the checker, and gets its entry here; ValidateVariant and
// checker's checkVocabulary read this list and nothing else.
var LaterEvents = []LaterEvent{
	// Deferred: a step the worker takes later, on its own. Files exported
	// before it existed have no deferred steps.
	{Source, "Deferred"},
	{Destination, "Deferred"},
	// TransferTimeout: the deadline of a push (source) or a pull
	// (destination). A file written before it existed arms no transfer
	// deadline, so the event never fires there; a hung transfer then shows
	// the side that waits on it forever.
	{Source, "TransferTimeout"},
	{Destination, "TransferTimeout"},
	// ActivationApplied, ActivationNoOp: the scheduler core's answers to
	// the activation command. A file written before them activates in the
	// row that asks to, and gets no answer.
	{Destination, "ActivationApplied"},
	{Destination, "ActivationNoOp"},
	// ReleaseApplied, ReleaseNoOp, CancelApplied, CancelNoOp: the
	// scheduler core's answers to the release and cancel commands. A file
	// written before them releases and cancels in the row that asks to,
	// and gets no answer.
	{Source, "ReleaseApplied"},
	{Source, "ReleaseNoOp"},
	{Source, "CancelApplied"},
	{Source, "CancelNoOp"},
	{Destination, "ReleaseApplied"},
	{Destination, "ReleaseNoOp"},
	{Destination, "CancelApplied"},
	{Destination, "CancelNoOp"},
}

// MayBeAbsent reports whether a spec file may leave a role's built-in
// event out of its declarations: whether the event is in LaterEvents.
func MayBeAbsent(r Role, event string) bool {
	return slices.Contains(LaterEvents, LaterEvent{r, event})
}
