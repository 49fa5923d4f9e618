package conform

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/sim"
	"github.com/handoffcheck/handoffcheck/model"
)

// oneSizeLog is the simulator's log of n requests of one size (1,024
// prompt tokens) under a policy, complete or milestones only: every
// attempt goes through the same searches, so the far memo answers most.
func oneSizeLog(t *testing.T, pol string, milestones bool, n int) []byte {
	t.Helper()
	records := obslog.All
	if milestones {
		records = obslog.Of(obslog.Milestones()...) | obslog.Of(obslog.WorkerRestarted)
	}
	return oneSizeLogOf(t, pol, records, n)
}

// oneSizeLogOf is oneSizeLog's log with the kinds records logs.
func oneSizeLogOf(t *testing.T, pol string, records obslog.KindSet, n int) []byte {
	t.Helper()
	cfg := cluster.DefaultConfig()
	if err := cfg.SetPolicy(pol); err != nil {
		t.Fatal(err)
	}
	if pol == "destination-first" {
		cfg.Engine = model.SGLang
	}
	var reqs []cluster.Request
	for i := range n {
		reqs = append(reqs, cluster.Request{Index: i, ArrivalUS: int64(i) * 20_000, PromptTokens: 1024, OutputTokens: 40, CancelUS: -1})
	}
	var buf bytes.Buffer
	w, err := obslog.NewWriter(&buf, cfg.LogHeader(records))
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), cfg, &sim.SliceSource{Reqs: reqs}, sim.Options{Log: w})
	if err != nil || res.Violation != nil {
		t.Fatal(err, res.Violation)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// farLogs is the logs the far memo's tests judge: the simulator's of one
// size, both policies, complete and milestones only, and the example
// logs.
func farLogs(t *testing.T) map[string][]byte {
	logs := map[string][]byte{}
	for _, pol := range []string{"source-first", "destination-first"} {
		for _, ms := range []bool{false, true} {
			logs[fmt.Sprintf("sim-%s-milestones-%v", pol, ms)] = oneSizeLog(t, pol, ms, 40)
		}
	}
	for _, dir := range []string{"valid", "invalid", "adoption"} {
		paths, err := filepath.Glob(filepath.Join("..", "..", "testdata", "logs", dir, "*.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			logs[dir+"/"+filepath.Base(p)] = data
		}
	}
	return logs
}

// The far memo only saves time: each search it answers is the search's
// own answer (searched again and compared, farVerify), and the reports
// are the same with it, with one that keeps four searches (so it forgets
// all the time) and without it, under every option the goldens use.
func TestFar_AsSearched(t *testing.T) {
	defer func(c int, v bool, p int) { farCap, farVerify, memoProbe = c, v, p }(farCap, farVerify, memoProbe)
	// The memo of the searches of one world, which would answer most
	// searches first, is skipped from the second search on.
	memoProbe = 1
	farVerified.hits, farVerified.bad, farVerified.leads = 0, 0, 0
	for name, data := range farLogs(t) {
		for _, run := range goldenRuns {
			judge := func(capacity int, verify bool) (*Report, error) {
				farCap, farVerify = capacity, verify
				return Judge([]Input{{Name: name, R: bytes.NewReader(data)}}, run.opt)
			}
			without, err0 := judge(0, false)
			for _, capacity := range []int{1 << 14, 4} {
				with, err1 := judge(capacity, false)
				if fmt.Sprint(err0) != fmt.Sprint(err1) || !cmp.Equal(without, with) {
					t.Errorf("%s %s, a memo of %d: the report changed:\n%s", name, run.name, capacity, cmp.Diff(without, with))
				}
				bad := farVerified.bad
				judge(capacity, true)
				if farVerified.bad != bad {
					t.Errorf("%s %s, a memo of %d: %d searches answered otherwise than searched", name, run.name, capacity, farVerified.bad-bad)
				}
			}
		}
	}
	if farVerified.hits == 0 {
		t.Fatal("the memo answered no search")
	}
	if farVerified.leads == 0 {
		t.Fatal("the memo answered no search before the moves of the node it starts from were tried")
	}
	t.Logf("%d searches answered by the memo (%d with the node's own moves), each searched again alike", farVerified.hits, farVerified.leads)
}

// With a clock error the far memo answers no search: the search then
// reads the facts' stamps and what a step left owed to its own process,
// which the key leaves out. The same logs, judged without one, have
// searches the memo answers.
func TestFar_NoneWithAClockError(t *testing.T) {
	defer func(c int, v bool, p int) { farCap, farVerify, memoProbe = c, v, p }(farCap, farVerify, memoProbe)
	farCap, farVerify, memoProbe = 1<<14, true, 1
	data := oneSizeLog(t, "destination-first", true, 40)
	hits := func(opt Options) int {
		before := farVerified.hits
		if _, err := Judge([]Input{{Name: "one-size.jsonl", R: bytes.NewReader(data)}}, opt); err != nil {
			t.Fatal(err)
		}
		return farVerified.hits - before
	}
	if n := hits(Options{}); n == 0 {
		t.Fatal("without a clock error the memo answered no search: the test shows nothing")
	}
	if n := hits(Options{ClockError: time.Millisecond, Clocked: true}); n != 0 {
		t.Fatalf("with a clock error the memo answered %d searches", n)
	}
}

// Each part of the far memo's key the logs below can tell apart is
// needed: left out, some search is answered otherwise than it would be
// searched. The logs are the simulator's of one size with one late
// attempt changed (a figure, a kind, a process, a line dropped or two
// swapped, the records of its processes): its searches share all but
// what changed with the searches of the attempts before it. With the
// whole key none of these logs has a search answered otherwise. The
// other parts (the size, who logs the fact, what the processes record,
// whether the state is known clear, a refused step noted for the fact)
// are in the key because the search reads them; these logs do not tell
// them apart: the size shows in the state's and the facts' block counts,
// a fact from a process that is not the attempt's or does not log its
// kind is refused before any search, a state is judged alike clear or
// not (checkStep's judgement is CheckState's own), and a fact is noted
// before its search only when an attempt sized late is searched again,
// which the memo never answers (farApplies).
func TestFar_KeyComplete(t *testing.T) {
	defer func(o int, v bool, p int) { farOmit, farVerify, memoProbe = o, v, p }(farOmit, farVerify, memoProbe)
	farVerify, memoProbe = true, 1
	var mutants [][]byte
	for _, pol := range []string{"source-first", "destination-first"} {
		for _, ms := range []bool{false, true} {
			mutants = append(mutants, mutate(t, oneSizeLog(t, pol, ms, 16), "r12")...)
		}
	}
	judge := func(data []byte) int {
		bad := farVerified.bad
		Judge([]Input{{Name: "mutant.jsonl", R: bytes.NewReader(data)}}, Options{})
		return farVerified.bad - bad
	}
	farOmit = omitNone
	for i, m := range mutants {
		if n := judge(m); n != 0 {
			t.Errorf("mutant %d, the whole key: %d searches answered otherwise than searched", i, n)
		}
	}
	for part, name := range map[int]string{omitState: "the state", omitOwed: "what is owed", omitFigures: "the fact's figures", omitKind: "the fact's kind"} {
		farOmit = part
		shown := false
		for i, m := range mutants {
			if judge(m) > 0 {
				shown = true
				t.Logf("%s shown by mutant %d", name, i)
				break
			}
		}
		if !shown {
			t.Errorf("without %s in the key, every search is answered as searched: the test does not show the part is needed", name)
		}
	}
}

// mutate is the log data changed in the attempt named id, one change a
// log: each figure of each of its facts one more, each fact logged as
// the kind of each of its other facts, by another process of each role,
// dropped, or swapped with its attempt's next fact; and each of its
// processes recording every kind.
func mutate(t *testing.T, data []byte, id string) [][]byte {
	lines := bytes.SplitAfter(data, []byte("\n"))
	var header map[string]any
	if err := json.Unmarshal(lines[0], &header); err != nil {
		t.Fatal(err)
	}
	procs := header["processes"].([]any)
	byRole := map[string]string{}
	for _, p := range procs {
		pm := p.(map[string]any)
		byRole[pm["role"].(string)] = pm["name"].(string)
	}
	var at []int
	facts := map[int]map[string]any{}
	for i, l := range lines[1:] {
		var f map[string]any
		if len(bytes.TrimSpace(l)) == 0 || json.Unmarshal(l, &f) != nil || f["attempt"] != id {
			continue
		}
		at = append(at, i+1)
		facts[i+1] = f
	}
	if len(at) == 0 {
		t.Fatalf("no attempt %s in the log", id)
	}
	with := func(i int, line []byte) []byte {
		out := bytes.Join(lines[:i], nil)
		out = append(out, line...)
		return append(out, bytes.Join(lines[i+1:], nil)...)
	}
	marshal := func(f map[string]any) []byte {
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		return append(b, '\n')
	}
	var out [][]byte
	for k, i := range at {
		f := facts[i]
		for _, g := range []string{"tokens", "prompt_tokens", "blocks", "pages", "slot", "headroom", "prefix_hit_tokens"} {
			if v, ok := f[g].(float64); ok {
				c := clone(f)
				c[g] = v + 1
				out = append(out, with(i, marshal(c)))
			}
		}
		if k+1 < len(at) && facts[at[k+1]]["kind"] != f["kind"] {
			c := clone(f)
			c["kind"] = facts[at[k+1]]["kind"]
			out = append(out, with(i, marshal(c)))
		}
		for _, name := range byRole {
			if name != f["proc"] {
				c := clone(f)
				c["proc"] = name
				out = append(out, with(i, marshal(c)))
			}
		}
		out = append(out, with(i, nil))
		if k+1 < len(at) {
			j := at[k+1]
			sw := bytes.Join(lines[:i], nil)
			sw = append(sw, lines[j]...)
			sw = append(sw, bytes.Join(lines[i+1:j], nil)...)
			sw = append(sw, lines[i]...)
			out = append(out, append(sw, bytes.Join(lines[j+1:], nil)...))
		}
	}
	used := map[any]bool{}
	for _, f := range facts {
		used[f["proc"]] = true
		used[f["to"]] = true
	}
	for k, p := range procs {
		pm := p.(map[string]any)
		if !used[pm["name"]] {
			continue
		}
		h := clone(header)
		ps := append([]any(nil), procs...)
		c := clone(pm)
		c["records"] = "all"
		ps[k] = c
		h["processes"] = ps
		out = append(out, with(0, marshal(h)))
	}
	return out
}

func clone(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
