package checker

import "strings"

// FormatWitness renders the witness a property's verdict rests on, as a
// counterexample is rendered: the shortest trace to a state where a
// sometimes property holds (found by a search that stops there as at a
// violation), headed REACHED instead of VIOLATION; or a leads_to
// property's fair run (Counterexample.Fair), which is its violation and
// headed so.
func (c *Checker) FormatWitness(ce *Counterexample, full bool) string {
	text := c.formatCounterexampleFull(ce, full)
	if ce.Fair != "" {
		return text
	}
	return "REACHED " + strings.TrimPrefix(text, "VIOLATION ")
}
