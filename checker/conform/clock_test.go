package conform

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/sim"
	"github.com/handoffcheck/handoffcheck/model"
)

// releaseBeforeActivation is a live run's logs of the variant
// release-before-activation.json on its reproduction's plan (one host,
// one clock; in one log, in the order of the stamps), per process: the
// destination's core, slowed, applies the activation 221 ms after the
// transfer is done, and the source releases its pin on the reader's
// completion 1.2 ms after it, long before. No message ties the
// activation to the release: only the clock orders them.
var releaseBeforeActivation = clockLog("../../testdata/logs/clock/release-before-activation.jsonl")

// clockLog is a log's facts by the file of the process that logs them,
// as a live run writes them ("" when it does not read).
func clockLog(path string) map[string]string {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
		var f struct {
			Proc string `json:"proc"`
		}
		if json.Unmarshal([]byte(l), &f) != nil || f.Proc == "" {
			return nil
		}
		name := f.Proc + ".jsonl"
		if out[name] != "" {
			out[name] += "\n"
		}
		out[name] += l
	}
	return out
}

// releaseOnHeartbeat is a live run's logs of release-on-heartbeat.json on
// its reproduction's plan: the transfer hangs, the source releases its
// pin on the heartbeat's LeaseRenewed at 21 ms, and the hung transfer
// fails at the destination's next health check, 180 ms later, once the
// source's registration is gone.
var releaseOnHeartbeat = map[string]string{
	"router.jsonl": `{"proc":"router","gen":0,"attempt":"r0","kind":"routed","stage":"prefill","to":"prefill-0","tokens":48,"prompt_tokens":48,"t_us":0}
{"proc":"router","gen":0,"attempt":"r0","kind":"routed","stage":"decode","to":"decode-0","blocks":3,"prefix_hit_tokens":0,"t_us":903}`,
	"prefill-0.jsonl": `{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"request_accepted","t_us":574}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"prefill_dispatched","t_us":574}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"registered","t_us":618}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"pinned","blocks":3,"t_us":618}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"stored","blocks":3,"t_us":618}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"lease_renewed","t_us":21925}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"source_released","blocks":3,"t_us":21925}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"outcome_reported","outcome":"ok","t_us":21925}
{"proc":"prefill-0","gen":0,"attempt":"r0","kind":"removed","blocks":3,"t_us":21933}`,
	"decode-0.jsonl": `{"proc":"decode-0","gen":0,"attempt":"r0","kind":"request_accepted","t_us":1035}
{"proc":"decode-0","gen":0,"attempt":"r0","kind":"reserved","pages":3,"slot":0,"headroom":0,"t_us":1057}
{"proc":"decode-0","gen":0,"attempt":"r0","kind":"registered","t_us":1057}
{"proc":"decode-0","gen":0,"attempt":"r0","kind":"transfer_started","t_us":1057}
{"proc":"decode-0","gen":0,"attempt":"r0","kind":"transfer_failed","t_us":202340}
{"proc":"decode-0","gen":0,"attempt":"r0","kind":"reservation_released","pages":3,"t_us":202340}
{"proc":"decode-0","gen":0,"attempt":"r0","kind":"outcome_reported","outcome":"failed","t_us":202340}`,
}

var clockProcs = []string{"router.jsonl", "prefill-0.jsonl", "decode-0.jsonl"}

// clockSplits are the same facts given four ways: one log per process;
// one log of all, in the order of their stamps; one log of all, each
// process's facts after the previous process's (their own order kept,
// the clock's not: the verdict may not depend on the reading order);
// and the router's and the source's facts in one log, the destination's
// in another.
func clockSplits(logs map[string]string) map[string][]Input {
	type line struct {
		text string
		t    int64
	}
	var all []line
	var byProc []string
	for _, name := range clockProcs {
		for _, l := range strings.Split(logs[name], "\n") {
			var f struct {
				T int64 `json:"t_us"`
			}
			_ = json.Unmarshal([]byte(l), &f)
			all = append(all, line{l, f.T})
		}
		byProc = append(byProc, logs[name])
	}
	sort.SliceStable(all, func(x, y int) bool { return all[x].t < all[y].t })
	var stamped []string
	for _, l := range all {
		stamped = append(stamped, l.text)
	}
	log := func(name string, lines ...string) Input {
		return Input{Name: name, R: strings.NewReader(sameStepHeader + "\n" + strings.Join(lines, "\n") + "\n")}
	}
	var per []Input
	for _, name := range clockProcs {
		per = append(per, log(name, logs[name]))
	}
	return map[string][]Input{
		"one log per process":          per,
		"one log in the stamps' order": {log("all.jsonl", stamped...)},
		"one log, process by process":  {log("all.jsonl", byProc...)},
		"router and source, then destination": {log("front.jsonl", logs["router.jsonl"], logs["prefill-0.jsonl"]),
			log("decode-0.jsonl", logs["decode-0.jsonl"])},
	}
}

func clocked(d time.Duration, opt Options) Options {
	opt.ClockError, opt.Clocked = d, true
	return opt
}

// TestClockError_OrdersTheProcesses: a log whose verdict the clock error
// decides. Without it, each process's own order is all that counts, and
// the judge places the activation in the step that completed the
// transfer, before the source's release: explained. With a clock error
// well under the 220 ms between them, the activation was applied after
// the release, by a slowed core (an unlogged delay): the release broke
// ReleaseNeedsReaderAck. With one too large to order them (150 ms: the
// stamps may be 300 ms apart and still be of one step), explained again.
// (The fact rejected is the activation: up to it, an explanation that
// activates at once explains every fact; the step that would explain
// the activation where the clock has it breaks the invariant.)
// The verdict is the same however the facts are split over logs.
func TestClockError_OrdersTheProcesses(t *testing.T) {
	p := variantProtocol(t, "../../testdata/variants/release-before-activation.json")
	for _, tc := range []struct {
		name string
		opt  Options
		inv  string // "" explained
	}{
		{"no clock error", Options{Protocol: p}, ""},
		{"1ms", clocked(time.Millisecond, Options{Protocol: p}), model.NameReleaseNeedsReaderAck},
		{"0s", clocked(0, Options{Protocol: p}), model.NameReleaseNeedsReaderAck},
		{"150ms", clocked(150*time.Millisecond, Options{Protocol: p}), ""},
	} {
		for split, in := range clockSplits(releaseBeforeActivation) {
			t.Run(tc.name+"/"+split, func(t *testing.T) {
				rep, err := Judge(in, tc.opt)
				if err != nil {
					t.Fatal(err)
				}
				if tc.opt.Clocked != (rep.ClockError == tc.name) {
					t.Errorf("the report's clock error %q, want %q", rep.ClockError, tc.name)
				}
				if tc.inv == "" {
					if rep.Verdict != Explained {
						t.Fatalf("verdict %s: %+v", rep.Verdict, rep.Rejection)
					}
					return
				}
				r := rep.Rejection
				if rep.Verdict != Rejected || r == nil || r.Invariant+r.Broken != tc.inv || !strings.Contains(r.Fact, "activated") {
					t.Fatalf("verdict %s: %+v, want a rejection of the activation naming %s", rep.Verdict, r, tc.inv)
				}
				// It says the clock is why the step that explains the
				// transfer's end does not log the activation too.
				if !strings.Contains(r.Detail, "decode-0 logs activated stamped 220820 µs after its receive_completed at ") ||
					!strings.Contains(r.Detail, "more than twice the clock error") {
					t.Fatalf("the rejection does not say why the clock refuses the activation: %s", r.Detail)
				}
			})
		}
	}
}

// TestClockError_NamesTheStepTheClockOrders: without a clock error the
// judge places the hung transfer's failure, which the destination logs
// 200 ms after the source's release, before it, and the release the
// heartbeat caused breaks ReleaseNeedsReaderAck only; with one, the
// transfer was still running when the source released the blocks it
// reads, SourcePinnedUntilRead, the invariant the trace's step breaks.
func TestClockError_NamesTheStepTheClockOrders(t *testing.T) {
	p := variantProtocol(t, "../../testdata/variants/release-on-heartbeat.json")
	for _, tc := range []struct {
		opt Options
		inv string
	}{
		{Options{Protocol: p}, model.NameReleaseNeedsReaderAck},
		{clocked(5*time.Millisecond, Options{Protocol: p}), model.NameSourcePinnedUntilRead},
	} {
		for split, in := range clockSplits(releaseOnHeartbeat) {
			rep, err := Judge(in, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if r := rep.Rejection; r == nil || r.Invariant != tc.inv || !strings.Contains(r.Fact, "source_released") {
				t.Fatalf("%s, clock error %q: verdict %s %+v, want the release rejected naming %s", split, rep.ClockError, rep.Verdict, r, tc.inv)
			}
		}
	}
}

// TestClockError_RefusesWhatItCannotOrder: with a clock error, a fact
// without a stamp, or a stamp before its process's previous one, is bad
// input naming its line; without one, both logs are judged.
func TestClockError_RefusesWhatItCannotOrder(t *testing.T) {
	p := variantProtocol(t, "../../testdata/variants/release-before-activation.json")
	unstamped := strings.Replace(releaseBeforeActivation["decode-0.jsonl"], `"kind":"activated","t_us":843782`, `"kind":"activated"`, 1)
	backwards := strings.Replace(releaseBeforeActivation["decode-0.jsonl"], `"kind":"activated","t_us":843782`, `"kind":"activated","t_us":1000`, 1)
	for _, tc := range []struct {
		name, decode, want string
	}{
		{"unstamped", unstamped, "decode-0.jsonl:8: conform: bad input: --clock-error needs every fact stamped"},
		{"backwards", backwards, "decode-0.jsonl:8: conform: bad input: t_us 1000 is before 622962, decode-0's previous fact (decode-0.jsonl:7)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := map[string]string{}
			for k, v := range releaseBeforeActivation {
				logs[k] = v
			}
			logs["decode-0.jsonl"] = tc.decode
			in := clockSplits(logs)["one log per process"]
			_, err := Judge(in, clocked(time.Millisecond, Options{Protocol: p}))
			if err == nil || !errors.Is(err, ErrInput) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if _, err := Judge(clockSplits(logs)["one log per process"], Options{Protocol: p}); err != nil {
				t.Fatalf("without a clock error: %v", err)
			}
		})
	}
}

// TestClockError_ReportSaysIt: the text and the JSON report say the
// clock error assumed, and say nothing of one when none was given.
func TestClockError_ReportSaysIt(t *testing.T) {
	p := variantProtocol(t, "../../testdata/variants/release-before-activation.json")
	for _, opt := range []Options{{Protocol: p}, clocked(2500*time.Microsecond, Options{Protocol: p})} {
		rep, err := Judge(clockSplits(releaseBeforeActivation)["one log per process"], opt)
		if err != nil {
			t.Fatal(err)
		}
		var text bytes.Buffer
		rep.WriteText(&text)
		js, _ := json.Marshal(rep)
		saysText := strings.Contains(text.String(), "\nclock error: 2.5ms (every stamp within it of its step, on one clock the processes share)")
		saysJSON := bytes.Contains(js, []byte(`"clock_error":"2.5ms"`))
		if saysText != opt.Clocked || saysJSON != opt.Clocked || !opt.Clocked && bytes.Contains(js, []byte("clock_error")) {
			t.Errorf("clocked %v: text says it %v, JSON %v:\n%s\n%s", opt.Clocked, saysText, saysJSON, text.String(), js)
		}
	}
}

// The owed labels' mask loses a label's bit and moves the later ones
// down, as payOwed and forgive move the labels.
func TestDropOwedBit(t *testing.T) {
	for _, tc := range []struct {
		mask uint8
		i    int
		want uint8
	}{
		{0b1011, 0, 0b101}, {0b1011, 1, 0b101}, {0b1011, 2, 0b111}, {0b1000_0001, 7, 0b1}, {0, 3, 0},
	} {
		if got := dropOwedBit(tc.mask, tc.i); got != tc.want {
			t.Errorf("dropOwedBit(%08b, %d) = %08b, want %08b", tc.mask, tc.i, got, tc.want)
		}
	}
}

// With a clock error the verdict still does not depend on how many logs
// the facts come in: every scenario's log (stamped by the simulator's
// clock, exact: a clock error of 0 holds), one log or one per process,
// is explained, and (but in -short) each invalid shape written into it
// gets the same verdict and invariant either way, or is refused either
// way (a shape that moves a line may send its process's stamps back).
func TestClockError_VerdictIndependentOfSplit(t *testing.T) {
	opt := clocked(0, Options{})
	judge := func(name string, logs [][]byte) (*Report, error) {
		var in []Input
		for i, b := range logs {
			in = append(in, Input{Name: fmt.Sprintf("%s.%d", name, i), R: bytes.NewReader(b)})
		}
		return Judge(in, opt)
	}
	for i := range sim.Scenarios {
		sc := &sim.Scenarios[i]
		for _, pol := range []string{"source-first", "destination-first"} {
			name := sc.Name + "/" + pol
			data := simLog(t, sc, pol, obslog.All)
			l := readLog(t, data)
			for _, logs := range [][][]byte{{data}, split(l, l.lines)} {
				if rep, err := judge(name, logs); err != nil || rep.Verdict != Explained {
					t.Errorf("%s in %d logs, clock error 0: %v %+v", name, len(logs), err, rep)
				}
			}
			if testing.Short() {
				continue
			}
			for _, sh := range shapes {
				lines, _, ok := sh.mutate(l)
				if !ok {
					continue
				}
				whole, werr := judge(name, [][]byte{l.bytes(lines)})
				parts, perr := judge(name, split(l, lines))
				switch {
				case (werr != nil) != (perr != nil):
					t.Errorf("%s, %s: one log: %v, one per process: %v", name, sh.name, werr, perr)
				case werr != nil:
				case whole.Verdict != parts.Verdict:
					t.Errorf("%s, %s: one log: %s, one per process: %s %+v", name, sh.name, whole.Verdict, parts.Verdict, parts.Rejection)
				case whole.Rejection != nil && whole.Rejection.Invariant != parts.Rejection.Invariant:
					t.Errorf("%s, %s: one log breaks %q, one per process %q (%s)", name, sh.name, whole.Rejection.Invariant, parts.Rejection.Invariant, parts.Rejection.Detail)
				}
			}
		}
	}
}
