package explore

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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

// mockerLogs are shipped logs of the dynamo mocker's bookkeeping: one
// conform --from mocker explains, one whose release of the source comes
// before the prefill finished (the contract rejects it: ExactlyOnceRelease),
// and one whose request is Done in the middle of its lifecycle (the
// mocker's own books reject it, on a line that makes no fact).
const (
	mockerExplained = "../../testdata/logs/mocker/source-first.jsonl"
	mockerContract  = "../../testdata/logs/mocker/invalid-release-before-prefill-done.jsonl"
	mockerBooks     = "../../testdata/logs/mocker/invalid-done-mid-lifecycle.jsonl"
)

func judgeMocker(t testing.TB, file string) *Logs {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	l, err := JudgeMockerLogs([]LogInput{{Name: file, Data: data}}, conform.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Mocker logs are judged as conform --from mocker judges them, their facts
// laid out on the converted log's processes at the mocker's own lines,
// and the rejected fact marked: the contract's at its line and process,
// the books' on a lane of the record it names when its line makes no fact.
func TestJudgeMockerLogs(t *testing.T) {
	l := judgeMocker(t, mockerExplained)
	if l.Verdict != conform.Explained || l.Rejection != nil || l.From != "mocker" || l.Mocker == nil || l.Mocker.Handoffs != 2 {
		t.Fatalf("%s: verdict %s, rejection %+v, books %+v", mockerExplained, l.Verdict, l.Rejection, l.Mocker)
	}
	data, _ := os.ReadFile(mockerExplained)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for _, f := range l.Facts {
		if f.Rejected || f.Line < 2 || f.Line > len(lines) {
			t.Fatalf("fact %+v: rejected, or not at a line of the mocker's log (%d lines)", f, len(lines))
		}
		// The line is the mocker's: its event names the fact's attempt.
		if f.Attempt != "" && !strings.Contains(lines[f.Line-1], `"`+f.Attempt+`"`) {
			t.Errorf("fact %q is at line %d, which does not name %s: %s", f.Text, f.Line, f.Attempt, lines[f.Line-1])
		}
	}

	l = judgeMocker(t, mockerContract)
	if l.Rejection == nil || l.Rejection.Invariant != "ExactlyOnceRelease" || l.Rejection.Line != 8 || l.Mocker.RejectionIsTheirs {
		t.Fatalf("%s: rejection %+v, books %+v", mockerContract, l.Rejection, l.Mocker)
	}
	var marked []string
	for _, f := range l.Facts {
		if f.Rejected {
			marked = append(marked, l.Processes[f.Proc].Name+" "+f.Kind)
		}
	}
	if !slices.Equal(marked, []string{"prefill-0 source_released"}) {
		t.Errorf("%s: marked %q", mockerContract, marked)
	}

	l = judgeMocker(t, mockerBooks)
	if l.Rejection == nil || !l.Mocker.RejectionIsTheirs || l.Rejection.Line != 10 {
		t.Fatalf("%s: rejection %+v, books %+v", mockerBooks, l.Rejection, l.Mocker)
	}
	marked = nil
	for _, f := range l.Facts {
		if f.Rejected {
			marked = append(marked, l.Processes[f.Proc].Name+" "+f.Text)
			if f.At != 34000 {
				t.Errorf("the rejected line is at %dµs, its t_ms is 34", f.At)
			}
		}
	}
	if !slices.Equal(marked, []string{"request h1 request h1: phase Done"}) {
		t.Errorf("%s: marked %q", mockerBooks, marked)
	}
}

// In a real browser, mocker logs: the explained one draws every fact on
// its process's lane with none marked; the rejected ones mark the
// rejected fact on its lane with what the rejection rests on.
func TestExplorer_MockerLogsInChromium(t *testing.T) {
	ctx := browser.Tab(t)
	open := func(file string) *Logs {
		t.Helper()
		l := judgeMocker(t, file)
		srv := httptest.NewServer(NewLogs(l, filepath.Base(file)))
		t.Cleanup(srv.Close)
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(`body[data-loaded="logs"]`)); err != nil {
			t.Fatal(err)
		}
		return l
	}
	marked := func() []string {
		t.Helper()
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('circle[data-rejected="true"]'),
			c => c.closest("g").dataset.lane + " " + c.dataset.line + " " + c.closest("g").querySelector(".rejected-label").textContent)`))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	l := open(mockerExplained)
	lanes, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#lanes g[data-lane]"), g => g.dataset.lane + " " + g.querySelectorAll("circle.fact").length)`))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i, p := range l.Processes {
		n := 0
		for _, f := range l.Facts {
			if f.Proc == i {
				n++
			}
		}
		want = append(want, p.Name+" "+strconv.Itoa(n))
	}
	if !slices.Equal(lanes, want) || len(want) < 4 {
		t.Fatalf("lanes and their facts %q, want %q", lanes, want)
	}
	if got := marked(); len(got) != 0 {
		t.Fatalf("an explained log marks %q", got)
	}

	open(mockerContract)
	if got := marked(); !slices.Equal(got, []string{"prefill-0 8 ExactlyOnceRelease"}) {
		t.Fatalf("%s marks %q", mockerContract, got)
	}
	screenshot(t, ctx, "explore-mocker.png")

	open(mockerBooks)
	if got := marked(); !slices.Equal(got, []string{"request h1 10 the mocker's own bookkeeping"}) {
		t.Fatalf("%s marks %q", mockerBooks, got)
	}
}
