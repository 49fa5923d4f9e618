package checker

import "strings"

// FormatWitness renders the shortest trace to a state where a sometimes
// property holds (found by a search that stops there as at a violation),
// as a counterexample is rendered, headed REACHED instead of VIOLATION.
func (c *Checker) FormatWitness(ce *Counterexample, full bool) string {
	return "REACHED " + strings.TrimPrefix(c.formatCounterexampleFull(ce, full), "VIOLATION ")
}
