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
		if cluster.AtTime(k) && !kind.Phase {
			continue // a worker's, at its time: the coordinator's timed list
		}
		// A kind aimed at a phase is tried in that form; one struck where
		// offered in its own form too.
		var forms []string
		if kind.Phase {
			forms = append(forms, "registered")
		}
		if !kind.Phase || kind.Offered {
			forms = append(forms, "")
		}
		for _, after := range forms {
			everyMarkReachesItsStriker(t, k, after)
		}
	}
}

// everyMarkReachesItsStriker: a mark of kind k, aimed at a phase when
// after is given, reaches the process that strikes it.
func everyMarkReachesItsStriker(t *testing.T, k system.Fault, after string) {
	t.Helper()
	kind := &system.FaultKinds[k]
	f := cluster.Fault{File: "plan.jsonl", Line: 2, Kind: k.String(), Request: 0, Worker: -1, Side: "destination", After: after}
	var m cluster.Marks
	if err := m.Mark(&f); err != nil {
		t.Fatalf("%s: %v", k, err)
	}
	frames := workerMarks(&m)
	// The coordinator strikes a cancel (Frontend), but one aimed at a phase
	// waits for the side's worker to tell it the phase came.
	coordinator := (kind.Frontend && after == "") || kind.Instead == system.MvDeliver
	if coordinator {
		if len(frames) != 0 {
			t.Errorf("%s: the coordinator strikes it, yet workers got %v", k, frames)
		}
		return
	}
	if len(frames) == 0 {
		t.Errorf("%s: no worker got the mark", k)
		return
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
		if cluster.NamesSide(k) && sd != model.DestinationSide {
			t.Errorf("%s: a mark on the destination went to the %s", k, fr.To)
		}
	}
}
