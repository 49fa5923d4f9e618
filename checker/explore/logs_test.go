package explore

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"net/http/httptest"

	"github.com/handoffcheck/handoffcheck/checker/conform"
	"github.com/handoffcheck/handoffcheck/checker/internal/browser"
)

// rejectedLog is a shipped invalid log: decode-0 publishes Stored before
// it activated the pages.
const rejectedLog = "../../testdata/logs/invalid/stored-before-activation.jsonl"

// splitPerProcess writes a log as one log per process, each with the
// header, as processes that each keep their own log write them.
func splitPerProcess(t testing.TB, file string) []LogInput {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var h struct {
		Processes []struct{ Name string } `json:"processes"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &h); err != nil {
		t.Fatal(err)
	}
	var out []LogInput
	for _, p := range h.Processes {
		var b strings.Builder
		b.WriteString(lines[0] + "\n")
		for _, l := range lines[1:] {
			var f struct{ Proc string }
			if err := json.Unmarshal([]byte(l), &f); err != nil {
				t.Fatal(err)
			}
			if f.Proc == p.Name {
				b.WriteString(l + "\n")
			}
		}
		out = append(out, LogInput{Name: p.Name + ".jsonl", Data: []byte(b.String())})
	}
	return out
}

// The judged logs hold conform's verdict, every fact on its process's
// lane, the rejected fact marked, and the rejected attempt's explanation
// with the steps the judge supplied told apart from logged ones.
func TestJudgeLogs_LaysOutTheJudgement(t *testing.T) {
	in := splitPerProcess(t, rejectedLog)
	l, err := JudgeLogs(in, conform.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Verdict != conform.Rejected || l.Rejection == nil || l.Rejection.Invariant != "NoStoredBeforeActivation" {
		t.Fatalf("verdict %s, rejection %+v", l.Verdict, l.Rejection)
	}
	if l.Axis != "time" || len(l.Processes) != 5 {
		t.Fatalf("axis %s, %d processes", l.Axis, len(l.Processes))
	}
	rejected, total := 0, 0
	for _, f := range l.Facts {
		total++
		if !strings.HasPrefix(filepath.Base(f.File), l.Processes[f.Proc].Name+".") {
			t.Fatalf("%s:%d is on lane %s", f.File, f.Line, l.Processes[f.Proc].Name)
		}
		if f.Rejected {
			rejected++
			if l.Processes[f.Proc].Name != "decode-0" || f.Kind != "stored" {
				t.Errorf("the rejected fact is %+v", f)
			}
		}
	}
	if rejected != 1 || total != 160 {
		t.Fatalf("%d rejected of %d facts", rejected, total)
	}
	supplied, logged := 0, 0
	for _, s := range l.Explanation {
		if s.Supplied {
			supplied++
			if s.Where != "" {
				t.Errorf("a supplied step names a line: %+v", s)
			}
		} else {
			logged++
			if !strings.Contains(s.Where, ".jsonl:") {
				t.Errorf("a logged step names no line: %+v", s)
			}
		}
	}
	if supplied == 0 || logged == 0 {
		t.Fatalf("explanation: %d supplied, %d logged steps", supplied, logged)
	}
	// The furthest explanation's state: the attempt's one handoff with
	// its destination holding reserved pages and the transfer done (what
	// the rejection says), and its two workers.
	if len(l.Furthest) != 3 || !strings.HasPrefix(l.Furthest[0], "h0 source=") || !strings.Contains(l.Furthest[0], "destination=") {
		t.Fatalf("furthest state %q (why %q)", l.Furthest, l.FurthestWhy)
	}
}

// A log the judge cannot read is an error at its file and line.
func TestJudgeLogs_RefusesABadLog(t *testing.T) {
	in := []LogInput{{Name: "bad.jsonl", Data: []byte(`{"schema":"handoffcheck.log/v1"}` + "\n")}}
	if _, err := JudgeLogs(in, conform.Options{}); err == nil || !strings.HasPrefix(err.Error(), "bad.jsonl:1:") {
		t.Fatalf("got %v", err)
	}
}

// In a real browser, a rejected log split per process: the rejected fact
// is marked on its process's lane with the invariant's name.
func TestExplorer_LogsInChromium(t *testing.T) {
	ctx := browser.Tab(t)
	l, err := JudgeLogs(splitPerProcess(t, rejectedLog), conform.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewLogs(l, "stored-before-activation, split per process"))
	defer srv.Close()
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(`body[data-loaded="logs"]`)); err != nil {
		t.Fatal(err)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('circle[data-rejected="true"]'),
		c => c.closest("g").dataset.lane + " " + c.dataset.invariant + " " + c.dataset.kind)`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "decode-0 NoStoredBeforeActivation stored"; len(got) != 1 || got[0] != want {
		t.Fatalf("marked facts %q, want one: %q", got, want)
	}
	label, err := chromedp.Run(ctx, chromedp.TextContent(`g[data-lane="decode-0"] .rejected-label`))
	if err != nil {
		t.Fatal(err)
	}
	if label != "NoStoredBeforeActivation" {
		t.Errorf("the lane's label reads %q", label)
	}
	supplied, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('g[data-lane="judge (unlogged)"] rect.supplied').length`))
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, s := range l.Explanation {
		if s.Supplied {
			want++
		}
	}
	if supplied != want {
		t.Errorf("the judge's lane draws %d supplied steps, the explanation has %d", supplied, want)
	}
	lines, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#furthest li"), li => li.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lines, l.Furthest) {
		t.Errorf("the page shows the furthest state\n%s\nthe judgement\n%s", strings.Join(lines, "\n"), strings.Join(l.Furthest, "\n"))
	}
	screenshot(t, ctx, "explore-logs.png")
}
