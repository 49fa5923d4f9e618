package conform

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/model"
)

// The KV index's timing is the accounting table's: the source publishes
// its computed KV at compute, as any computed KV (its Stored comes with
// its pin), the destination publishes nothing of its reserved pages
// before receive completion, and its valid KV once activated.

func validExample(t *testing.T, name string) ([]byte, *logLines) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(logsDir, "valid", name))
	if err != nil {
		t.Fatal(err)
	}
	return data, readLog(t, data)
}

func isSource(l *logLines, f *obslog.Fact) bool {
	return l.h.Processes[f.Proc].Role == obslog.RolePrefill
}

// A log that publishes the source's KV at compute is explained: in the
// example logs every source's stored comes in the step of its pinned
// (after it, the facts of one step in the vocabulary's order), none at
// its release.
func TestIndexTiming_SourceStoredAtCompute(t *testing.T) {
	for _, name := range []string{"source-first-complete.jsonl", "destination-first-complete.jsonl"} {
		data, l := validExample(t, name)
		stored := 0
		for i := range l.facts {
			f := &l.facts[i]
			if f.Kind != obslog.Stored || !isSource(l, f) {
				continue
			}
			stored++
			// Back through the facts of the same step (same process,
			// attempt and time) to its pinned.
			k := i - 1
			for k >= 0 && l.facts[k].Kind != obslog.Pinned && l.facts[k].Proc == f.Proc && l.facts[k].Attempt == f.Attempt && l.facts[k].TUS == f.TUS {
				k--
			}
			if k < 0 || l.facts[k].Kind != obslog.Pinned || l.facts[k].Proc != f.Proc || l.facts[k].Attempt != f.Attempt || l.facts[k].TUS != f.TUS || l.facts[k].Blocks != f.Blocks {
				t.Errorf("%s line %d: the source's stored is not in the step of its pinned", name, i+2)
			}
		}
		if stored == 0 {
			t.Errorf("%s: no source publishes its computed KV", name)
		}
		if rep := judgeBytes(t, name, data, Options{}); rep.Verdict != Explained {
			t.Errorf("%s: %s %+v", name, rep.Verdict, rep.Rejection)
		}
	}
}

// firstSourceStored is the index of the first source's stored of an
// attempt whose source later reports success.
func firstSourceStored(t *testing.T, l *logLines) int {
	t.Helper()
	for i := range l.facts {
		f := &l.facts[i]
		if f.Kind != obslog.Stored || !isSource(l, f) {
			continue
		}
		if o := l.find(i, f.Attempt, f.Proc, obslog.OutcomeReported); o >= 0 && l.facts[o].Outcome == model.OutcomeOK {
			return i
		}
	}
	t.Fatal("no source's stored of an attempt that succeeds")
	return -1
}

// A log missing the source's stored is rejected where the source logs
// on without it, and the report says what it owes: the stored of the
// step that pinned, not a router's cleanup.
func TestIndexTiming_SourceStoredMissing(t *testing.T) {
	data, l := validExample(t, "source-first-complete.jsonl")
	i := firstSourceStored(t, l)
	lines := strings.SplitAfter(string(data), "\n")
	bad := edit(lines, []int{i + 2})
	rep := judgeBytes(t, "missing.jsonl", bad, Options{})
	x := rep.Rejection
	if rep.Verdict != Rejected || x.Invariant == model.NameRouterCleanup {
		t.Fatalf("want rejected, not for RouterCleanup: %s %+v", rep.Verdict, x)
	}
	if !strings.Contains(x.Detail, "where it owes stored by the prefill worker") || !strings.Contains(x.Detail, "(step compute h=0)") {
		t.Errorf("the rejection does not say the compute step owes the stored: %s", x.Detail)
	}
	// The stored was line i+2; the attempt's source logs on after it.
	if x.Attempt != l.facts[i].Attempt || x.Line < i+2 {
		t.Errorf("rejected at line %d (attempt %s), want a later fact of attempt %s", x.Line, x.Attempt, l.facts[i].Attempt)
	}
	if !slices.Contains(x.Allowed, "stored by the prefill worker blocks="+strconv.FormatInt(l.facts[i].Blocks, 10)) {
		t.Errorf("the tables' alternatives %v do not name the stored", x.Allowed)
	}

	// The timing the accounting table replaced: the stored at the release.
	f := l.facts[i]
	rel := l.find(i, f.Attempt, f.Proc, obslog.SourceReleased)
	late := edit(lines, []int{i + 2})
	late = []byte(strings.Replace(string(late), lines[rel+1], lines[rel+1]+lines[i+1], 1))
	rep = judgeBytes(t, "late.jsonl", late, Options{})
	if rep.Verdict != Rejected || rep.Rejection.Invariant == model.NameRouterCleanup || !strings.Contains(rep.Rejection.Detail, "owes stored by the prefill worker") {
		t.Errorf("a stored at the release: %s %+v", rep.Verdict, rep.Rejection)
	}
}

// A destination that publishes its reserved pages as Stored before its
// receive completion is rejected at that line, naming the invariant.
func TestIndexTiming_DestinationOverlapEarly(t *testing.T) {
	data, l := validExample(t, "source-first-complete.jsonl")
	lines := strings.SplitAfter(string(data), "\n")
	for i := range l.facts {
		f := &l.facts[i]
		if f.Kind != obslog.Reserved {
			continue
		}
		st := l.find(i, f.Attempt, f.Proc, obslog.Stored)
		if st < 0 {
			continue
		}
		// The stored moves from after the activation to right after the
		// reservation.
		var b strings.Builder
		for k, line := range lines {
			if k == st+1 {
				continue
			}
			b.WriteString(line)
			if k == i+1 {
				b.WriteString(lines[st+1])
			}
		}
		rep := judgeBytes(t, "early.jsonl", []byte(b.String()), Options{})
		x := rep.Rejection
		if rep.Verdict != Rejected || x.Line != i+3 || x.Invariant != model.NameNoStoredBeforeActivation {
			t.Fatalf("want rejected at line %d with %s, got %s %+v", i+3, model.NameNoStoredBeforeActivation, rep.Verdict, x)
		}
		if !strings.Contains(x.Detail, "has not activated") {
			t.Errorf("detail: %s", x.Detail)
		}
		return
	}
	t.Fatal("no reservation whose destination publishes")
}
