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

// milestonesOf derives a log of milestones from a complete log: the
// header's records say milestones, and the lines of other kinds go.
func milestonesOf(t testing.TB, data []byte) []byte {
	l := readLog(t, data)
	h := *l.h
	h.Processes = append([]obslog.Process(nil), h.Processes...)
	keep := obslog.Of(obslog.Milestones()...) | obslog.Of(obslog.WorkerRestarted)
	for i := range h.Processes {
		h.Processes[i].Records = keep
	}
	var b bytes.Buffer
	w, err := obslog.NewWriter(&b, &h)
	if err != nil {
		t.Fatal(err)
	}
	w.Flush()
	for i, f := range l.facts {
		if keep.Has(f.Kind) {
			b.WriteString(l.lines[i+1])
		}
	}
	return b.Bytes()
}

// Every log the simulator writes for the scenario set, with its faults,
// is explained: complete, and with only the milestones, which are the
// complete log with the other lines taken out.
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
					if rec.name == "milestones" {
						if derived := milestonesOf(t, simLog(t, sc, pol, obslog.All)); !bytes.Equal(derived, data) {
							t.Fatal("the simulator's log of milestones is not its complete log without the other lines")
						}
					}
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
