package conform

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// oneAttempt is a source-first handoff as a user writes it from
// docs/conform.md: a router, one prefill and one decode worker, no time
// stamps.
const oneAttemptHeader = `{"schema":"handoffcheck.log/v1","policy":"source-first","engine":"vllm","processes":[{"name":"router","role":"router"},{"name":"prefill-0","role":"prefill"},{"name":"decode-0","role":"decode"}]}
`

const oneAttemptFacts = `{"proc":"router","gen":0,"attempt":"a0","kind":"routed","stage":"prefill","to":"prefill-0","tokens":2048,"prompt_tokens":2048}
{"proc":"prefill-0","gen":0,"attempt":"a0","kind":"request_accepted"}
{"proc":"prefill-0","gen":0,"attempt":"a0","kind":"prefill_dispatched"}
{"proc":"prefill-0","gen":0,"attempt":"a0","kind":"registered"}
{"proc":"prefill-0","gen":0,"attempt":"a0","kind":"pinned","blocks":128}
{"proc":"prefill-0","gen":0,"attempt":"a0","kind":"stored","blocks":128}
{"proc":"router","gen":0,"attempt":"a0","kind":"routed","stage":"decode","to":"decode-0","blocks":128,"prefix_hit_tokens":0}
{"proc":"decode-0","gen":0,"attempt":"a0","kind":"request_accepted"}
{"proc":"decode-0","gen":0,"attempt":"a0","kind":"reserved","pages":128,"slot":0,"headroom":0}
{"proc":"decode-0","gen":0,"attempt":"a0","kind":"registered"}
{"proc":"decode-0","gen":0,"attempt":"a0","kind":"transfer_started"}
{"proc":"decode-0","gen":0,"attempt":"a0","kind":"transfer_done"}
{"proc":"decode-0","gen":0,"attempt":"a0","kind":"receive_completed"}
{"proc":"decode-0","gen":0,"attempt":"a0","kind":"activated"}
{"proc":"decode-0","gen":0,"attempt":"a0","kind":"stored","blocks":128}
{"proc":"prefill-0","gen":0,"attempt":"a0","kind":"reader_completed"}
{"proc":"prefill-0","gen":0,"attempt":"a0","kind":"source_released","blocks":128}
{"proc":"prefill-0","gen":0,"attempt":"a0","kind":"outcome_reported","outcome":"ok"}
{"proc":"prefill-0","gen":0,"attempt":"a0","kind":"removed","blocks":128}
{"proc":"decode-0","gen":0,"attempt":"a0","kind":"decode_finished"}
{"proc":"decode-0","gen":0,"attempt":"a0","kind":"decode_released","blocks":128}
{"proc":"decode-0","gen":0,"attempt":"a0","kind":"outcome_reported","outcome":"ok"}
{"proc":"decode-0","gen":0,"attempt":"a0","kind":"removed","blocks":128}
`

// procLines is a log's fact lines of one process.
func procLines(facts, proc string) []string {
	var out []string
	for _, l := range strings.SplitAfter(facts, "\n") {
		if strings.Contains(l, `"proc":"`+proc+`"`) {
			out = append(out, l)
		}
	}
	return out
}

func judgeLogs(names []string, logs []string) (*Report, error) {
	var in []Input
	for i, l := range logs {
		in = append(in, Input{Name: names[i], R: strings.NewReader(l)})
	}
	return Judge(in, Options{})
}

// A process's log rotated into two files, given in order beside the
// other processes' logs, without time stamps, is read in that order:
// explained, wherever the rotation cut it. (The logs were read a line of
// each in turn, and the second file's facts came before the first's.)
func TestRotatedProcessLogReadInOrder(t *testing.T) {
	pre := procLines(oneAttemptFacts, "prefill-0")
	router := oneAttemptHeader + strings.Join(procLines(oneAttemptFacts, "router"), "")
	decode := oneAttemptHeader + strings.Join(procLines(oneAttemptFacts, "decode-0"), "")
	for cut := 1; cut < len(pre); cut++ {
		names := []string{"router.jsonl", "prefill-0.jsonl.1", "prefill-0.jsonl.2", "decode-0.jsonl"}
		logs := []string{router, oneAttemptHeader + strings.Join(pre[:cut], ""), oneAttemptHeader + strings.Join(pre[cut:], ""), decode}
		rep, err := judgeLogs(names, logs)
		if err != nil || rep.Verdict != Explained {
			t.Errorf("prefill-0 rotated after %d lines: %v %+v, want explained", cut, err, rep)
		}
	}
}

// One log rotated into two files, every process in both, without time
// stamps: read in the order given, each earlier log read ahead for the
// process of a later log's next fact; where reading ahead cannot tell
// (here, read ahead by one fact at most), refused (ErrInput, naming where
// the order broke in both logs); never a rejection. With time stamps,
// always explained.
func TestRotatedWholeLogNeverRejected(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(logsDir, "valid", "source-first-complete.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer func(n int) { lookahead = n }(lookahead)
	for _, ahead := range []int{lookahead, 1} {
		lookahead = ahead
		for _, c := range []struct {
			name, log string
			stamped   bool
		}{
			{"one attempt", oneAttemptHeader + oneAttemptFacts, false},
			{"source-first-complete", string(data), true},
			{"source-first-complete without t_us", string(bytes.Join(untimed([][]byte{data}), nil)), false},
		} {
			lines := strings.SplitAfter(c.log, "\n")
			lines = lines[:len(lines)-1]
			refused := 0
			for cut := 2; cut < len(lines); cut++ {
				a := strings.Join(lines[:cut], "")
				b := lines[0] + strings.Join(lines[cut:], "")
				rep, err := judgeLogs([]string{"log.1", "log.2"}, []string{a, b})
				switch {
				case err != nil && errors.Is(err, ErrInput) && ahead == 1 && !c.stamped && strings.HasPrefix(err.Error(), "log.1:") && strings.Contains(err.Error(), "log.2:"):
					refused++
				case err == nil && rep.Verdict == Explained:
				default:
					t.Errorf("lookahead %d, %s cut after line %d: %v %+v, want explained, or refused naming both logs", ahead, c.name, cut, err, rep)
				}
			}
			if ahead == 1 && !c.stamped && refused == 0 {
				t.Errorf("lookahead 1, %s: no cut refused; the refusal is not exercised", c.name)
			}
		}
	}
}

// The same log given twice, or a copy of it, is refused naming both, not
// judged as facts that happened twice (a false InFlightAccounting).
func TestSameLogTwiceRefused(t *testing.T) {
	log := oneAttemptHeader + oneAttemptFacts
	for _, names := range [][]string{{"a.jsonl", "a-copy.jsonl"}, {"a.jsonl", "a.jsonl"}} {
		rep, err := judgeLogs(names, []string{log, log})
		if err == nil || !errors.Is(err, ErrInput) || !strings.HasPrefix(err.Error(), names[1]+":2: ") || !strings.Contains(err.Error(), names[0]+":2") {
			t.Errorf("%v: %v %+v, want ErrInput at %s:2 naming %s:2", names, err, rep, names[1], names[0])
		}
	}
	// One process's facts given twice beside the others': refused too.
	pre := oneAttemptHeader + strings.Join(procLines(oneAttemptFacts, "prefill-0"), "")
	rest := oneAttemptHeader + strings.Join(append(procLines(oneAttemptFacts, "router"), procLines(oneAttemptFacts, "decode-0")...), "")
	if _, err := judgeLogs([]string{"rest", "p", "p2"}, []string{rest, pre, pre}); err == nil || !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "p2:2: ") {
		t.Errorf("prefill-0's log twice: %v, want ErrInput at p2:2", err)
	}
}
