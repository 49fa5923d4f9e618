package props

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// clockSystem is the composed system of run vllm of small.json, whose
// states the tests of the clock set by hand.
func clockSystem(t *testing.T) *system.System {
	t.Helper()
	data, err := os.ReadFile("../../testdata/configs/small.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := system.ParseConfig("small.json", data)
	if err != nil {
		t.Fatal(err)
	}
	sys, err := system.New(system.Generated(), cfg, cfg.Runs[0])
	if err != nil {
		t.Fatal(err)
	}
	return sys
}

// The obligations of a leads_to within on the clock: met by a Q in time
// (the deadline itself included), missed when the clock passes the
// deadline, when Q comes late, or when the subject is gone with Q false;
// open at the end with the deadline ahead: undecided. Sometimes
// properties are reached or not, antecedents held or not.
func TestClock_Obligations(t *testing.T) {
	sys := clockSystem(t)
	set, err := Load("c.props", []byte(`handoffcheck.props/v1
leads_to Released per handoff: h.source_hold == "pinned" ~> h.source_hold != "pinned" within 10ms
sometimes Pinned per handoff: h.source_hold == "pinned"
sometimes Tainted per handoff: h.tainted
always TaintedFailed per handoff: !h.tainted || h.transfer == "failed"
`))
	if err != nil {
		t.Fatal(err)
	}
	pinned, free := sys.Initial(), sys.Initial()
	pinned.W.H[0].Src = model.SrcPinned
	c := NewClock(set)
	observe := func(s *system.State, subject int, at int64) {
		t.Helper()
		if _, err := c.Observe(sys, s, subject, at, at); err != nil {
			t.Fatal(err)
		}
	}
	observe(&pinned, 1, 0)
	observe(&pinned, 1, 2000) // still pinned: the same obligation
	observe(&pinned, 6, 0)
	observe(&pinned, 2, 1000)
	observe(&pinned, 4, 3000)
	observe(&free, 1, 5000)
	observe(&free, 6, 10000) // at the deadline: met
	if got := c.Open(1) + c.Open(6); got != 0 {
		t.Fatalf("%d obligations of subjects 1 and 6 open after Q", got)
	}
	c.Advance(11000)
	if ms := c.Take(); len(ms) != 0 {
		t.Fatalf("missed at the deadline itself: %+v", ms)
	}
	c.Advance(11001)
	ms := c.Take()
	if len(ms) != 1 || ms[0].Subject != 2 || ms[0].Deadline != 11000 || ms[0].Late != -1 || ms[0].GoneAt != -1 {
		t.Fatalf("passed deadline: %+v", ms)
	}
	c.Gone(4, 4000)
	ms = c.Take()
	if len(ms) != 1 || ms[0].Subject != 4 || ms[0].GoneAt != 4000 || !strings.Contains(ms[0].Detail(), "the handoff was gone at 4.000 ms") {
		t.Fatalf("gone: %+v", ms)
	}
	// Judged after the fact (conform): Q late is a miss.
	observe(&pinned, 3, 20000)
	observe(&free, 3, 30001)
	ms = c.Take()
	if len(ms) != 1 || ms[0].Subject != 3 || ms[0].Late != 30001 || !strings.Contains(ms[0].Detail(), "held only at 30.001 ms, after the deadline 30.000 ms") {
		t.Fatalf("late: %+v", ms)
	}
	observe(&pinned, 5, 40000)
	rep := c.Report("", func(i int) string { return "subject " + strconv.Itoa(i) })
	byName := map[string]RunVerdict{}
	for _, v := range rep.Properties {
		byName[v.Name] = v
	}
	r := byName["Released"]
	if r.Verdict != VerdictViolated || r.Obligations != 6 || r.Met != 2 || r.Undecided != 1 || r.LongestMS != 10 || !strings.HasPrefix(r.Detail, "subject 2: ") {
		t.Fatalf("Released: %+v", r)
	}
	if v := byName["Pinned"]; v.Verdict != VerdictReached || v.First == nil || v.First.Subject != "subject 1" || v.First.AtUS != 0 {
		t.Fatalf("Pinned: %+v", v)
	}
	if v := byName["Tainted"]; v.Verdict != VerdictNotReached || !strings.Contains(v.Detail, "no proof") {
		t.Fatalf("Tainted: %+v", v)
	}
	if v := byName["TaintedFailed"]; v.Verdict != VerdictNotViolated || !v.Vacuous || v.Antecedent != "h.tainted" {
		t.Fatalf("TaintedFailed: %+v", v)
	}
	// Without the misses, the obligation open at the end is undecided.
	c = NewClock(set)
	observe(&pinned, 5, 40000)
	if v := c.Report("", func(int) string { return "" }).Properties[0]; v.Verdict != VerdictNotDecided || v.Undecided != 1 {
		t.Fatalf("open at the end: %+v", v)
	}
}
