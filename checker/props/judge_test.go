package props

import (
	"context"
	"os"
	"sync/atomic"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// crossCheck judges every state twice: by the cached judgements of the
// local properties and by evaluating every property on the state's view,
// and counts the states where they differ.
type crossCheck struct {
	set            *Set
	states, differ atomic.Int64
}

func (c *crossCheck) Judge(sys *system.System, s *system.State) *model.Violation {
	c.states.Add(1)
	fresh := newActivation(sys, s)
	defer fresh.done()
	a := newActivation(sys, s)
	defer a.done()
	sn := c.set.seenBy(sys)
	for h := 0; h < sys.World().NumHandoffs(); h++ {
		bits := c.set.localBits(sn, a, h)
		fresh.h = &fresh.allHandoffs()[h]
		for _, p := range c.set.Props {
			ok, err := evalBool(p.prg, fresh)
			if err != nil || ok != (bits>>p.bit&bitHolds != 0) {
				c.differ.Add(1)
			}
		}
	}
	return nil
}

// The cache of local judgements keyed by a handoff's packed state gives
// what evaluating the expressions gives, on every state of a search with
// two handoffs, commands and faults.
func TestJudge_CacheAgreesWithEvaluation(t *testing.T) {
	data, err := os.ReadFile("../../testdata/configs/two-handoffs.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := system.ParseConfig("two-handoffs.json", data)
	if err != nil {
		t.Fatal(err)
	}
	set, err := Load("three.props", []byte(threeAlways+`sometimes BothOK per handoff: h.source_outcome == "ok" && h.destination_outcome == "ok"
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range set.Props {
		if !p.local {
			t.Fatalf("%s is not local", p.Name)
		}
	}
	cc := &crossCheck{set: set}
	cfg.Judge = cc
	rep, err := checker.Check(context.Background(), system.Generated(), cfg, cfg.Runs, checker.Limits{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Runs {
		if !r.Complete {
			t.Fatalf("run %s incomplete", r.Run.Name)
		}
	}
	if cc.states.Load() < 10000 || cc.differ.Load() != 0 {
		t.Fatalf("%d states judged, %d judgements differ", cc.states.Load(), cc.differ.Load())
	}
}
