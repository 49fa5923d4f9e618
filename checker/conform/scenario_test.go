package conform

import (
	"bytes"
	"context"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/sim"
)

// simLog runs a scenario under a policy and returns its observation log,
// keeping the kinds in records.
func simLog(t testing.TB, sc *sim.Scenario, policy string, records obslog.KindSet) []byte {
	t.Helper()
	cfg, reqs, faults, err := sc.Setup(policy)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := obslog.NewWriter(&buf, cfg.LogHeader(records))
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), cfg, &sim.SliceSource{Reqs: reqs}, sim.Options{Faults: faults, FaultFree: sc.FaultFree, Log: w})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil {
		t.Fatalf("%s %s: the simulation broke %s", sc.Name, policy, res.Violation.Invariant)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func judgeBytes(t testing.TB, name string, data []byte, opt Options) *Report {
	t.Helper()
	rep, err := Judge([]Input{{Name: name, R: bytes.NewReader(data)}}, opt)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return rep
}

// Every log the simulator writes for the scenario set, with its faults,
// is explained: complete, and with only the milestones.
func TestScenarioLogsConform(t *testing.T) {
	for i := range sim.Scenarios {
		sc := &sim.Scenarios[i]
		for _, pol := range []string{"source-first", "destination-first"} {
			for _, rec := range []struct {
				name string
				set  obslog.KindSet
			}{{"complete", obslog.All}, {"milestones", obslog.Of(obslog.Milestones()...) | obslog.Of(obslog.WorkerRestarted)}} {
				t.Run(sc.Name+"/"+pol+"/"+rec.name, func(t *testing.T) {
					data := simLog(t, sc, pol, rec.set)
					rep := judgeBytes(t, sc.Name, data, Options{})
					if rep.Verdict != Explained {
						t.Fatalf("%s: %+v", rep.Verdict, rep.Rejection)
					}
					t.Logf("%d facts, %d attempts, %d restarts, %d unlogged steps (gap %d), %d unlogged faults, bound reached %d",
						rep.Facts, rep.Attempts, rep.Restarts, rep.Unlogged, rep.LongestGap, rep.FaultsUsed, rep.BoundReached)
				})
			}
		}
	}
}
