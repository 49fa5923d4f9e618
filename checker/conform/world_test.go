package conform

import (
	"reflect"
	"slices"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// A recycled world is the cluster's AttemptWorld for its new size, after
// Prepare too, whatever size it had; and it is another incarnation.
func TestWorldIsAttemptWorld(t *testing.T) {
	h := &obslog.Header{Policy: spec.SourceFirst, Engine: model.VLLM, Processes: []obslog.Process{
		{Name: "p", Role: obslog.RolePrefill}, {Name: "d", Role: obslog.RoleDecode}}}
	j, err := newJudge(h, "t.jsonl", Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := new(world)
	for _, size := range [][2]int64{{100, 0}, {3582, 64}, {1, 0}, {5000, 4096}} {
		j.fillWorld(w, size[0], size[1])
		want := j.cfg.AttemptWorld(model.Tokens(size[0]), model.Tokens(size[1]))
		want.DeferAdmission = true
		if !reflect.DeepEqual(&w.cfg, want) {
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
