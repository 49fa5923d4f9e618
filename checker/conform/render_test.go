package conform

import (
	"strings"
	"testing"
)

// The report renders itself, as conform and live print it: a rejection
// names the fact's file:line, the invariant, what the tables allowed
// instead and the attempt's explained prefix.
func TestReport_WriteText(t *testing.T) {
	r := &Report{Files: []string{"a.jsonl", "b.jsonl"}, Policy: "source-first", Engine: "vllm", Facts: 9, Attempts: 2, Restarts: 1,
		Bound: 16, MaxFaults: 2, Unlogged: 3, LongestGap: 1, BoundReached: 0, PeakOpen: 2, Verdict: Rejected,
		Rejection: &Rejection{File: "b.jsonl", Line: 7, Fact: "decode-0 gen 0 attempt a0: stored blocks=4", Invariant: "NoStoredBeforeActivation",
			Detail: "a destination publishes Stored only after activation", Allowed: []string{"activated by the decode worker"},
			Explained: []string{"a.jsonl:2 routed"}, Prefix: 6}}
	var b strings.Builder
	r.WriteText(&b)
	want := `conform a.jsonl b.jsonl (source-first on vllm): 9 facts, 2 attempts, 1 restarts
search: at most 16 unlogged steps between facts and 2 unlogged faults per attempt; the explanations took 3 unlogged steps (longest gap 1) and 0 unlogged faults; the bound was reached in 0 attempts; at most 2 attempts open at once
verdict: rejected at b.jsonl:7
  fact: decode-0 gen 0 attempt a0: stored blocks=4
  invariant: NoStoredBeforeActivation
  a destination publishes Stored only after activation
  the tables allowed instead:
    activated by the decode worker
  explained before it: 6 facts of the logs; the attempt's explained prefix:
    a.jsonl:2 routed
`
	if b.String() != want {
		t.Errorf("got\n%swant\n%s", b.String(), want)
	}
	r.Rejection, r.Verdict = nil, Explained
	b.Reset()
	r.WriteText(&b)
	if !strings.HasSuffix(b.String(), "\nverdict: explained: a behavior of the tables explains every fact, every invariant holding along it\n") {
		t.Errorf("an explained report ends:\n%s", b.String())
	}
}
