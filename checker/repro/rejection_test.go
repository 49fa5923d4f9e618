package repro

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/conform"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/sim"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/machines/interp"
	"github.com/handoffcheck/handoffcheck/model"
)

const invalidLogs = "../../testdata/logs/invalid"

// rejected judges a shipped invalid log and returns the input a
// reproduction is written from.
func rejected(t testing.TB, file string) RejectionInput {
	t.Helper()
	f, err := os.Open(filepath.Join(invalidLogs, file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := conform.Judge([]conform.Input{{Name: file, R: f}}, conform.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rejection == nil {
		t.Fatalf("%s: verdict %s, want a rejection", file, rep.Verdict)
	}
	return RejectionInput{Protocol: system.Generated(), Rejection: rep.Rejection, Command: "handoffcheck conform " + file}
}

// unreproduced are the shipped logs whose rejected fact no table with
// one or two rows changed reproduces, and what the README says of why.
// None today: a reservation released twice is reproduced by tables whose
// destination goes back to Active after the release and releases again
// on the client's cancel.
var unreproduced = map[string][]string{}

// onTheClock is how each reproduced log's reproduction reaches its
// invariant on the clock: by the plan derived from its trace, or the
// named scenario, or none.
var onTheClock = map[string]string{
	"source-released-before-the-reader-completed.jsonl":        "plan",
	"pages-never-returned-after-a-failed-transfer.jsonl":       "plan",
	"stored-before-activation.jsonl":                           "plan",
	"prefill-dispatched-before-the-destination-reserved.jsonl": "plan",
	"success-reported-for-a-failed-transfer.jsonl":             "plan",
	"a-reservation-released-twice.jsonl":                       "plan",
}

type expectation struct {
	File      string `json:"file"`
	Line      int    `json:"line"`
	Invariant string `json:"invariant"`
}

func expectations(t testing.TB) []expectation {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(invalidLogs, "expect.json"))
	if err != nil {
		t.Fatal(err)
	}
	var es []expectation
	if err := json.Unmarshal(raw, &es); err != nil {
		t.Fatal(err)
	}
	return es
}

// replayTrace replays a written trace against the tables it carries (the
// built-in ones when it carries none) and returns the invariant its last
// step breaks ("" for none) and how many steps it has.
func replayTrace(t *testing.T, dir string) (string, int) {
	t.Helper()
	tr := readTrace(t, dir)
	proto := tracedProtocol(t, tr)
	c, err := checker.New(proto, tr.Config, tr.Config.Runs[0])
	if err != nil {
		t.Fatal(err)
	}
	s := c.Initial()
	inv := ""
	for i, m := range tr.Moves {
		r, err := c.Apply(&s, m)
		if err != nil {
			t.Fatalf("step %d (%s): %v", i+1, m, err)
		}
		if r.Violation != nil {
			if i != len(tr.Moves)-1 {
				t.Fatalf("step %d of %d violates %s", i+1, len(tr.Moves), r.Violation.Invariant)
			}
			inv = r.Violation.Invariant
		}
	}
	if inv != tr.Violation {
		t.Fatalf("the trace records %q and ends in %q", tr.Violation, inv)
	}
	return inv, len(tr.Moves)
}

// readTrace reads the trace written into dir.
func readTrace(t *testing.T, dir string) *checker.Trace {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, TraceFile))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := checker.ParseTrace(TraceFile, data)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// traceProtocol is the tables the trace written into dir carries.
func traceProtocol(t *testing.T, dir string) *system.Protocol {
	t.Helper()
	tr := readTrace(t, dir)
	return tracedProtocol(t, tr)
}

// tracedProtocol is the tables a trace carries (the built-in ones when
// it carries none).
func tracedProtocol(t *testing.T, tr *checker.Trace) *system.Protocol {
	t.Helper()
	proto := system.Generated()
	if tr.Spec != nil {
		it, err := interp.New(tr.Spec)
		if err != nil {
			t.Fatal(err)
		}
		if proto, err = system.FromStepper("trace", tr.Spec, it); err != nil {
			t.Fatal(err)
		}
	}
	return proto
}

// Each shipped invalid log's reproduction replays to the rejection's
// invariant, no longer than the explanation and the violating step; a
// log refused before any explanation reached the fact says why it has
// no trace. Writing twice gives the same bytes.
func TestWriteRejection_InvalidLogs(t *testing.T) {
	for _, e := range expectations(t) {
		t.Run(strings.TrimSuffix(e.File, ".jsonl"), func(t *testing.T) {
			in := rejected(t, e.File)
			if in.Rejection.Invariant != e.Invariant || in.Rejection.Line != e.Line {
				t.Fatalf("rejected at line %d for %q, expect.json says %d, %q", in.Rejection.Line, in.Rejection.Invariant, e.Line, e.Invariant)
			}
			dir := t.TempDir()
			res, err := WriteRejection(dir, in)
			if err != nil {
				t.Fatal(err)
			}
			readme, err := os.ReadFile(filepath.Join(dir, ReadmeFile))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(readme, []byte(e.File+":")) {
				t.Errorf("the README does not name the rejected fact's file:line:\n%s", readme)
			}
			if in.Rejection.Trace == nil {
				// The judge refused the fact on the logs' own
				// bookkeeping: no table, changed or not, is asked.
				if res.Reproduced || res.Why == "" || !bytes.Contains(readme, []byte("**No trace.** "+res.Why)) ||
					!strings.Contains(res.Why, "refused on what the logs themselves say") {
					t.Fatalf("no explanation, yet %+v\n%s", res, readme)
				}
				if _, err := os.Stat(filepath.Join(dir, TraceFile)); !os.IsNotExist(err) {
					t.Fatalf("a trace without an explanation: %v", err)
				}
				return
			}
			if why, ok := unreproduced[e.File]; ok {
				// The trace is the explanation, replayed without a
				// violation, and the README says why no deviation
				// reproduces the fact.
				if res.Reproduced || res.Why == "" {
					t.Fatalf("%s is reproduced now (%+v, %s): the README's why no longer holds", e.File, res, res.Deviation)
				}
				if inv, n := replayTrace(t, dir); inv != "" || n != res.Steps || n > res.Explained {
					t.Fatalf("the explanation's trace ends in %q after %d steps: %+v", inv, n, res)
				}
				flat := strings.Join(strings.Fields(string(readme)), " ")
				for _, want := range append([]string{"**No violating step.**", in.Rejection.Fact}, why...) {
					if !strings.Contains(flat, want) {
						t.Errorf("the README lacks %q:\n%s", want, readme)
					}
				}
				return
			}
			if !res.Reproduced {
				t.Fatalf("not reproduced: %s", res.Why)
			}
			inv, n := replayTrace(t, dir)
			if inv != e.Invariant {
				t.Fatalf("the trace ends in %q, want %q", inv, e.Invariant)
			}
			if n > res.Explained+1 || n != res.Steps {
				t.Fatalf("%d steps, longer than the explanation's %d and the violating step: %+v", n, res.Explained, res)
			}
			for _, want := range []string{"# Reproduction of a rejected log: " + e.Invariant, "handoffcheck replay trace.jsonl", in.Command} {
				if !bytes.Contains(readme, []byte(want)) {
					t.Errorf("the README lacks %q:\n%s", want, readme)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, TestFile)); err != nil {
				t.Fatal(err)
			}
			again := t.TempDir()
			if _, err := WriteRejection(again, in); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{TraceFile, ReadmeFile, TestFile, SpecOut, SimFile, WorkloadFile, FaultsFile, ScaleSimFile, ScaleFaultsFile} {
				a, _ := os.ReadFile(filepath.Join(dir, f))
				b, _ := os.ReadFile(filepath.Join(again, f))
				if !bytes.Equal(a, b) {
					t.Errorf("%s differs between two writes", f)
				}
			}
			// On the clock: the plan derived from the trace, run from
			// its files under the tables the trace carries.
			onClock := "none: " + res.Plan.Why
			if res.Plan.Result != nil {
				if got := simulated(t, dir, traceProtocol(t, dir), res.Plan.KeepGoing, e.Invariant); got != e.Invariant {
					t.Errorf("the plan's files break %q, want %s", got, e.Invariant)
				}
				onClock = "plan"
				atScale(t, dir, traceProtocol(t, dir), res.Scale, readme)
			} else if res.Timed != nil && res.Timed.Scenario != "" {
				onClock = "scenario " + res.Timed.Scenario
			}
			if want, ok := onTheClock[e.File]; !ok || !strings.HasPrefix(onClock, want) {
				t.Errorf("on the clock: %s, want %s", onClock, want)
			}
			if note := clockNote(res.Plan, e.Invariant); strings.HasPrefix(onClock, "none") {
				// The README says why there is no form on the clock.
				flat := strings.Join(strings.Fields(string(readme)), " ")
				for _, want := range []string{"No plan on the clock derived from these steps reaches " + e.Invariant, note} {
					if !strings.Contains(flat, want) {
						t.Errorf("the README lacks %q:\n%s", want, readme)
					}
				}
				if e.Invariant == "Quiescence" && note == "" {
					t.Errorf("no note of why the clock judges BoundedGiveUp first: %s", res.Plan.Why)
				}
			}
			t.Logf("%d of %d steps, %s; on the clock: %s", res.Steps, res.Explained, res.Deviation, onClock)
		})
	}
}

// Each reproduction of a shipped invalid log takes well under 2 s of CPU
// time (the process's user and system time, which other work on the
// machine inflates less than the wall clock); it reports both.
func BenchmarkWriteRejection(b *testing.B) {
	for _, e := range expectations(b) {
		b.Run(strings.TrimSuffix(e.File, ".jsonl"), func(b *testing.B) {
			in := rejected(b, e.File)
			dir := b.TempDir()
			cpu := cpuTime()
			for i := 0; i < b.N; i++ {
				if _, err := WriteRejection(dir, in); err != nil {
					b.Fatal(err)
				}
			}
			per := (cpuTime() - cpu) / time.Duration(b.N)
			b.ReportMetric(per.Seconds()*1000, "cpu-ms/op")
			if per > 2*time.Second {
				b.Fatalf("%v of CPU a reproduction, want under 2s", per)
			}
		})
	}
}

// A reproduction written over another leaves none of the other's files
// that it does not write itself.
func TestWriteRejection_ReplacesAnEarlierOne(t *testing.T) {
	dir := t.TempDir()
	if res, err := WriteRejection(dir, rejected(t, "stored-before-activation.jsonl")); err != nil || !res.Reproduced {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := WriteRejection(dir, rejected(t, "a-stale-fact-from-an-old-generation.jsonl")); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != ReadmeFile {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("the directory holds %v, want only %s", names, ReadmeFile)
	}
}

// A rejection naming EventuallyDrained, logs that end with the attempt in
// a loop the tables never leave, is judged where the explanation ends,
// by no step: the reproduction writes the explanation, says so, and a
// search from its last state (check --from-trace) finds the loop. The
// logs are rearm-reservation's plan run on the clock past its bound on
// time to the hour at which the simulator stops a run that never drains.
func TestWriteRejection_ALoopThatNeverDrains(t *testing.T) {
	in := found(t, "../../testdata/configs/two-handoffs-faults.json", "../../testdata/variants/rearm-reservation.json", "sglang")
	res, err := Write(t.TempDir(), in)
	if err != nil {
		t.Fatal(err)
	}
	p := res.Plan
	var log bytes.Buffer
	w, err := obslog.NewWriter(&log, p.Config.LogHeader(obslog.All))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(context.Background(), p.Config, &sim.SliceSource{Reqs: p.Requests}, sim.Options{Protocol: in.Protocol, Faults: toCluster(p.Faults), KeepGoing: true, Log: w}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	rep, err := conform.Judge([]conform.Input{{Name: "run.jsonl", R: &log}}, conform.Options{Protocol: in.Protocol, Config: p.Config})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rejection == nil || rep.Rejection.Invariant != model.NameEventuallyDrained {
		t.Fatalf("the run's log: verdict %s, rejection %+v; want EventuallyDrained", rep.Verdict, rep.Rejection)
	}
	dir := t.TempDir()
	rr, err := WriteRejection(dir, RejectionInput{Protocol: in.Protocol, Spec: in.Spec, SpecFile: in.SpecFile, Rejection: rep.Rejection, Command: "handoffcheck conform run.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	if !rr.Loop || rr.Reproduced || rr.Steps == 0 {
		t.Fatalf("%+v", rr)
	}
	readme, err := os.ReadFile(filepath.Join(dir, ReadmeFile))
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(string(readme)), " ")
	if !strings.Contains(flat, "EventuallyDrained is judged where the explanation ends, not at a step") || !strings.Contains(flat, "finds a loop there that never drains") || strings.Contains(flat, "cannot take there") {
		t.Fatalf("the README:\n%s", readme)
	}
	tr := readTrace(t, dir)
	if loop, err := loopsFrom(in.Protocol, tr.Config, tr.Moves); err != nil || !loop {
		t.Fatalf("a search from the trace's last state: loop %v, %v", loop, err)
	}
}
