package live

import (
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// Every fault kind the table lets a plan schedule has a striker in a live
// run, and its mark reaches it: the coordinator keeps what its proxy and
// frontend strike, the workers get the rest as mark frames and hold each
// by its typed kind (or, for a restart's phase, wait for the fact). A
// kind added to the fault table that no live rule strikes fails here and
// is refused with the plan's line in a run, never left unstruck.
func TestLive_EveryPlannedKindReachesItsStriker(t *testing.T) {
	for k := range system.NumFaults {
		if !cluster.Planned(k) {
			continue
		}
		if !strikes(k) {
			t.Errorf("%s: no live rule strikes it", k)
			continue
		}
		kind := &system.FaultKinds[k]
		f := cluster.Fault{File: "plan.jsonl", Line: 2, Kind: k.String(), Request: 0, Worker: -1, Side: "destination"}
		switch {
		case kind.Phase:
			f.After = "registered"
		case cluster.AtTime(k):
			continue // a worker's, at its time: the coordinator's timed list
		}
		var m cluster.Marks
		if err := m.Mark(&f); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		frames := workerMarks(&m)
		coordinator := k == system.Cancel || kind.Instead == system.MvDeliver
		if coordinator {
			if len(frames) != 0 {
				t.Errorf("%s: the coordinator strikes it, yet workers got %v", k, frames)
			}
			continue
		}
		if len(frames) == 0 {
			t.Errorf("%s: no worker got the mark", k)
			continue
		}
		for i := range frames {
			fr := frames[i]
			sd, ok := cluster.SideNamed(fr.To)
			if !ok || fr.Kind != KMark {
				t.Fatalf("%s: frame %+v", k, fr)
			}
			w := &worker{mine: sd}
			a := &attempt{}
			w.setMark(a, &fr)
			left := 0
			if a.m != nil {
				left = a.m.Left()
			}
			if w.refused != 0 || (left != 1 && a.trigger == "") {
				t.Errorf("%s: the %s worker refused %d frames, holds %d marks and waits for %q; want the mark held", k, fr.To, w.refused, left, a.trigger)
			}
			if cluster.Takes(k, system.ArgSide) && sd != model.DestinationSide {
				t.Errorf("%s: a mark on the destination went to the %s", k, fr.To)
			}
		}
	}
}
