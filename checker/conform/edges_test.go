package conform

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/model"
)

// The logs below are written by hand from docs/conform.md, as a user of
// another system would, starting from the one-attempt example: a
// source-first handoff whose 2048-token prompt pins 128 blocks, pulled by
// the destination, both sides publishing Stored and, at the end, Removed.
//
// Its lines, 1-based as in the file: 1 header; 2 routed prefill;
// 3-6 prefill accepted, dispatched, registered, pinned; 7 routed decode;
// 8-15 decode accepted, reserved, registered, transfer started and done,
// receive completed, activated, stored; 16-20 prefill reader completed,
// source released, stored, outcome ok, removed; 21-24 decode finished,
// released, outcome ok, removed.
func oneAttempt(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../testdata/logs/valid/one-attempt.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	return lines[:len(lines)-1]
}

// edit is the example's lines without those dropped (1-based), with more
// appended.
func edit(lines []string, drop []int, more ...string) []byte {
	var b bytes.Buffer
	for i, l := range lines {
		skip := false
		for _, d := range drop {
			skip = skip || d == i+1
		}
		if !skip {
			b.WriteString(l)
		}
	}
	for _, m := range more {
		b.WriteString(m + "\n")
	}
	return b.Bytes()
}

func fact(proc, kind, figs string) string {
	if figs != "" {
		figs = "," + figs
	}
	return fmt.Sprintf(`{"proc":%q,"gen":0,"attempt":"a0","kind":%q%s}`, proc, kind, figs)
}

func wantRejected(t *testing.T, name string, data []byte, line int, inv string) *Rejection {
	t.Helper()
	rep := judgeBytes(t, name, data, Options{})
	r := rep.Rejection
	if rep.Verdict != Rejected || r == nil || r.Line != line || r.Invariant != inv {
		t.Fatalf("%s: want rejected at line %d naming %q, got %s %+v", name, line, inv, rep.Verdict, r)
	}
	return r
}

// A late fact about a finished attempt is judged the same whether its
// blocks were evicted (Removed logged, the attempt done with) or are still
// cached: attempt ids are never reused.
func TestLateFactAfterEndJudgedAlike(t *testing.T) {
	lines := oneAttempt(t)
	// The late cancel the destination takes after it finished, with the
	// second release and outcome it leads to (a double finalize).
	lateCancel := []string{fact("decode-0", "cancelled", ""), fact("decode-0", "decode_released", `"blocks":128`), fact("decode-0", "outcome_reported", `"outcome":"ok"`)}
	// The id used again for a new request.
	reuse := []string{`{"proc":"router","gen":0,"attempt":"a0","kind":"routed","stage":"prefill","to":"prefill-0","tokens":2048,"prompt_tokens":2048}`,
		fact("prefill-0", "request_accepted", "")}
	for _, c := range []struct {
		name string
		more []string
		at   int // the blamed line among the appended ones, 1-based
		inv  string
	}{
		{"late cancel", lateCancel, 2, model.NameExactlyOnceRelease},
		{"late release", lateCancel[1:], 1, model.NameExactlyOnceRelease},
		{"reused id", reuse, 1, model.NameAttemptIsolation},
		// A cancel alone: the finished side says it took a fact delivered
		// after its end, a stale fact that moved its machine (check names
		// that step AttemptIsolation too).
		{"late cancel alone", lateCancel[:1], 1, model.NameAttemptIsolation},
		// A deadline acted on alone: no fact reached the side, and
		// nothing it led to says what broke.
		{"late deadline alone", []string{fact("decode-0", "deadline_expired", `"timer":"pull-deadline"`)}, 1, ""},
	} {
		evicted := edit(lines, nil, c.more...)
		cached := edit(lines, []int{20, 24}, c.more...)
		wantRejected(t, c.name+"/evicted", evicted, 24+c.at, c.inv)
		wantRejected(t, c.name+"/cached", cached, 22+c.at, c.inv)
		// The same report when the attempt's record is read back from
		// the file of finished attempts' records (gone.go).
		for _, data := range [][]byte{evicted, cached} {
			kept := judgeBytes(t, "log", data, Options{})
			func() {
				defer func(n int) { goneRecent = n }(goneRecent)
				goneRecent = 0
				if spilled := judgeBytes(t, "log", data, Options{}); !cmp.Equal(kept, spilled) {
					t.Errorf("%s: the records' file changed the report:\n%s", c.name, cmp.Diff(kept, spilled))
				}
			}()
		}
	}
}

// An attempt no fact sizes is input the judge did not get: exit 2 (an
// input error naming the attempt's first line), never a rejection of a
// valid fact.
func TestMissingPromptTokensIsBadInput(t *testing.T) {
	lines := oneAttempt(t)
	lines[1] = strings.Replace(lines[1], `"prompt_tokens":2048,`, "", 1)
	_, err := Judge([]Input{{Name: "log", R: bytes.NewReader(edit(lines, nil))}}, Options{})
	if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "log:2:") || !strings.Contains(err.Error(), "prompt_tokens") {
		t.Fatalf("want an input error at log:2 about prompt_tokens, got %v", err)
	}
}

// A Removed for blocks the index does not advertise (never stored, or
// already removed) breaks IndexMatchesCache, whether the attempt is still
// open or done with.
func TestRemovedNeverStored(t *testing.T) {
	lines := oneAttempt(t)
	again := fact("prefill-0", "removed", `"blocks":128`)
	open := append(append(append([]string{}, lines[:20]...), again+"\n"), lines[20:]...)
	wantRejected(t, "open", edit(open, nil), 21, model.NameIndexMatchesCache)
	wantRejected(t, "done", edit(lines, nil, again), 25, model.NameIndexMatchesCache)
	// The destination failed before activation: it stored nothing.
	failed := edit(lines[:12], nil,
		fact("decode-0", "deadline_expired", `"timer":"pull-deadline"`),
		fact("decode-0", "reservation_released", `"pages":128`),
		fact("decode-0", "outcome_reported", `"outcome":"failed"`),
		fact("decode-0", "removed", `"blocks":128`))
	wantRejected(t, "never stored", failed, 16, model.NameIndexMatchesCache)
}

// A transfer that hangs (never ends) while both sides give up and return
// everything ends the logs finished, as docs/conform.md defines the end:
// both outcomes reported, nothing held.
func TestHungTransferEndsExplained(t *testing.T) {
	lines := oneAttempt(t)
	data := edit(lines[:12], nil,
		fact("decode-0", "deadline_expired", `"timer":"pull-deadline"`),
		fact("decode-0", "reservation_released", `"pages":128`),
		fact("decode-0", "outcome_reported", `"outcome":"failed"`),
		fact("prefill-0", "cancelled", ""),
		fact("prefill-0", "source_released", `"blocks":128`),
		fact("prefill-0", "outcome_reported", `"outcome":"failed"`))
	if rep := judgeBytes(t, "hung", data, Options{}); rep.Verdict != Explained {
		t.Fatalf("want explained, got %s %+v", rep.Verdict, rep.Rejection)
	}
}

// A rejection names the fact that broke and the condition that fails.
func TestRejectionNamesTheCause(t *testing.T) {
	lines := oneAttempt(t)
	// The source's Stored of its computed blocks (line 7) missing: the
	// source's next fact is blamed for what it skipped.
	r := wantRejected(t, "missing stored", edit(lines, []int{7}), 16, "")
	if !strings.Contains(r.Detail, "owes stored") {
		t.Errorf("missing stored: %s", r.Detail)
	}
	// A pin of 100 blocks where the prompt pins 128: its figure.
	pin := append([]string{}, lines...)
	pin[5] = strings.Replace(pin[5], `"blocks":128`, `"blocks":100`, 1)
	r = wantRejected(t, "wrong pin", edit(pin, nil), 6, "")
	if !strings.Contains(r.Detail, "pinned blocks=100") || !strings.Contains(r.Detail, "blocks=128") || strings.Contains(r.Detail, "compute") {
		t.Errorf("wrong pin: %s", r.Detail)
	}
	// Stored logged after receive_completed and before activated: before
	// activation, not before receive completion.
	st := append([]string{}, lines...)
	st[14], st[15] = st[15], st[14]
	r = wantRejected(t, "stored before activated", edit(st, nil), 15, model.NameNoStoredBeforeActivation)
	if strings.Contains(r.Detail, "receive completion") || !strings.Contains(r.Detail, "activat") {
		t.Errorf("stored before activated: %s", r.Detail)
	}
}

// Memory follows the attempts in flight, not the log: attempts whose
// blocks stay cached (no Removed ever logged) are done with once they
// finish, and only a small record of each is kept.
func TestFinishedAttemptsAreNotKeptOpen(t *testing.T) {
	lines := oneAttempt(t)
	var b bytes.Buffer
	b.WriteString(lines[0])
	const n = 200
	for i := range n {
		for k, l := range lines[1:] {
			if k+2 == 20 || k+2 == 24 {
				continue // the Removed lines: the blocks stay cached
			}
			b.WriteString(strings.Replace(l, `"attempt":"a0"`, fmt.Sprintf(`"attempt":"a%d"`, i), 1))
		}
	}
	rep := judgeBytes(t, "cached", b.Bytes(), Options{})
	if rep.Verdict != Explained || rep.Attempts != n {
		t.Fatalf("want %d attempts explained, got %s %d %+v", n, rep.Verdict, rep.Attempts, rep.Rejection)
	}
	if rep.PeakOpen != 1 {
		t.Errorf("%d attempts open at once, one after the other in the log: want 1", rep.PeakOpen)
	}
}

// The search's visited set tells nodes apart by their identity, not by a
// 64-bit hash alone: two different states whose hashes collide are both
// searched (a collision would otherwise drop an explanation silently).
func TestVisitedSetConfirmsByKey(t *testing.T) {
	r, err := obslog.NewReader(bytes.NewReader(edit(oneAttempt(t), nil)), "log")
	if err != nil {
		t.Fatal(err)
	}
	j, err := newJudge(r.Header(), "log", Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := &attempt{id: "a0", p: 1, d: 2}
	a.wcfg = j.cfg.AttemptWorld(2048, 0)
	if err := a.wcfg.Prepare(); err != nil {
		t.Fatal(err)
	}
	seen := reflect.ValueOf(&a.seen).Elem()
	seen.Set(reflect.MakeMap(seen.Type()))
	root := j.root(a)
	other := j.child(root)
	st := *root.st
	st.W.H[0].Prefill = 0 // routed: another state
	other.st = &st
	other.stKey = root.stKey // whose hash collides with the root's
	work := j.push(a, root, nil)
	work = j.push(a, other, work)
	if len(work) != 2 {
		t.Fatalf("two different states with one hash: %d searched, want 2", len(work))
	}
	// The same state again is not searched twice.
	again := j.child(root)
	if work = j.push(a, again, work); len(work) != 2 {
		t.Fatalf("the root's state again: %d searched, want 2", len(work))
	}
}

// A log of milestones costs the judge about what the complete log of the
// same run does (docs/conform.md gives the figures): between two
// milestones the judge searches unlogged steps, and attempts of one size
// go through the same states, so the search for a fact from a state is
// done once for them all, not once per attempt. Work is counted in the
// rows of the tables the judge fires (not in time, which depends on the
// machine's load): ten times the attempts of one size fire at most one and
// a half times the rows, under both policies, complete or milestones.
func TestSearchDoneOncePerSize(t *testing.T) {
	for _, pol := range []string{"source-first", "destination-first"} {
		fired := func(data []byte) float64 {
			r, err := obslog.NewReader(bytes.NewReader(data), pol)
			if err != nil {
				t.Fatal(err)
			}
			j, err := newJudge(r.Header(), pol, Options{})
			if err != nil {
				t.Fatal(err)
			}
			j.rep.Files = []string{pol}
			for j.rep.Rejection == nil {
				f, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if err := j.fact(&f); err != nil {
					t.Fatal(err)
				}
			}
			if j.rep.Rejection != nil {
				t.Fatalf("%s: %+v", pol, j.rep.Rejection)
			}
			var n uint64
			for _, rows := range j.cov.Rows {
				for _, k := range rows {
					n += k
				}
			}
			return float64(n)
		}
		for _, rec := range []struct {
			name string
			set  obslog.KindSet
		}{{"complete", obslog.All}, {"milestones", obslog.Of(obslog.Milestones()...) | obslog.Of(obslog.WorkerRestarted)}} {
			few, many := fired(oneSizeLogOf(t, pol, rec.set, 30)), fired(oneSizeLogOf(t, pol, rec.set, 300))
			t.Logf("%s %s: %.0f rows fired for 30 attempts, %.0f for 300", pol, rec.name, few, many)
			if many > 1.5*few {
				t.Errorf("%s %s: 300 attempts of one size fire %.1f times the rows 30 do, want at most 1.5", pol, rec.name, many/few)
			}
		}
	}
}
