package checker

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/spec"
)

// A counterexample written as a trace file parses back to the same moves,
// configuration and spec, and replays to the same violation.
func TestTrace_RoundTrip(t *testing.T) {
	s := spec.Default()
	override(t, s, spec.Destination, "Reserving", "DestinationReserved", spec.SourceFirst, "Receiving",
		"RegisterDestination", "PublishStored", "StartPull")
	cfg := mustConfig(t, smallConfig)
	c, _ := New(interpreted(t, s), cfg, cfg.Runs[0])
	r := c.checkRun(context.Background(), Limits{}, nil)
	if r.Violation == nil {
		t.Fatal("no violation")
	}
	var buf bytes.Buffer
	if err := WriteTrace(&buf, []byte(smallConfig), s, "vllm", c.Attempts(), r.Violation); err != nil {
		t.Fatal(err)
	}
	tr, err := ParseTrace("ce.jsonl", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var want []system.Move
	for _, st := range r.Violation.Steps {
		want = append(want, st.Move)
	}
	if diff := cmp.Diff(want, tr.Moves); diff != "" {
		t.Fatalf("moves (-want +got):\n%s", diff)
	}
	if tr.Run != "vllm" || tr.Violation != "NoStoredBeforeActivation" || tr.Spec == nil {
		t.Fatalf("header: run=%q violation=%q spec=%v", tr.Run, tr.Violation, tr.Spec != nil)
	}
	if diff := cmp.Diff(s, tr.Spec); diff != "" {
		t.Fatalf("spec (-want +got):\n%s", diff)
	}
	rc, _ := New(interpreted(t, tr.Spec), tr.Config, tr.Config.Runs[0])
	sess := newSession(rc)
	for i, m := range tr.Moves {
		res, err := sess.Apply(m)
		if err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
		if last := i == len(tr.Moves)-1; (res.Violation != nil) != last {
			t.Fatalf("step %d: violation %v", i+1, res.Violation)
		}
	}
}

// The committed traces parse and replay to what their header records.
func TestTrace_Committed(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "traces", "*.jsonl"))
	if len(files) == 0 {
		t.Fatal("no traces in testdata/traces")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := ParseTrace(file, data)
			if err != nil {
				t.Fatal(err)
			}
			p := system.Generated()
			if tr.Spec != nil {
				p = interpreted(t, tr.Spec)
			}
			var run system.Run
			for _, r := range tr.Config.Runs {
				if r.Name == tr.Run {
					run = r
				}
			}
			c, err := New(p, tr.Config, run)
			if err != nil {
				t.Fatal(err)
			}
			sess := newSession(c)
			got := ""
			var atLoop system.Key
			for i, m := range tr.Moves {
				res, err := sess.Apply(m)
				if err != nil {
					t.Fatalf("line %d: %v", tr.Lines[i], err)
				}
				if res.Violation != nil {
					got = res.Violation.Invariant
					break
				}
				if i+1 == tr.LoopFrom {
					atLoop = c.Key(sess.State())
				}
			}
			// A liveness trace ends in a loop back to the state after
			// step LoopFrom.
			if tr.LoopFrom > 0 && c.Key(sess.State()) == atLoop {
				got = tr.Violation
			}
			if got != tr.Violation {
				t.Fatalf("replay ended in %q, the trace records %q", got, tr.Violation)
			}
		})
	}
}

func TestTrace_ParseErrors(t *testing.T) {
	header := `{"schema": "handoffcheck.trace/v1", "run": "vllm", "config": ` + strings.ReplaceAll(smallConfig, "\n", " ") + `}`
	cases := []struct {
		name, text, want string
	}{
		{"empty", "", "ce.jsonl:1:"},
		{"bad-schema", `{"schema": "x"}`, "ce.jsonl:1: checker: bad trace: schema is \"x\""},
		{"unknown-run", strings.Replace(header, `"run": "vllm"`, `"run": "nope"`, 1), `run "nope" is not a run`},
		{"bad-json-step", header + "\n{\"step\": 1, \"move\": ", "ce.jsonl:2:"},
		{"gap", header + "\n{\"step\": 2, \"move\": \"deliver-request h=0\"}", "ce.jsonl:2: checker: bad trace: step 2, want 1"},
		{"bad-move", header + "\n{\"step\": 1, \"move\": \"fly h=0\"}", "ce.jsonl:2: checker: bad trace: move \"fly h=0\": unknown move"},
		{"unknown-field", header + "\n{\"step\": 1, \"move\": \"cancel h=0\", \"x\": 1}", "ce.jsonl:2:"},
		{"bad-config", `{"schema": "handoffcheck.trace/v1", "run": "vllm", "config": {"schema": "nope"}}`, "ce.jsonl:1: config"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTrace("ce.jsonl", []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// FuzzParseTrace: a trace file never panics the reader and every refusal
// names the file.
func FuzzParseTrace(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "traces", "*.jsonl"))
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"schema": "handoffcheck.trace/v1"}`))
	f.Add([]byte(`{"schema": "handoffcheck.trace/v1", "run": "vllm", "config": ` + strings.ReplaceAll(smallConfig, "\n", " ") + "}\n" +
		`{"step": 1, "move": "route-prefill h=9 worker=0"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ParseTrace("fuzz.jsonl", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.jsonl:") && !strings.Contains(err.Error(), "fuzz.jsonl:") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if tr.Config == nil || len(tr.Moves) != len(tr.Lines) {
			t.Fatalf("inconsistent trace: %+v", tr)
		}
	})
}

// A trace refused for its embedded configuration or spec is both a bad
// trace and a bad configuration (or spec) to errors.Is.
func TestTrace_EmbeddedErrorsKeepTheirSentinels(t *testing.T) {
	badConfig := `{"schema": "handoffcheck.trace/v1", "run": "vllm", "config": {"schema": "nope"}}`
	_, err := ParseTrace("ce.jsonl", []byte(badConfig))
	if !errors.Is(err, errTrace) || !errors.Is(err, system.ErrConfig) {
		t.Errorf("bad config: %v; want errors.Is ErrTrace and ErrConfig", err)
	}
	badSpec := `{"schema": "handoffcheck.trace/v1", "run": "vllm", "config": ` + strings.ReplaceAll(smallConfig, "\n", " ") +
		`, "spec": {"schema": "nope"}}`
	_, err = ParseTrace("ce.jsonl", []byte(badSpec))
	if !errors.Is(err, errTrace) || !errors.Is(err, spec.ErrInvalid) {
		t.Errorf("bad spec: %v; want errors.Is ErrTrace and spec.ErrInvalid", err)
	}
}

// A move naming a handoff or worker the configuration does not have is
// refused at its line, saying how many there are; duplicate keys on any
// line are refused.
func TestTrace_RefusesWhatTheConfigurationLacks(t *testing.T) {
	header := `{"schema": "handoffcheck.trace/v1", "run": "vllm", "config": ` + strings.ReplaceAll(smallConfig, "\n", " ") + `}`
	cfg := mustConfig(t, smallConfig)
	if len(cfg.World.Handoffs) != 1 || len(cfg.World.Workers) != 2 {
		t.Fatalf("the cases below assume 1 handoff and 2 workers, got %d and %d", len(cfg.World.Handoffs), len(cfg.World.Workers))
	}
	for _, tc := range []struct{ name, text, want string }{
		{"handoff", header + "\n{\"step\": 1, \"move\": \"route-prefill h=3 worker=0\"}",
			`ce.jsonl:2: checker: bad trace: move "route-prefill h=3 worker=0": handoff 3 is out of range: the configuration has 1 handoff (h=0)`},
		{"handoff beyond any configuration", header + "\n{\"step\": 1, \"move\": \"route-prefill h=9 worker=0\"}",
			`ce.jsonl:2: checker: bad trace: move "route-prefill h=9 worker=0": h=9: want a handoff number of the configuration, which has 1 handoff (h=0)`},
		{"handoff not a number", header + "\n{\"step\": 1, \"move\": \"route-prefill h=x worker=0\"}",
			`ce.jsonl:2: checker: bad trace: move "route-prefill h=x worker=0": h=x: want a handoff number of the configuration, which has 1 handoff (h=0)`},
		{"worker beyond any configuration", header + "\n{\"step\": 1, \"move\": \"route-prefill h=0 worker=70\"}",
			`ce.jsonl:2: checker: bad trace: move "route-prefill h=0 worker=70": worker=70: want a worker number of the configuration, which has 2 workers (worker=0 to worker=1)`},
		{"worker", header + "\n{\"step\": 1, \"move\": \"route-prefill h=0 worker=2\"}",
			`ce.jsonl:2: checker: bad trace: move "route-prefill h=0 worker=2": worker 2 is out of range: the configuration has 2 workers (worker=0 to worker=1)`},
		{"duplicate-key-in-step", header + "\n{\"step\": 1, \"move\": \"cancel h=0\", \"move\": \"cancel h=0\"}",
			`ce.jsonl:2: checker: bad trace: key "move" appears twice in the top-level object (first on line 2); want each key once`},
		{"duplicate-key-in-header", strings.Replace(header, `"run": "vllm",`, `"run": "vllm", "run": "vllm",`, 1),
			`ce.jsonl:1: checker: bad trace: key "run" appears twice in the top-level object (first on line 1); want each key once`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTrace("ce.jsonl", []byte(tc.text))
			if err == nil || err.Error() != tc.want || !errors.Is(err, errTrace) {
				t.Fatalf("got %v\nwant %s", err, tc.want)
			}
		})
	}
}

// A line beyond MaxTraceLineBytes is refused with the limit, at its line.
func TestTrace_LineTooLong(t *testing.T) {
	data := append([]byte(`{"schema": "`), bytes.Repeat([]byte("x"), maxTraceLineBytes)...)
	_, err := ParseTrace("ce.jsonl", data)
	if want := "ce.jsonl:1: checker: bad trace: the line is longer than 16 MiB, the most a trace line may hold"; err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}
