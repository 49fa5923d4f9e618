package cluster

import (
	"math/rand/v2"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
)

func fact(kind obslog.Kind, worker int, blocks int64) *obslog.Fact {
	return &obslog.Fact{Proc: worker + 1, Kind: kind, Blocks: blocks, Attempt: "r0", To: -1}
}

// The KV-aware router reads the index the workers publish: a group's
// blocks published on worker 3 steer the group's request there although
// worker 2 is less loaded; once they are removed (or the worker restarted)
// they steer nothing and the least loaded worker wins again.
func TestKVIndex_RouterFollowsThePublishedIndex(t *testing.T) {
	x := NewKVIndex(4)
	loads := []int64{0, 0, 10, 50} // decode workers 2 and 3
	load := func(w int) int64 { return loads[w] }
	route := func(group string) int {
		var next int
		return Choose(KVAware, 2, 4, &next, rand.New(rand.NewPCG(1, 2)), load, func(w int) bool { return x.Holds(w, group) })
	}
	if w := route("g"); w != 2 {
		t.Fatalf("an empty index routed to %d, want the least loaded, 2", w)
	}
	steps := []struct {
		f     *obslog.Fact
		group string
		want  int // where group g routes after the fact
	}{
		{fact(obslog.Stored, 3, 12), "g", 3},
		{fact(obslog.Stored, 0, 40), "g", 3}, // a prefill worker's: not a decode candidate
		{fact(obslog.Stored, 3, 5), "g", 3},  // a second attempt of the group
		{fact(obslog.Removed, 3, 12), "g", 3},
		{fact(obslog.Removed, 3, 5), "g", 2}, // every block of the group removed
		{fact(obslog.Stored, 3, 8), "h", 2},  // another group's blocks steer nothing for g
		{fact(obslog.Stored, 3, 8), "g", 3},
		{fact(obslog.WorkerRestarted, 3, 0), "", 2},
	}
	for i, s := range steps {
		if err := x.Apply(s.f, s.group); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if w := route("g"); w != s.want {
			t.Fatalf("step %d (%s of %d blocks on worker %d, group %q): g routes to %d, want %d",
				i, obslog.Kinds[s.f.Kind].Name, s.f.Blocks, s.f.Proc-1, s.group, w, s.want)
		}
	}
	if got := x.Blocks(3, "h"); got != 0 {
		t.Errorf("after the restart worker 3 still advertises %d blocks of h", got)
	}
	if x.Holds(0, "") || route("") != 2 {
		t.Error("a request of no group found a prefix")
	}
}

// What was never stored cannot be removed: the index says so, naming
// the worker and the attempt, and a fact from no worker is refused.
func TestKVIndex_RefusesWhatWasNeverStored(t *testing.T) {
	x := NewKVIndex(2)
	if err := x.Apply(fact(obslog.Stored, 1, 4), "g"); err != nil {
		t.Fatal(err)
	}
	if err := x.Apply(fact(obslog.Removed, 1, 5), "g"); err == nil {
		t.Error("removing 5 blocks of 4 advertised was taken")
	} else {
		t.Log(err)
	}
	if err := x.Apply(fact(obslog.Removed, 1, 4), "h"); err == nil {
		t.Error("removing another group's blocks was taken")
	}
	if err := x.Apply(&obslog.Fact{Proc: 0, Kind: obslog.Stored, Blocks: 1}, "g"); err == nil {
		t.Error("a fact of the router (process 0) was taken as a worker's")
	}
	if x.Blocks(1, "g") != 4 {
		t.Errorf("a refused fact changed the index: %d blocks", x.Blocks(1, "g"))
	}
}
