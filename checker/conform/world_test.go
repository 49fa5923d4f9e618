package conform

import (
	"bytes"
	"reflect"
	"slices"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// A recycled world is the cluster's AttemptWorld for its new size, after
// Prepare, whatever size it had; and it is another incarnation. A new
// world is that before Prepare too; a recycled one keeps what Prepare
// derived for its old size until Prepare derives it again (world always
// prepares what it fills).
func TestWorldIsAttemptWorld(t *testing.T) {
	h := &obslog.Header{Policy: spec.SourceFirst, Engine: model.VLLM, Processes: []obslog.Process{
		{Name: "p", Role: obslog.RolePrefill}, {Name: "d", Role: obslog.RoleDecode}}}
	j, err := newJudge(h, "t.jsonl", Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := new(world)
	for i, size := range [][2]int64{{100, 0}, {3582, 64}, {1, 0}, {5000, 4096}} {
		j.fillWorld(w, size[0], size[1])
		want := j.cfg.AttemptWorld(model.Tokens(size[0]), model.Tokens(size[1]))
		want.DeferAdmission = true
		if i == 0 && !reflect.DeepEqual(&w.cfg, want) {
			t.Fatalf("size %v: %+v, want %+v", size, w.cfg, *want)
		}
		if err := w.cfg.Prepare(); err != nil {
			t.Fatal(err)
		}
		if err := want.Prepare(); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(&w.cfg, want) {
			t.Fatalf("size %v, prepared: %+v, want %+v", size, w.cfg, *want)
		}
	}
	// Sizes beyond maxWorlds: the worlds no open attempt uses are
	// recycled, each time a new incarnation.
	a := &attempt{}
	first, _ := j.world(10, 0)
	j.enter(a, first)
	ids := map[uint64]bool{}
	for p := int64(11); p < 11+3*maxWorlds; p++ {
		w, err := j.world(p, 0)
		if err != nil {
			t.Fatal(err)
		}
		if ids[w.id] || w == first {
			t.Fatalf("size %d: world %d again, or the one an open attempt uses", p, w.id)
		}
		ids[w.id] = true
	}
	if len(j.freeWorlds) == 0 || first.refs != 1 {
		t.Fatalf("nothing recycled (%d free), or the open attempt's world lost (%d refs)", len(j.freeWorlds), first.refs)
	}
	j.leave(a)
	if first.refs != 0 || !slices.Contains(j.freeWorlds, first) {
		t.Fatalf("the world of the forgotten attempt is not recycled")
	}
}

// An attempt whose decode route gives a prefix hit after its prefill's
// facts is carried into the world of its hit (carry), and judged as when
// it is searched again there from its first fact: the same report, on
// the simulator's logs of both policies, complete and milestones only.
func TestCarryLateHit_JudgedAlike(t *testing.T) {
	defer func(c bool) { carryLate = c }(carryLate)
	for _, pol := range []string{"source-first", "destination-first"} {
		for _, ms := range []bool{false, true} {
			var log bytes.Buffer
			writeSimLog(t, &log, pol, ms, 400)
			judge := func(carry bool) *Report {
				carryLate = carry
				rep, err := Judge([]Input{{Name: "sim.jsonl", R: bytes.NewReader(log.Bytes())}}, Options{})
				if err != nil {
					t.Fatal(err)
				}
				return rep
			}
			with, without := judge(true), judge(false)
			if with.Verdict != Explained {
				t.Fatalf("%s milestones=%v: %s %+v", pol, ms, with.Verdict, with.Rejection)
			}
			if !reflect.DeepEqual(with, without) {
				t.Errorf("%s milestones=%v: carried %+v, searched again %+v", pol, ms, *with, *without)
			}
			// And explanations were carried: the attempts with a hit.
			carryLate = true
			r, err := obslog.NewReader(bytes.NewReader(log.Bytes()), "sim.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			j, err := newJudge(r.Header(), "sim.jsonl", Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := j.readOne(r, nil); err != nil {
				t.Fatal(err)
			}
			j.gone.close()
			if j.carried == 0 {
				t.Errorf("%s milestones=%v: no explanation carried", pol, ms)
			}
		}
	}
}
