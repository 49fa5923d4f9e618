package checker

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// notExercised lists the invariants of a run whose trigger never fired.
func notExercised(ex []exercise) []string {
	var out []string
	for _, x := range ex {
		if x.Unconditional == "" && !x.Exercised {
			out = append(out, x.Name)
		}
	}
	return out
}

// On two handoffs with faults, a complete search exercises every invariant
// under destination-first, all but destination-first's gate under
// source-first, and, on an engine that cannot reserve, none of those that
// judge a reservation, a transfer or an activation: it never starts one.
// Walks exercise no invariant the search does not.
func TestVacuity_TwoHandoffsFaults(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/two-handoffs-faults.json")
	rep, err := Check(context.Background(), system.Generated(), cfg, cfg.Runs, Limits{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	noReservation := []string{model.NameTransferNeedsReservation, model.NameNoActivationFromInvalidKv, model.NameDestinationHeldWhileWritten,
		model.NameFailedTransferNeverActivates, model.NameReservationCountsAtOnce, model.NameNoStoredBeforeActivation,
		model.NameDestinationFirstGate, model.NameFaultFreeCompletion}
	want := map[string][]string{
		"vllm":   {model.NameDestinationFirstGate},
		"sglang": nil,
		"trtllm": noReservation,
	}
	wrep, err := Check(context.Background(), system.Generated(), cfg, cfg.Runs, Limits{Seed: 1, Walks: 50, Steps: 60, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range rep.Runs {
		w, ok := want[x.Run.Name]
		if !ok {
			continue
		}
		if !x.Complete {
			t.Fatalf("run %s did not complete", x.Run.Name)
		}
		got := notExercised(rep.exercises(i))
		if !slices.Equal(got, w) {
			t.Errorf("run %s: not exercised %v, want %v", x.Run.Name, got, w)
		}
		walks := notExercised(wrep.walks.Runs[i].exercises(wrep.checkers[i]))
		for _, name := range got {
			if name != model.NameEventuallyDrained && !slices.Contains(walks, name) {
				t.Errorf("run %s: the walks exercised %s, which the complete search never did", x.Run.Name, name)
			}
		}
	}
	text := rep.text(TextOptions{NoTiming: true})
	for _, line := range []string{
		"  vacuous here: DestinationFirstGate (the policy is not destination-first)\n",
		"  every invariant's trigger fired\n",
		"  vacuous here: TransferNeedsReservation (no transfer started), ",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("the report lacks %q:\n%s", line, text)
		}
	}
}

// The triggers fired do not depend on how many workers searched: each
// keeps its own and they are merged.
func TestVacuity_SameOnAnyNumberOfWorkers(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/two-handoffs-faults.json")
	var fired []model.Triggers
	for _, workers := range []int{1, 2} {
		c, err := New(system.Generated(), cfg, cfg.Runs[0])
		if err != nil {
			t.Fatal(err)
		}
		r := c.checkRun(context.Background(), Limits{Workers: workers, Liveness: true}, nil)
		fired = append(fired, r.Coverage.Fired)
	}
	if fired[0] != fired[1] || fired[0]&model.TrigLiveness == 0 {
		t.Errorf("fired %#x on one worker, %#x on two (liveness judged: %v)", fired[0], fired[1], fired[0]&model.TrigLiveness != 0)
	}
}

// A search cut by a bound does not call what it did not reach vacuous.
func TestVacuity_CutByABound(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/small.json")
	rep, err := Check(context.Background(), system.Generated(), cfg, cfg.Runs[:1], Limits{Workers: 1, MaxDepth: 3, Liveness: true})
	if err != nil {
		t.Fatal(err)
	}
	text := rep.text(TextOptions{NoTiming: true})
	if !strings.Contains(text, "  not exercised before the bound: TransferNeedsReservation (no transfer started), ") ||
		strings.Contains(text, "vacuous here") || !strings.Contains(text, "EventuallyDrained (the explored graph was not judged)") {
		t.Errorf("a bounded search's report:\n%s", text)
	}
}

// The JSON report gives every invariant checked: exercised or not (and
// why not), or unconditional.
func TestVacuity_JSON(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/small.json")
	rep, err := Check(context.Background(), system.Generated(), cfg, cfg.Runs, Limits{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	data, err := rep.marshal(TextOptions{NoTiming: true})
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Runs []struct {
			Name    string         `json:"name"`
			Vacuity []jsonExercise `json:"vacuity"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Runs {
		if len(r.Vacuity) != len(rep.Invariants) {
			t.Fatalf("run %s: %d invariants in vacuity, %d checked", r.Name, len(r.Vacuity), len(rep.Invariants))
		}
		for i, v := range r.Vacuity {
			switch {
			case v.Invariant != rep.Invariants[i]:
				t.Errorf("run %s: entry %d is %s, want %s", r.Name, i, v.Invariant, rep.Invariants[i])
			case (v.Unconditional != "") == (v.Exercised != nil):
				t.Errorf("run %s: %s is neither exercised nor unconditional, or both: %+v", r.Name, v.Invariant, v)
			case v.Exercised != nil && *v.Exercised == (v.Why != ""):
				t.Errorf("run %s: %s: why %q with exercised %v", r.Name, v.Invariant, v.Why, *v.Exercised)
			}
		}
		gate := r.Vacuity[slices.Index(rep.Invariants, model.NameDestinationFirstGate)]
		if want := r.Name != "sglang"; *gate.Exercised == want {
			t.Errorf("run %s: DestinationFirstGate exercised %v", r.Name, *gate.Exercised)
		}
	}
}

// The invariant a run found violated was exercised, even where nothing
// but the violation fired its trigger.
func TestVacuity_ViolatedIsExercised(t *testing.T) {
	names := []string{model.NameIndexMatchesCache, model.NameTransferNeedsReservation}
	ex := exercises(names, 0, nil, model.NameIndexMatchesCache)
	if !ex[0].Exercised || ex[1].Exercised || ex[1].Why != "no transfer started" {
		t.Errorf("exercises = %+v", ex)
	}
}

// Merged shards exercised an invariant when any shard did; what no shard
// exercised keeps its why.
func TestVacuity_MergedShards(t *testing.T) {
	yes, no := true, false
	a := []jsonExercise{{Invariant: "A", Exercised: &no, Why: "no a"}, {Invariant: "B", Exercised: &no, Why: "no b"}, {Invariant: "C", Unconditional: "every state"}}
	b := []jsonExercise{{Invariant: "A", Exercised: &yes}, {Invariant: "B", Exercised: &no, Why: "no b"}, {Invariant: "C", Unconditional: "every state"}}
	m := mergeVacuity(nil, a, true)
	m = mergeVacuity(m, b, false)
	if !*m[0].Exercised || m[0].Why != "" || *m[1].Exercised || m[1].Why != "no b" || m[2].Unconditional == "" {
		t.Errorf("merged %+v", m)
	}
	if *a[0].Exercised {
		t.Error("merging changed a shard's report")
	}
}

// Partial-order reduction and sleep sets leave moves to successors, which
// take them: the reduced search fires the triggers the full one does.
//
// The searches are the ones TestPOR_SameVerdictsOnEveryConfiguration and
// TestSleep_SameVerdictsOnEveryConfiguration compare (fullSearch,
// reducedSearch): each is run once for all three tests.
func TestVacuity_ReductionFiresWhatTheFullSearchFires(t *testing.T) {
	for _, file := range []string{"two-handoffs-faults.json", "commands.json"} {
		cfg := testdataConfig(t, file)
		for _, run := range cfg.Runs {
			var fired []model.Triggers
			c := checkerFor(t, system.Generated(), cfg, run.Name)
			what := file + " " + run.Name
			for _, lim := range []Limits{{Workers: 1}, {Workers: 1, Reduce: true}, {Workers: 1, Reduce: true, Sleep: true}} {
				var r *Result
				if lim.Reduce {
					r = reducedSearch(what, c, lim)
				} else {
					r = fullSearch(what, c, lim.Workers)
				}
				if !r.Complete {
					t.Fatalf("%s %s: incomplete", file, run.Name)
				}
				fired = append(fired, r.Coverage.Fired)
			}
			if fired[1] != fired[0] || fired[2] != fired[0] {
				t.Errorf("%s %s: fired %#x in full, %#x reduced, %#x with sleep sets", file, run.Name, fired[0], fired[1], fired[2])
			}
		}
	}
}
