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
			// A key left over from another state: canonical writes every
			// word, those past the state's included.
			for i := range got {
				got[i] = ^uint64(0)
			}
			c.canonical(&s, &got)
			if got != want {
				t.Fatalf("%s %s: canonical %x, least renaming %x", file, run, got, want)
			}
			// The form that also says how it renamed (sleep sets) gives
			// the same key.
			var named Key
			var nm naming
			c.canonicalNaming(&s, &named, &nm)
			if named != want {
				t.Fatalf("%s %s: canonical with its naming %x, least renaming %x", file, run, named, want)
			}
			checked++
		}
	})
	if checked == 0 {
		t.Fatal("no configuration renames workers: the test checks nothing")
	}
	t.Logf("%d states", checked)
}

// TestCanonicalFrom_EqualsCanonical holds the explorer's form, which
// takes the words of the handoffs a move left alone from the parent's
// key, to canonical on every successor of a sample of states, each parent
// unpacked from its canonical key as the explorer does. With and without
// symmetry, so that every form of canonical is met.
func TestCanonicalFrom_EqualsCanonical(t *testing.T) {
	checked := 0
	everyRun(t, []string{"two-handoffs.json", "max-shape.json", "three-handoffs.json"}, func(file, run string, c *System) {
		for _, sym := range []symmetry{c.sym, {}} {
			cs := *c
			cs.sym = sym
			for _, s := range porSample(&cs, 1500) {
				var pk Key
				cs.canonical(&s, &pk)
				var p State
				cs.UnpackTo(&pk, &p)
				for _, m := range cs.MovesInto(&p, nil) {
					succ := p
					if _, _, err := cs.Step(&succ, m, nil); err != nil {
						t.Fatal(err)
					}
					for h := range succ.W.H {
						if model.SameHandoff(&succ.W.H[h], &p.W.H[h]) != (succ.W.H[h] == p.W.H[h]) {
							t.Fatalf("%s %s: move %v: SameHandoff of handoff %d differs from ==", file, run, m, h)
						}
					}
					var want, got Key
					cs.canonical(&succ, &want)
					for i := range got {
						got[i] = ^uint64(0)
					}
					cs.CanonicalFrom(&succ, &p, &pk, &got, int(m.H))
					if got != want {
						t.Fatalf("%s %s: move %v: from the parent %x, canonical %x", file, run, m, got, want)
					}
					checked++
				}
			}
		}
	})
	t.Logf("%d successors", checked)
}
