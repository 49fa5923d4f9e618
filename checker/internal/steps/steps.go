// Package steps names the system's moves and fault kinds for tests as
// trace files and configurations write them: by the step syntax and the
// configuration keys, not by the system's constants, most of which no
// driver names.
package steps

import (
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"
)

// Move is the move a step of a trace file writes as s.
func Move(t testing.TB, s string) system.Move {
	t.Helper()
	m, err := system.ParseMove(s, nil)
	if err != nil {
		t.Fatalf("move %q: %v", s, err)
	}
	return m
}

// Fault is the fault kind a configuration's "faults" object names name.
func Fault(t testing.TB, name string) system.Fault {
	t.Helper()
	f, ok := system.ParseFault(name)
	if !ok {
		t.Fatalf("%q is not a fault kind", name)
	}
	return f
}
