package system

import (
	"testing"

	"github.com/handoffcheck/handoffcheck/model"
)

// TestCanonical_SkipsOnlyLargerRenamings holds canonical, which skips a
// worker renaming once its worker words sort after the best key so far,
// to the least key over every renaming computed in full.
func TestCanonical_SkipsOnlyLargerRenamings(t *testing.T) {
	checked := 0
	everyRun(t, []string{"two-handoffs.json", "max-shape.json", "three-handoffs.json"}, func(file, run string, c *System) {
		if len(c.sym.perms) < 2 {
			return
		}
		for _, s := range porSample(c, 3000) {
			var plain, want, got Key
			c.pack(&s, &plain)
			base := 1 + c.nW
			for i := range c.sym.perms {
				perm := &c.sym.perms[i]
				var cand Key
				cand[0] = plain[0]
				for w := 0; w < c.nW; w++ {
					cand[1+int(perm[w])] = plain[1+w]
				}
				for h := 0; h < c.nH; h++ {
					ws := [model.HandoffWords]uint64{plain[base+2*h], plain[base+2*h+1]}
					model.RemapHandoff(&ws, perm)
					cand[base+2*h], cand[base+2*h+1] = ws[0], ws[1]
				}
				c.sym.sortHandoffs(&cand, base, c.nH)
				if i == 0 || less(&cand, &want) {
					want = cand
				}
			}
			c.Canonical(&s, &got)
			if got != want {
				t.Fatalf("%s %s: canonical %x, least renaming %x", file, run, got, want)
			}
			checked++
		}
	})
	if checked == 0 {
		t.Fatal("no configuration renames workers: the test checks nothing")
	}
	t.Logf("%d states", checked)
}
