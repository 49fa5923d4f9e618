package conform

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/model"
)

// The blocks the attempts in flight hold together are judged against the
// worker's pool: the valid example, judged with a decode pool of 200
// blocks instead of its 300, breaks CapacityRespected where a second
// 128-page reservation joins the first; a log of milestones, whose
// processes do not log every release, is not judged so.
func TestCapacityAcrossAttempts(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(logsDir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	small, err := cluster.ParseConfig("small.json", bytes.Replace(data, []byte(`"capacity_blocks": 300`), []byte(`"capacity_blocks": 200`), 1))
	if err != nil {
		t.Fatal(err)
	}
	complete, _ := os.ReadFile(filepath.Join(logsDir, "valid", "source-first-complete.jsonl"))
	rep := judgeBytes(t, "complete", complete, Options{Config: small})
	if rep.Verdict != Rejected || rep.Rejection.Invariant != model.NameCapacityRespected || rep.Rejection.Line != 76 {
		t.Fatalf("%s %+v", rep.Verdict, rep.Rejection)
	}
	if rep := judgeBytes(t, "complete", complete, Options{}); rep.Verdict != Explained {
		t.Fatalf("with its own configuration: %s %+v", rep.Verdict, rep.Rejection)
	}
	milestones, _ := os.ReadFile(filepath.Join(logsDir, "valid", "source-first-milestones.jsonl"))
	if rep := judgeBytes(t, "milestones", milestones, Options{Config: small}); rep.Verdict != Explained {
		t.Fatalf("milestones: %s %+v", rep.Verdict, rep.Rejection)
	}
}
