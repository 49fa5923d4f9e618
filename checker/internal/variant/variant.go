// Package variant gives tests the protocol of a transition-table file
// (a variant of testdata/variants, or a mutant), run by the interpreter
// as the command runs a --spec file: one way for every package's tests.
package variant

import (
	"os"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/machines/interp"
	"github.com/handoffcheck/handoffcheck/spec"
)

// Protocol reads and checks the table file and returns its protocol; any
// error fails the test.
func Protocol(t testing.TB, file string) *system.Protocol {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := spec.Parse(file, raw)
	if err != nil {
		t.Fatal(err)
	}
	return Of(t, file, sp)
}

// Of is the protocol of tables already parsed, named name.
func Of(t testing.TB, name string, sp *spec.Spec) *system.Protocol {
	t.Helper()
	it, err := interp.New(sp)
	if err != nil {
		t.Fatal(err)
	}
	p, err := system.FromStepper(name, sp, it)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
