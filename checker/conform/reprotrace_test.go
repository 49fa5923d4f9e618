package conform

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"
)

// A rejection's trace is its explanation in structure: one step for each
// explained fact the report marks with a step and each unlogged step, in
// the report's order, and a world a configuration file gives, of one run
// of the log's policy and engine and one handoff. A rejection no
// explanation reached has none.
func TestRejectionTrace_IsTheExplanation(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(logsDir, "invalid", "expect.json"))
	if err != nil {
		t.Fatal(err)
	}
	var exp []expectation
	if err := json.Unmarshal(raw, &exp); err != nil {
		t.Fatal(err)
	}
	for _, e := range exp {
		f, err := os.Open(filepath.Join(logsDir, "invalid", e.File))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Judge([]Input{{Name: e.File, R: f}}, Options{})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		r := rep.Rejection
		if r == nil {
			t.Fatalf("%s: not rejected", e.File)
		}
		tr := r.Trace
		if (tr == nil) != (len(r.Explained) == 0) {
			t.Fatalf("%s: trace %v for %d explained lines", e.File, tr != nil, len(r.Explained))
		}
		if tr == nil {
			continue
		}
		var steps []string
		for _, l := range r.Explained {
			if m, ok := strings.CutPrefix(l, "unlogged: "); ok {
				steps = append(steps, m)
			} else if i := strings.LastIndex(l, " (step "); i >= 0 {
				steps = append(steps, strings.TrimSuffix(l[i+len(" (step "):], ")"))
			}
		}
		var got []string
		for _, m := range tr.Moves {
			got = append(got, m.String())
		}
		if strings.Join(got, "; ") != strings.Join(steps, "; ") || len(tr.Facts) != len(tr.Moves) {
			t.Errorf("%s: the trace's steps\n  %s\nthe report's\n  %s", e.File, strings.Join(got, "; "), strings.Join(steps, "; "))
		}
		if tr.ConfigJSON == nil {
			t.Fatalf("%s: no configuration: %s", e.File, tr.Why)
		}
		cfg, err := system.ParseConfig(e.File, tr.ConfigJSON)
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Runs) != 1 || cfg.Runs[0].Name != tr.Run || cfg.Runs[0].Policy.String() != rep.Policy || cfg.Runs[0].Engine.String() != rep.Engine || len(cfg.World.Handoffs) != 1 {
			t.Errorf("%s: %d runs (%+v), %d handoffs", e.File, len(cfg.Runs), cfg.Runs, len(cfg.World.Handoffs))
		}
	}
}
