package mocker

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/conform"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/model"
)

const dir = "../../../testdata/logs/mocker"

func judge(t *testing.T, path string) (*conform.Report, *Result) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	lines := &Lines{}
	res, err := Convert(bytes.NewReader(data), path, &out, lines)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := conform.Judge([]conform.Input{{Name: path, R: &out, LineOf: lines.Of}}, conform.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep, res
}

// The bookkeeping of a source-first and a destination-first run conforms;
// the mocker's in-flight count of the prefill worker drops when its pass
// completes, while the contract's keeps the held source.
func TestMockerLogsConform(t *testing.T) {
	for _, name := range []string{"source-first.jsonl", "destination-first.jsonl"} {
		rep, res := judge(t, filepath.Join(dir, name))
		if rep.Verdict != conform.Explained {
			t.Fatalf("%s: %s %+v", name, rep.Verdict, rep.Rejection)
		}
		if len(res.Divergences) == 0 {
			t.Fatalf("%s: no in-flight divergence, yet the mocker counts a held source out at its pass", name)
		}
		d := res.Divergences[0]
		if d.Worker != "prefill-0" || d.Count != d.Mocker+1 {
			t.Fatalf("%s: divergence %+v, want the prefill worker counting one more than the mocker", name, d)
		}
	}
}

// A source released before its prefill pass completed is rejected at the
// line of the mocker's log that says so.
func TestMockerReleaseBeforePin(t *testing.T) {
	rep, _ := judge(t, filepath.Join(dir, "invalid-release-before-prefill-done.jsonl"))
	x := rep.Rejection
	if rep.Verdict != conform.Rejected || x.Line != 8 || x.Invariant != model.NameExactlyOnceRelease {
		t.Fatalf("%s %+v", rep.Verdict, x)
	}
}

// A side the mocker finalizes a second time (the late-cancel double
// finalize: CancelDestination applied after the decode pass completed; a
// ReleaseSource applied twice) is rejected as ExactlyOnceRelease at the
// line of the second finalize. Without the fix, the second Applied wrote
// no fact and both logs were explained.
func TestMockerDoubleFinalize(t *testing.T) {
	for _, c := range []struct {
		name string
		line int
	}{
		{"invalid-late-cancel-after-decode-done.jsonl", 9},
		{"invalid-release-source-twice.jsonl", 8},
	} {
		rep, _ := judge(t, filepath.Join(dir, c.name))
		x := rep.Rejection
		if rep.Verdict != conform.Rejected || x.Line != c.line || x.Invariant != model.NameExactlyOnceRelease {
			t.Errorf("%s: %s %+v, want rejected at line %d naming %s", c.name, rep.Verdict, x, c.line, model.NameExactlyOnceRelease)
		}
		// The same log without its last finalize conforms: the rejection
		// is the double finalize's, not the rest's.
		data, err := os.ReadFile(filepath.Join(dir, c.name))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitAfter(string(data), "\n")
		lines = append(lines[:c.line-1:c.line-1], lines[c.line:]...)
		var out bytes.Buffer
		if _, err := Convert(strings.NewReader(strings.Join(lines, "")), c.name, &out, nil); err != nil {
			t.Fatal(err)
		}
		rep, err = conform.Judge([]conform.Input{{Name: c.name, R: &out}}, conform.Options{})
		if err != nil || rep.Verdict != conform.Explained {
			t.Errorf("%s without line %d: %v %+v, want explained", c.name, c.line, err, rep)
		}
	}
}

var whereRe = regexp.MustCompile(`^m\.jsonl:[0-9]+: `)

func TestMockerBadInput(t *testing.T) {
	head := `{"format":"dynamo.mocker.offline-replay/v1","order":"SourceFirst","engine":"vllm","prefill_workers":1,"decode_workers":1}` + "\n"
	for _, c := range []struct{ in, want string }{
		{"", "m.jsonl:1: "},
		{`{"format":"x"}` + "\n", `format "x"`},
		{head + `{"event":"command","role":"prefill","worker":0,"command":"SubmitHandoffPrefill","handoff":"h","result":"Submitted"}` + "\n", "m.jsonl:2: "},
		{head + `{"event":"request","handoff":"h","input_tokens":8}` + "\n" + `{"event":"command","role":"decode","worker":0,"command":"ReleaseSource","handoff":"h","result":"Applied"}` + "\n", "ReleaseSource goes to a prefill worker"},
		{head + `{"event":"request","handoff":"h","input_tokens":8}` + "\n" + `{"event":"command","role":"prefill","worker":3,"command":"SubmitHandoffPrefill","handoff":"h","result":"Submitted"}` + "\n", "no prefill worker 3"},
		{head + `{"event":"request","handoff":"h","input_tokens":8,"extra":1}` + "\n", "m.jsonl:2: "},
		{strings.TrimSuffix(head, "}\n") + `,"config":{"schema":"handoffcheck.sim/v1","policy":"destination-first"}}` + "\n", `m.jsonl:1: malformed mocker replay log: the configuration's policy is "destination-first"`},
		{strings.TrimSuffix(head, "}\n") + `,"config":{"schema":"handoffcheck.sim/v1","engine":"sglang"}}` + "\n", `the configuration's engine is "sglang"`},
		{`{"format":"dynamo.mocker.offline-replay/v1","engine":"vllm","workers":1,"prefill_workers":1}` + "\n", "an aggregated replay (workers, no order) has no prefill or decode workers"},
		{strings.TrimSuffix(head, "}\n") + `,"workers":2}` + "\n", "workers is an aggregated replay's count"},
		{head + `{"event":"request","handoff":"h","input_tokens":8}` + "\n" + `{"event":"command","role":"prefill","worker":0,"command":"Submit","handoff":"h","result":"Submitted"}` + "\n", "(or Submit in an aggregated replay)"},
		{head + `{"event":"request","request":"a","input_tokens":8}` + "\n", `request needs a new "handoff" id`},
		{head + `{"event":"request","handoff":"h","input_tokens":8}` + "\n" + `{"event":"pass","role":"prefill","worker":0,"completed":["h"],"priority":1}` + "\n", "m.jsonl:3: "},
		{`{"format":"dynamo.mocker.offline-replay/v1","engine":"vllm","workers":1}` + "\n" + `{"event":"request","request":"a","input_tokens":8,"counted_in_flight":true}` + "\n", "counted_in_flight on an aggregated request"},
		{head + `{"event":"request","handoff":"h","input_tokens":8}` + "\n" + `{"event":"receive","role":"prefill","worker":0,"handoff":"h"}` + "\n", "receive is an aggregated request's path"},
		{`{"format":"dynamo.mocker.offline-replay/v1","engine":"vllm","workers":1}` + "\n" + `{"event":"request","request":"a","input_tokens":8}` + "\n" + `{"event":"phase","request":"a","phase":"Warming"}` + "\n", `m.jsonl:3: malformed mocker replay log: phase "Warming"`},
	} {
		_, err := Convert(strings.NewReader(c.in), "m.jsonl", io.Discard, nil)
		if err == nil || !errors.Is(err, ErrMocker) || !whereRe.MatchString(err.Error()) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an ErrMocker at file:line containing %q", c.in, err, c.want)
		}
	}
}

// FuzzConvertMocker: no input panics the conversion; a refusal names the
// file and line and wraps ErrMocker; what it writes is a log the reader
// takes whole.
func FuzzConvertMocker(f *testing.F) {
	ps, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	for _, p := range ps {
		data, _ := os.ReadFile(p)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 32<<10 {
			return
		}
		var out bytes.Buffer
		res, err := Convert(bytes.NewReader(data), "m.jsonl", &out, nil)
		if err != nil {
			if !errors.Is(err, ErrMocker) || !whereRe.MatchString(err.Error()) {
				t.Fatalf("the refusal does not name the file and line: %v", err)
			}
			return
		}
		// A broken rule of the mocker's own names a line of the log past
		// its header.
		if x := res.Rejection; x != nil {
			if n := bytes.Count(data, []byte("\n")) + 1; x.File != "m.jsonl" || x.Line < 2 || x.Line > n || res.Rejections < 1 {
				t.Fatalf("a bookkeeping rejection at %s:%d (%d of them) in a log of %d lines", x.File, x.Line, res.Rejections, n)
			}
		}
		if res.Aggregated {
			if out.Len() != 0 {
				t.Fatalf("an aggregated replay wrote an observation log: %q", out.Bytes())
			}
			return
		}
		r, err := obslog.NewReader(&out, "converted")
		if err != nil {
			t.Fatalf("the converted log does not read: %v", err)
		}
		for {
			if _, err := r.Next(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("the converted log does not read: %v", err)
			}
		}
	})
}

// convert converts a log given as text and returns what it saw.
func convert(t *testing.T, text string) *Result {
	t.Helper()
	res, err := Convert(strings.NewReader(text), "m.jsonl", io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// wantBookkeeping fails unless the mocker's own rules are broken first at
// line, with a detail holding each of want.
func wantBookkeeping(t *testing.T, name string, res *Result, line int, want ...string) {
	t.Helper()
	x := res.Rejection
	if x == nil {
		t.Errorf("%s: no bookkeeping rejection, want one at line %d", name, line)
		return
	}
	if x.Line != line {
		t.Errorf("%s: bookkeeping rejected at line %d (%s), want %d", name, x.Line, x.Detail, line)
	}
	for _, w := range want {
		if !strings.Contains(x.Detail, w) {
			t.Errorf("%s: %q, want it to say %q", name, x.Detail, w)
		}
	}
}

// The mocker's bookkeeping is judged by its own rules: a wrong in_flight
// (the decode worker reports 5 where its reservation makes 1), a phase
// out of order (RunningPrefill after TransferPending) and a Done inserted
// mid-lifecycle (the source still held) are each rejected at their line,
// naming the rule, while the contract explains the same logs' facts; the
// verdict folded into conform's report is rejected at that line.
func TestMockerBookkeepingRejected(t *testing.T) {
	for _, c := range []struct {
		name string
		line int
		want []string
	}{
		{"invalid-in-flight.jsonl", 10, []string{"decode-0 reports in_flight 5; by the rules of apply_command it is 1", "ReserveDestination → DestinationAccepted counts +1"}},
		{"invalid-phase-out-of-order.jsonl", 9, []string{"phase RunningPrefill after TransferPending (line 8)", "never back"}},
		{"invalid-done-mid-lifecycle.jsonl", 10, []string{"Done while prefill-0 has not released or cancelled its source"}},
	} {
		rep, res := judge(t, filepath.Join(dir, c.name))
		if rep.Verdict != conform.Explained {
			t.Errorf("%s: the contract's verdict is %s %+v, want explained: the rule broken is the mocker's own", c.name, rep.Verdict, rep.Rejection)
		}
		wantBookkeeping(t, c.name, res, c.line, c.want...)
		res.Fold(rep)
		if rep.Verdict != conform.Rejected || rep.Rejection.Line != c.line || !strings.HasSuffix(rep.Rejection.File, c.name) {
			t.Errorf("%s: folded %s %+v, want rejected at line %d", c.name, rep.Verdict, rep.Rejection, c.line)
		}
	}
	// The contract's rejection stands where it has one: the bookkeeping's
	// is reported beside it.
	rep, res := judge(t, filepath.Join(dir, "invalid-late-cancel-after-decode-done.jsonl"))
	wantBookkeeping(t, "late cancel", res, 9, "counted 0 requests in flight and CancelDestination → Applied counts -1: the count would go below zero")
	res.Fold(rep)
	if rep.Rejection.Invariant != model.NameExactlyOnceRelease {
		t.Errorf("late cancel: folded %+v, want the contract's ExactlyOnceRelease", rep.Rejection)
	}
}

// An unknown phase is malformed input (as an unknown command or event
// is): refused at its line with the phases the format knows.
func TestMockerUnknownPhase(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(dir, "invalid-unknown-phase.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Convert(bytes.NewReader(data), "m.jsonl", io.Discard, nil)
	if err == nil || !errors.Is(err, ErrMocker) || !strings.HasPrefix(err.Error(), "m.jsonl:6: ") || !strings.Contains(err.Error(), `phase "Prefilling", want one of QueuedPrefill`) {
		t.Fatalf("%v, want a refusal at m.jsonl:6 naming the phases", err)
	}
}

// Every in_flight figure of the valid examples is the one the rules give:
// raised by one at any line, it is rejected at that line. The examples
// take every rule: submissions and accepted reservations +1, a pass minus
// what it completed, CancelDestination applied -1, CancelSource applied
// after the source's pass 0, release and activation 0.
func TestMockerInFlightEveryFigure(t *testing.T) {
	figure := regexp.MustCompile(`"in_flight":([0-9]+)`)
	for _, name := range []string{"source-first.jsonl", "destination-first.jsonl", "aggregated.jsonl"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if res := convert(t, string(data)); res.Rejection != nil {
			t.Fatalf("%s: %+v, want the rules to hold", name, res.Rejection)
		}
		lines := strings.SplitAfter(string(data), "\n")
		n := 0
		for i, l := range lines {
			m := figure.FindStringSubmatchIndex(l)
			if m == nil {
				continue
			}
			n++
			v, _ := strconv.Atoi(l[m[2]:m[3]])
			bad := slices.Clone(lines)
			bad[i] = l[:m[2]] + strconv.Itoa(v+1) + l[m[3]:]
			wantBookkeeping(t, fmt.Sprintf("%s line %d raised", name, i+1), convert(t, strings.Join(bad, "")), i+1, fmt.Sprintf("reports in_flight %d; by the rules of apply_command it is %d", v+1, v))
		}
		if n < 3 {
			t.Fatalf("%s: %d in_flight figures", name, n)
		}
	}
}

const (
	headSF = `{"format":"dynamo.mocker.offline-replay/v1","order":"SourceFirst","engine":"vllm","prefill_workers":1,"decode_workers":1}` + "\n"
	headDF = `{"format":"dynamo.mocker.offline-replay/v1","order":"DestinationFirst","engine":"sglang","prefill_workers":1,"decode_workers":1}` + "\n"
)

// A CancelSource applied before the source's pass removes its request
// from the scheduler core and counts it out; after the pass it removes
// nothing (the held source is outside the core) and counts nothing out.
func TestMockerCancelSourceCountsWhatItRemoved(t *testing.T) {
	before := headSF + `{"event":"request","handoff":"h","input_tokens":8}
{"event":"command","role":"prefill","worker":0,"command":"SubmitHandoffPrefill","handoff":"h","result":"Submitted","in_flight":1}
{"event":"command","role":"prefill","worker":0,"command":"CancelSource","handoff":"h","result":"Applied","in_flight":0}
`
	if res := convert(t, before); res.Rejection != nil {
		t.Fatalf("cancel before the pass: %+v", res.Rejection)
	}
	wantBookkeeping(t, "cancel before the pass, counted 1", convert(t, strings.Replace(before, `"Applied","in_flight":0`, `"Applied","in_flight":1`, 1)), 4,
		"it is 0: it was 1 before this line, and CancelSource → Applied counts out the requests it removed from the scheduler core, here 1")
	after := headSF + `{"event":"request","handoff":"h","input_tokens":8}
{"event":"command","role":"prefill","worker":0,"command":"SubmitHandoffPrefill","handoff":"h","result":"Submitted","in_flight":1}
{"event":"pass","role":"prefill","worker":0,"completed":["h"],"in_flight":0}
{"event":"command","role":"prefill","worker":0,"command":"CancelSource","handoff":"h","result":"Applied","in_flight":0}
`
	if res := convert(t, after); res.Rejection != nil {
		t.Fatalf("cancel after the pass: %+v", res.Rejection)
	}
}

// in_flight is never below the requests in the scheduler core: a late
// CancelDestination applied to a decode the pass completed counts a
// request out a second time, and the worker's count falls below the
// request its core still runs. The figure the log reports is the rules'
// own, so only the core check finds it.
func TestMockerInFlightBelowCore(t *testing.T) {
	log := headSF + `{"event":"request","handoff":"h1","input_tokens":8}
{"event":"request","handoff":"h2","input_tokens":8}
{"event":"command","role":"decode","worker":0,"command":"ReserveDestination","handoff":"h1","result":"DestinationAccepted","in_flight":1}
{"event":"command","role":"decode","worker":0,"command":"ReserveDestination","handoff":"h2","result":"DestinationAccepted","in_flight":2}
{"event":"pass","role":"decode","worker":0,"completed":["h1"],"in_flight":1}
{"event":"command","role":"decode","worker":0,"command":"CancelDestination","handoff":"h1","result":"Applied","in_flight":0}
`
	wantBookkeeping(t, "late cancel", convert(t, log), 7, "decode-0 counts 0 requests in flight while its scheduler core holds 1")
	// Without the late cancel the books hold.
	if res := convert(t, strings.Join(strings.SplitAfter(log, "\n")[:6], "")); res.Rejection != nil {
		t.Fatalf("%+v", res.Rejection)
	}
}

// The phases of a request follow its order's lifecycle: a destination-
// first request is never QueuedPrefill, a phase never goes back, a step
// after Done is refused.
func TestMockerPhases(t *testing.T) {
	req := `{"event":"request","handoff":"h","input_tokens":8}` + "\n"
	for _, c := range []struct {
		name, log string
		line      int
		want      string
	}{
		{"queued under destination-first", headDF + req + `{"event":"phase","handoff":"h","phase":"QueuedPrefill"}` + "\n", 3,
			"QueuedPrefill is no phase of a destination-first request: it goes AwaitingDestination, RunningPrefill"},
		{"back to queued", headSF + req + `{"event":"phase","handoff":"h","phase":"RunningPrefill"}` + "\n" + `{"event":"phase","handoff":"h","phase":"QueuedPrefill"}` + "\n", 4,
			"phase QueuedPrefill after RunningPrefill (line 3)"},
		{"a step after Done", headSF + req + `{"event":"phase","handoff":"h","phase":"Done"}` + "\n" +
			`{"event":"command","role":"prefill","worker":0,"command":"SubmitHandoffPrefill","handoff":"h","result":"Submitted","in_flight":1}` + "\n", 4,
			"h is Done since line 3: a done request takes no more steps"},
		{"an aggregated phase on a handoff", headSF + req + `{"event":"phase","handoff":"h","phase":"Running"}` + "\n", 3,
			"Running is no phase of a source-first request"},
	} {
		wantBookkeeping(t, c.name, convert(t, c.log), c.line, c.want)
	}
	// Restating a phase, and skipping phases, is no disorder.
	ok := headSF + req + `{"event":"phase","handoff":"h","phase":"QueuedPrefill"}` + "\n" + `{"event":"phase","handoff":"h","phase":"QueuedPrefill"}` + "\n" +
		`{"event":"phase","handoff":"h","phase":"TransferPending"}` + "\n" + `{"event":"phase","handoff":"h","phase":"Done"}` + "\n"
	if res := convert(t, ok); res.Rejection != nil {
		t.Fatalf("%+v", res.Rejection)
	}
}

// Priorities are carried from the request to the requests the replay
// submits for it, and counted_in_flight is set on a new request and
// cleared at most once; the destination-first example states both and
// conforms.
func TestMockerPrioritiesAndCountedInFlight(t *testing.T) {
	rep, res := judge(t, filepath.Join(dir, "destination-first.jsonl"))
	if res.Fold(rep); rep.Verdict != conform.Explained || res.Rejection != nil {
		t.Fatalf("destination-first: %s %+v %+v", rep.Verdict, rep.Rejection, res.Rejection)
	}
	req := `{"event":"request","handoff":"h","input_tokens":8,"priority":-3,"strict_priority":9}` + "\n"
	submit := `{"event":"command","role":"prefill","worker":0,"command":"SubmitHandoffPrefill","handoff":"h","result":"Submitted","in_flight":1,`
	for _, c := range []struct {
		name, log string
		line      int
		want      string
	}{
		{"priority dropped", headSF + req + submit + `"priority":0,"strict_priority":9}` + "\n", 3,
			"SubmitHandoffPrefill carries priority 0, the request's is -3 (line 2)"},
		{"strict priority changed", headSF + req + submit + `"priority":-3,"strict_priority":1}` + "\n", 3,
			"strict_priority 1, the request's is 9"},
		{"a request made uncounted", headSF + `{"event":"request","handoff":"h","input_tokens":8,"counted_in_flight":false}` + "\n", 2,
			"a disaggregated request is made counted in flight"},
		{"counted again", headSF + req + `{"event":"phase","handoff":"h","phase":"QueuedPrefill","counted_in_flight":false}` + "\n" +
			`{"event":"phase","handoff":"h","phase":"RunningPrefill","counted_in_flight":true}` + "\n", 4,
			"counted_in_flight true again after it was cleared at line 3"},
	} {
		wantBookkeeping(t, c.name, convert(t, c.log), c.line, c.want)
	}
	if res := convert(t, headSF+req+submit+`"priority":-3,"strict_priority":9}`+"\n"); res.Rejection != nil {
		t.Fatalf("the request's priorities kept: %+v", res.Rejection)
	}
}

// A log of an aggregated replay conforms: its requests are judged by the
// same in-flight rules and their own phases, and make no fact.
func TestMockerAggregated(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(dir, "aggregated.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	r, agg := Sniff(bytes.NewReader(data))
	if !agg {
		t.Fatal("Sniff: not aggregated")
	}
	var out bytes.Buffer
	res, err := Convert(r, "aggregated.jsonl", &out, nil)
	if err != nil || res.Rejection != nil || !res.Aggregated || res.Requests != 3 || res.Handoffs != 0 || out.Len() != 0 {
		t.Fatalf("%v %+v (%d bytes written)", err, res, out.Len())
	}
	rep := &conform.Report{Verdict: conform.Explained}
	if res.Fold(rep); rep.Verdict != conform.Explained || rep.Policy != "aggregated" {
		t.Fatalf("%+v", rep)
	}
	// The receive path counts +1 as Submit does: a wrong figure there
	// names receive_request.
	wantBookkeeping(t, "receive", convert(t, strings.Replace(string(data), `"request":"a2","in_flight":2`, `"request":"a2","in_flight":1`, 1)), 8,
		"worker-0 reports in_flight 1; by the rules of apply_command it is 2: it was 1 before this line, and receive_request counts +1")
	back := strings.Replace(string(data), `"phase":"Running"}`, `"phase":"Running"}`+"\n"+`{"event":"phase","request":"a1","phase":"QueuedAtRouter"}`, 1)
	wantBookkeeping(t, "queued again", convert(t, back), 6, "phase QueuedAtRouter after Running (line 5): an aggregated request goes QueuedAtRouter, Running, never back")
	if _, agg := Sniff(strings.NewReader(headSF)); agg {
		t.Fatal("Sniff: a disaggregated header read as aggregated")
	}
}
