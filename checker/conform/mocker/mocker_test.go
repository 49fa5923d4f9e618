package mocker

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
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
