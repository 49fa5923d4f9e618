package explore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/conform"
)

// A path from a request's URL never panics the server: it parses or is
// refused naming the step, and a parsed path is answered with a state or
// refused as a path the run does not allow (errPath), never another error.
func FuzzState(f *testing.F) {
	for _, seed := range []string{"", "0", "0.0.0", "1.2.3.4.5", "x", "0..1", "-1", "99999999999999999999", "0.0.99", strings.Repeat("0.", 50) + "0"} {
		f.Add(seed)
	}
	_, _, s := openTrace(f, counterexample)
	f.Fuzz(func(t *testing.T, text string) {
		path, err := ParsePath(text)
		if err != nil {
			if !errors.Is(err, errPath) {
				t.Fatalf("%q: %v is not errPath", text, err)
			}
			return
		}
		if _, err := s.State(path); err != nil && !errors.Is(err, errPath) {
			t.Fatalf("%q: %v", text, err)
		}
	})
}

// A mocker log the page is given never panics the explorer: it is laid
// out, or refused with an error that names the log (its line, where the
// conversion or the judge reads one). A laid-out log puts every fact on a
// lane it has, at a line of the log, and marks a fact exactly when it is
// rejected.
func FuzzJudgeMockerLogs(f *testing.F) {
	ps, _ := filepath.Glob("../../testdata/logs/mocker/*.jsonl")
	for _, p := range ps {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 32<<10 {
			return
		}
		// Small bounds, as conform's own fuzzing takes: a mutated log may
		// leave the judge many unlogged steps to search.
		l, err := JudgeMockerLogs([]LogInput{{Name: "m.jsonl", Data: data}}, conform.Options{Bound: 6, MaxFaults: 1})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "m.jsonl") {
				t.Fatalf("the refusal does not name the log: %v", err)
			}
			return
		}
		n := bytes.Count(data, []byte("\n")) + 1
		marked := 0
		for _, x := range l.Facts {
			if x.Proc < 0 || x.Proc >= len(l.Processes) || x.Line < 1 || x.Line > n {
				t.Fatalf("fact %+v: %d lanes, %d lines", x, len(l.Processes), n)
			}
			if x.Rejected {
				marked++
			}
		}
		if (marked > 0) != (l.Rejection != nil) {
			t.Fatalf("%d facts marked, rejection %+v", marked, l.Rejection)
		}
	})
}
