package checker

import "github.com/handoffcheck/handoffcheck/checker/system"

// resetCoverage sets every count of c back to zero, for a batch's
// coverage reused by the next batch.
func resetCoverage(c *system.Coverage) {
	for r := range c.Rows {
		clear(c.Rows[r])
	}
	c.Fired = 0
}

// addCoverage adds o's counts to c: the coverage a parallel batch
// collected joins the search's.
func addCoverage(c, o *system.Coverage) {
	c.Fired |= o.Fired
	for r := range c.Rows {
		for i, n := range o.Rows[r] {
			c.Rows[r][i] += n
		}
	}
}
