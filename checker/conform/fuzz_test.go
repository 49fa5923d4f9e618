package conform

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
)

var fuzzWhere = regexp.MustCompile(`^log[0-9]\.jsonl:[0-9]+: `)

// FuzzConform: logs made of any bytes (split into up to three logs at
// each NUL byte) never panic or hang the judge; a refusal names the file
// and line and wraps obslog.ErrLog or ErrInput; a verdict is one of the
// three; and a single log split one log per process gets the same one.
// All of that holds with a clock error too (clock.go), whose refusals (a
// fact without a stamp, a stamp going back) name the line as well.
func FuzzConform(f *testing.F) {
	ps, _ := filepath.Glob(filepath.Join(logsDir, "*", "*.jsonl"))
	for _, p := range ps {
		data, _ := os.ReadFile(p)
		f.Add(data)
	}
	// A process's log rotated into two logs, the other processes in a
	// third; and one log given twice.
	one, _ := os.ReadFile(filepath.Join(logsDir, "valid", "one-attempt.jsonl"))
	if lines := bytes.SplitAfter(one, []byte("\n")); len(lines) > 12 {
		var pre, rest [][]byte
		for _, l := range lines[1:] {
			if bytes.Contains(l, []byte(`"proc":"prefill-0"`)) {
				pre = append(pre, l)
			} else {
				rest = append(rest, l)
			}
		}
		h := lines[0]
		log := func(ls [][]byte) []byte { return append(bytes.Clone(h), bytes.Join(ls, nil)...) }
		f.Add(bytes.Join([][]byte{log(rest), log(pre[:3]), log(pre[3:])}, []byte{0}))
		f.Add(bytes.Join([][]byte{log(lines[1:12]), log(lines[12:])}, []byte{0}))
		f.Add(bytes.Join([][]byte{one, one}, []byte{0}))
	}
	// A log only the clock orders (clock_test.go; the other, the example
	// of logs/clock, is among the examples), in one log.
	f.Add([]byte(sameStepHeader + "\n" + releaseOnHeartbeat["router.jsonl"] + "\n" + releaseOnHeartbeat["prefill-0.jsonl"] + "\n" + releaseOnHeartbeat["decode-0.jsonl"] + "\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzJudge(t, data, Options{Bound: 6, MaxFaults: 1})
		fuzzJudge(t, data, clocked(time.Millisecond, Options{Bound: 6, MaxFaults: 1}))
	})
}

// fuzzJudge judges FuzzConform's logs with opt.
func fuzzJudge(t *testing.T, data []byte, opt Options) {
	if len(data) > 32<<10 {
		return
	}
	parts := bytes.Split(data, []byte{0})
	if len(parts) > 3 {
		return
	}
	var in []Input
	for i, p := range parts {
		in = append(in, Input{Name: "log" + string(rune('0'+i)) + ".jsonl", R: bytes.NewReader(p)})
	}
	rep, err := Judge(in, opt)
	if err != nil {
		if !(errors.Is(err, obslog.ErrLog) || errors.Is(err, ErrInput)) || (!fuzzWhere.MatchString(err.Error()) && !strings.Contains(err.Error(), "no log")) {
			t.Fatalf("the refusal does not name a file and line, or is not a log error: %v", err)
		}
		return
	}
	switch rep.Verdict {
	case Explained, Rejected, Inconclusive:
	default:
		t.Fatalf("verdict %q", rep.Verdict)
	}
	if len(parts) != 1 {
		return
	}
	l, err := readLogData(data)
	if err != nil {
		return
	}
	per := split(l, l.lines)
	var pin []Input
	for i, p := range per {
		pin = append(pin, Input{Name: "log" + string(rune('0'+i)) + ".jsonl", R: bytes.NewReader(p)})
	}
	rep2, err := Judge(pin, opt)
	if err != nil {
		t.Fatalf("the log judges, one log per process does not: %v", err)
	}
	if rep.Verdict != rep2.Verdict {
		t.Fatalf("one log: %s %+v; one per process: %s %+v", rep.Verdict, rep.Rejection, rep2.Verdict, rep2.Rejection)
	}
}
