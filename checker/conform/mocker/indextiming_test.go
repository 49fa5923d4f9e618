package mocker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/conform"
	"github.com/handoffcheck/handoffcheck/model"
)

// The mocker publishes a handoff's computed source KV with the pass that
// completes its prefill (the pass's kv_events), as the accounting table
// says; a log whose pass publishes nothing is rejected where the prefill
// worker goes on without it, for the stored it owes, not for a release
// cause its bookkeeping never logs.
func TestMockerSourceStoredAtThePass(t *testing.T) {
	for _, name := range []string{"source-first.jsonl", "destination-first.jsonl"} {
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitAfter(string(data), "\n")
		pass := -1
		for i, l := range lines {
			if strings.Contains(l, `"event":"pass","role":"prefill"`) && strings.Contains(l, `"kv_events":[{"kind":"stored"`) {
				pass = i
				break
			}
		}
		if pass < 0 {
			t.Fatalf("%s: no prefill pass publishes its computed KV", name)
		}
		lines[pass] = lines[pass][:strings.Index(lines[pass], `,"kv_events"`)] + "}\n"
		bad := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(bad, []byte(strings.Join(lines, "")), 0o644); err != nil {
			t.Fatal(err)
		}
		rep, _ := judge(t, bad)
		x := rep.Rejection
		if rep.Verdict != conform.Rejected || x.Invariant == model.NameReleaseNeedsReaderAck || x.Invariant == model.NameRouterCleanup {
			t.Fatalf("%s without the pass's stored: %s %+v", name, rep.Verdict, x)
		}
		if !strings.Contains(x.Detail, "owes stored by the prefill worker") || !strings.Contains(x.Detail, "step compute") {
			t.Errorf("%s: the rejection does not say the compute step owes the stored: %s", name, x.Detail)
		}
	}
}
