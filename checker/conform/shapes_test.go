package conform

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/sim"
	"github.com/handoffcheck/handoffcheck/model"
)

// logLines is a log read back: its raw lines (the header first) and the
// fact of each line after it.
type logLines struct {
	h     *obslog.Header
	lines []string
	facts []obslog.Fact // facts[i] is lines[i+1]
}

func readLog(t testing.TB, data []byte) *logLines {
	t.Helper()
	l, err := readLogData(data)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func readLogData(data []byte) (*logLines, error) {
	r, err := obslog.NewReader(bytes.NewReader(data), "log")
	if err != nil {
		return nil, err
	}
	l := &logLines{h: r.Header(), lines: strings.SplitAfter(string(data), "\n")}
	l.lines = l.lines[:len(l.lines)-1] // the empty string after the last newline
	for {
		f, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		l.facts = append(l.facts, f)
	}
	return l, nil
}

func (l *logLines) encode(f obslog.Fact) string {
	var b bytes.Buffer
	w, _ := obslog.NewWriter(&b, l.h)
	w.Write(&f)
	w.Flush()
	s := b.String()
	return s[strings.IndexByte(s, '\n')+1:]
}

func (l *logLines) bytes(lines []string) []byte { return []byte(strings.Join(lines, "")) }

// find is the index in facts of the first fact of attempt a by process p
// of kind k after index from, or -1.
func (l *logLines) find(from int, a string, p int, k obslog.Kind) int {
	for i := from + 1; i < len(l.facts); i++ {
		f := &l.facts[i]
		if f.Attempt == a && (p < 0 || f.Proc == p) && f.Kind == k {
			return i
		}
	}
	return -1
}

func (l *logLines) role(f *obslog.Fact) obslog.Role { return l.h.Processes[f.Proc].Role }

// A shape is one way a system goes wrong, written into a valid log by
// changing one line: mutate returns the changed lines and the line (1-based,
// in the changed log) the judge must reject, or ok false when the log has
// no place for it.
type shape struct {
	name      string
	invariant string
	mutate    func(l *logLines) (lines []string, line int, ok bool)
}

// move takes line from (a fact index) out and puts it before fact index
// to; it returns the new lines and the moved line's number.
func move(l *logLines, from, to int) ([]string, int) {
	out := append([]string(nil), l.lines[:to+1]...)
	out = append(out, l.lines[from+1])
	out = append(out, l.lines[to+1:from+1]...)
	out = append(out, l.lines[from+2:]...)
	return out, to + 2
}

var shapes = []shape{
	{"source released before the reader completed", model.NameReleaseNeedsReaderAck, func(l *logLines) ([]string, int, bool) {
		for i := range l.facts {
			f := &l.facts[i]
			if f.Kind != obslog.ReaderCompleted {
				continue
			}
			if k := l.find(i, f.Attempt, f.Proc, obslog.SourceReleased); k > 0 {
				out, line := move(l, k, i)
				return out, line, true
			}
		}
		return nil, 0, false
	}},
	{"Stored before activation", model.NameNoStoredBeforeActivation, func(l *logLines) ([]string, int, bool) {
		for i := range l.facts {
			f := &l.facts[i]
			if f.Kind != obslog.Activated {
				continue
			}
			if k := l.find(i, f.Attempt, f.Proc, obslog.Stored); k > 0 {
				out, line := move(l, k, i)
				return out, line, true
			}
		}
		return nil, 0, false
	}},
	{"a reservation released twice", model.NameExactlyOnceRelease, func(l *logLines) ([]string, int, bool) {
		for i := range l.facts {
			if l.facts[i].Kind == obslog.ReservationReleased {
				out := append([]string(nil), l.lines[:i+2]...)
				out = append(out, l.lines[i+1])
				out = append(out, l.lines[i+2:]...)
				return out, i + 3, true
			}
		}
		return nil, 0, false
	}},
	{"prefill dispatched before the destination reserved", model.NameDestinationFirstGate, func(l *logLines) ([]string, int, bool) {
		if l.h.Policy.String() != "destination-first" {
			return nil, 0, false
		}
		for i := range l.facts {
			f := &l.facts[i]
			if f.Kind != obslog.RequestAccepted || l.role(f) != obslog.RolePrefill {
				continue
			}
			if l.find(-1, f.Attempt, -1, obslog.Reserved) >= 0 || l.find(-1, f.Attempt, -1, obslog.PrefillDispatched) >= 0 {
				continue
			}
			d := *f
			d.Kind = obslog.PrefillDispatched
			out := append([]string(nil), l.lines[:i+2]...)
			out = append(out, l.encode(d))
			out = append(out, l.lines[i+2:]...)
			return out, i + 3, true
		}
		return nil, 0, false
	}},
	{"a stale fact from an old generation", model.NameAttemptIsolation, func(l *logLines) ([]string, int, bool) {
		for i := range l.facts {
			r := &l.facts[i]
			if r.Kind != obslog.WorkerRestarted {
				continue
			}
			for k := i + 1; k < len(l.facts); k++ {
				if f := l.facts[k]; f.Proc == r.Proc && f.Kind != obslog.WorkerRestarted {
					f.Gen = r.Gen - 1
					out := append([]string(nil), l.lines...)
					out[k+1] = l.encode(f)
					return out, k + 2, true
				}
			}
		}
		return nil, 0, false
	}},
	{"success reported for a failed transfer", model.NameOutcomeTruthful, func(l *logLines) ([]string, int, bool) {
		for i := range l.facts {
			f := &l.facts[i]
			if f.Kind != obslog.TransferFailed {
				continue
			}
			for k := i + 1; k < len(l.facts); k++ {
				if o := l.facts[k]; o.Attempt == f.Attempt && o.Kind == obslog.OutcomeReported && l.role(&o) == obslog.RoleDecode && o.Outcome == model.OutcomeFailed {
					o.Outcome = model.OutcomeOK
					out := append([]string(nil), l.lines...)
					out[k+1] = l.encode(o)
					return out, k + 2, true
				}
			}
		}
		return nil, 0, false
	}},
	{"pages never returned after a failed transfer", model.NameQuiescence, func(l *logLines) ([]string, int, bool) {
		for i := range l.facts {
			f := &l.facts[i]
			if f.Kind != obslog.TransferFailed {
				continue
			}
			k := l.find(i, f.Attempt, -1, obslog.ReservationReleased)
			if k < 0 {
				continue
			}
			// Rejected at the decode worker's next fact of the attempt
			// (it goes on as though it had returned them), or at the
			// attempt's last fact when there is none.
			next, last := -1, -1
			for x := range l.facts {
				if x != k && l.facts[x].Attempt == f.Attempt {
					last = x
					if next < 0 && x > k && l.facts[x].Proc == l.facts[k].Proc {
						next = x
					}
				}
			}
			if next < 0 {
				next = last
			}
			out := append([]string(nil), l.lines[:k+1]...)
			out = append(out, l.lines[k+2:]...)
			line := next + 2
			if next > k {
				line--
			}
			return out, line, true
		}
		return nil, 0, false
	}},
}

// Each invalid shape, written into every scenario log that has a place
// for it, is rejected at the changed line (or, for what is never
// returned, at the attempt's last line) with its invariant.
func TestInvalidShapesRejected(t *testing.T) {
	applied := make([]int, len(shapes))
	for i := range sim.Scenarios {
		sc := &sim.Scenarios[i]
		for _, pol := range []string{"source-first", "destination-first"} {
			data := simLog(t, sc, pol, obslog.All)
			l := readLog(t, data)
			for si, sh := range shapes {
				lines, line, ok := sh.mutate(l)
				if !ok {
					continue
				}
				applied[si]++
				name := fmt.Sprintf("%s/%s", sc.Name, pol)
				rep := judgeShaped(t, name, l.bytes(lines))
				x := rep.Rejection
				want := sh.invariant
				if sh.name == "source released before the reader completed" && pol == "destination-first" {
					// A pushing source sees its own writes end: the physics
					// allows the release, the tables wait for activation.
					want = ""
				}
				if rep.Verdict != Rejected || x == nil || x.Line != line || x.Invariant != want {
					t.Errorf("%s: %s: want rejected at line %d with %q, got %s %+v", name, sh.name, line, want, rep.Verdict, x)
				}
			}
		}
	}
	for si, n := range applied {
		if n == 0 {
			t.Errorf("%s: no scenario log has a place for it", shapes[si].name)
		}
		t.Logf("%s: written into %d logs", shapes[si].name, n)
	}
}

// split writes a log as one log per process (each with the header), in
// the order given by perm: only each process's own order is kept.
func split(l *logLines, lines []string) [][]byte {
	per := map[string][]string{}
	var order []string
	for _, ln := range lines[1:] {
		name := "?"
		if i := strings.Index(ln, `"proc":"`); i >= 0 {
			rest := ln[i+len(`"proc":"`):]
			name = rest[:strings.IndexByte(rest, '"')]
		}
		if _, ok := per[name]; !ok {
			order = append(order, name)
		}
		per[name] = append(per[name], ln)
	}
	var out [][]byte
	// The processes' logs go in reverse order of first appearance, so
	// that reading them side by side is as far from the single log's
	// order as it can be.
	for i := len(order) - 1; i >= 0; i-- {
		out = append(out, []byte(lines[0]+strings.Join(per[order[i]], "")))
	}
	return out
}

// shapedJudged keeps the verdict on each scenario log with an invalid
// shape written into it, by the log's name and contents: the test that
// holds each shape to its invariant and the one that holds the verdict
// to the split into logs per process judge the same whole logs, which
// is a third of their time; each log is judged once.
var shapedJudged struct {
	sync.Mutex
	m map[string]*Report
}

// judgeShaped is judgeBytes with Options{}, once per name and contents.
// Reports are only read once made.
func judgeShaped(t testing.TB, name string, data []byte) *Report {
	t.Helper()
	key := fmt.Sprintf("%s/%x", name, sha256.Sum256(data))
	shapedJudged.Lock()
	rep, ok := shapedJudged.m[key]
	shapedJudged.Unlock()
	if ok {
		return rep
	}
	rep = judgeBytes(t, name, data, Options{})
	shapedJudged.Lock()
	if shapedJudged.m == nil {
		shapedJudged.m = map[string]*Report{}
	}
	shapedJudged.m[key] = rep
	shapedJudged.Unlock()
	return rep
}

func judgeSplit(t testing.TB, name string, logs [][]byte) *Report {
	t.Helper()
	var in []Input
	for i, b := range logs {
		in = append(in, Input{Name: fmt.Sprintf("%s.%d", name, i), R: bytes.NewReader(b)})
	}
	rep, err := Judge(in, Options{})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return rep
}

// untimed drops the time stamps of a log's lines: the logs are then read
// a line of each in turn, as far from the order things happened as the
// judge ever reads them.
func untimed(logs [][]byte) [][]byte {
	re := regexp.MustCompile(`,"t_us":[0-9]+`)
	out := make([][]byte, len(logs))
	for i, b := range logs {
		out[i] = re.ReplaceAll(b, nil)
	}
	return out
}

// The verdict does not depend on how many logs the facts come in, as
// long as each process's order is kept: every scenario log, valid and
// with each invalid shape written into it, split one log per process,
// read in the order of their time stamps and, for the scenarios with
// restarts and failures, without them.
func TestVerdictIndependentOfSplit(t *testing.T) {
	for i := range sim.Scenarios {
		sc := &sim.Scenarios[i]
		for _, pol := range []string{"source-first", "destination-first"} {
			name := sc.Name + "/" + pol
			data := simLog(t, sc, pol, obslog.All)
			l := readLog(t, data)
			how := []func([][]byte) [][]byte{func(b [][]byte) [][]byte { return b }}
			if sc.Name == "failure-matrix" || sc.Name == "restart-sweep" || sc.Name == "duplicate-stale-late" {
				how = append(how, untimed)
			}
			for _, h := range how {
				if rep := judgeSplit(t, name, h(split(l, l.lines))); rep.Verdict != Explained {
					t.Errorf("%s split per process: %s %+v", name, rep.Verdict, rep.Rejection)
				}
				for _, sh := range shapes {
					lines, _, ok := sh.mutate(l)
					if !ok {
						continue
					}
					whole := judgeShaped(t, name, l.bytes(lines))
					parts := judgeSplit(t, name, h(split(l, lines)))
					if whole.Verdict != parts.Verdict {
						t.Errorf("%s, %s: one log: %s, one per process: %s %+v", name, sh.name, whole.Verdict, parts.Verdict, parts.Rejection)
					} else if whole.Rejection.Invariant != parts.Rejection.Invariant {
						t.Errorf("%s, %s: one log breaks %q at %d, one per process %q at %s:%d (%s)", name, sh.name, whole.Rejection.Invariant, whole.Rejection.Line,
							parts.Rejection.Invariant, parts.Rejection.File, parts.Rejection.Line, parts.Rejection.Detail)
					}
				}
			}
		}
	}
}
