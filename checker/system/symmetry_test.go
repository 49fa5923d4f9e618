package system

import (
	"github.com/handoffcheck/handoffcheck/checker/internal/relabel"
	"slices"
	"strings"
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

// TestSymmetry_RenamingsAreSymmetries holds every renaming the canonical
// form reduces by to a true symmetry of the system: the states reached
// without symmetry are closed under it (workers renamed, interchangeable
// handoffs exchanged), so the state kept for an orbit behaves as each of
// its members. Two shapes the shipped configurations lack:
// interchangeable workers without interchangeable handoffs (two decode
// workers alike, two handoffs that differ), and the reverse (two handoffs
// alike on decode workers that differ in their slots alone), where a
// reduction that took the workers for interchangeable would merge states
// that behave differently.
func TestSymmetry_RenamingsAreSymmetries(t *testing.T) {
	const (
		prefill = `{"role": "prefill", "capacity_blocks": 8}`
		decode  = `{"role": "decode", "capacity_blocks": 8, "slots": 2, "headroom_tokens": 1024, "prefix_hit_tokens": [16, 16]}`
		oneSlot = `{"role": "decode", "capacity_blocks": 8, "slots": 1, "headroom_tokens": 1024, "prefix_hit_tokens": [16, 16]}`
		handoff = `{"prompt_tokens": 48, "headroom_tokens": 512}`
		other   = `{"prompt_tokens": 32, "headroom_tokens": 256}`
	)
	shape := func(workers, handoffs string) string {
		return `{"schema": "handoffcheck.config/v1",
  "runs": [{"name": "vllm", "policy": "source-first", "engine": "vllm"}, {"name": "sglang", "policy": "destination-first", "engine": "sglang"}],
  "workers": [` + workers + `], "handoffs": [` + handoffs + `],
  "transfer": {"bytes_per_token": 131072, "block_size_tokens": 16}, "faults": {"restart": 1, "cancel": 1}}`
	}
	for _, tc := range []struct {
		name     string
		cfg      string
		perms    int
		handoffs [][]int
	}{
		{"workers alone", shape(prefill+", "+decode+", "+decode, handoff+", "+other), 2, [][]int{{0}, {1}}},
		{"handoffs alone", shape(prefill+", "+decode+", "+oneSlot, handoff+", "+handoff), 1, [][]int{{0, 1}}},
	} {
		for _, run := range []string{"vllm", "sglang"} {
			if testing.Short() && run != "vllm" {
				continue
			}
			t.Run(tc.name+"/"+run, func(t *testing.T) {
				cfg := mustConfig(t, tc.cfg)
				cfg.Symmetry = true
				on := checkerFor(t, Generated(), cfg, run)
				plain := *cfg
				plain.Symmetry = false
				off := checkerFor(t, Generated(), &plain, run)
				perms, classes := on.sym.perms, on.sym.classes
				if len(perms) != tc.perms || !slices.EqualFunc(classes, tc.handoffs, slices.Equal) {
					t.Fatalf("%d worker renamings and handoff classes %v, want %d and %v", len(perms), classes, tc.perms, tc.handoffs)
				}
				full := map[Key]bool{}
				eachState(t, off, func(s *State) bool {
					full[off.Key(s)] = true
					return false
				})
				nW := off.World().NumWorkers()
				for k := range full {
					var s State
					off.UnpackTo(&k, &s)
					for i := 1; i < len(perms); i++ {
						if r := relabelWorkers(&s, &perms[i]); !full[off.Key(&r)] {
							t.Fatalf("renaming workers by %v maps a reachable state to an unreachable one:\n%s", perms[i][:nW], strings.Join(off.DescribeState(&s), "\n"))
						}
					}
					for _, cl := range classes {
						for i := 1; i < len(cl); i++ {
							if !full[swapHandoffs(k, nW, cl[0], cl[i])] {
								t.Fatalf("exchanging handoffs %d and %d maps a reachable state to an unreachable one:\n%s", cl[0], cl[i], strings.Join(off.DescribeState(&s), "\n"))
							}
						}
					}
				}
				t.Logf("%d states reached without symmetry", len(full))
			})
		}
	}
}

// relabelWorkers renames the workers of a state: worker w becomes perm[w]
// (relabel.Workers), the machines' states staying as they are.
func relabelWorkers(s *State, perm *[model.MaxWorkers]int8) State {
	r := *s
	r.W = relabel.Workers(&s.W, perm)
	return r
}

// swapHandoffs exchanges handoffs a and b in a plain key of a run with nW
// workers.
func swapHandoffs(k Key, nW, a, b int) Key {
	base := 1 + nW
	k[base+2*a], k[base+2*b] = k[base+2*b], k[base+2*a]
	k[base+2*a+1], k[base+2*b+1] = k[base+2*b+1], k[base+2*a+1]
	return k
}
