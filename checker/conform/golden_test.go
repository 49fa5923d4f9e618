package conform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const goldenDir = "../../testdata/goldens/conform"

// goldenRuns are the options every example log is judged with for the
// goldens: the defaults, and the bounds a report changes with.
var goldenRuns = []struct {
	name string
	opt  Options
}{
	{"default", Options{}},
	{"bound-1", Options{Bound: 1}},
	{"no-faults", Options{MaxFaults: -1}},
	{"open", Options{Open: true}},
}

// TestJudge_Goldens holds the judge's whole report (text and JSON) on
// every example log, valid and invalid, under each of goldenRuns, and its
// error on the valid logs cut short at a few places, to the files in
// testdata/goldens/conform: a change in how the judge works that changes
// no verdict leaves them as they are (-rewrite writes them).
func TestJudge_Goldens(t *testing.T) {
	var logs []string
	for _, dir := range []string{"valid", "invalid"} {
		m, err := filepath.Glob(filepath.Join(logsDir, dir, "*.jsonl"))
		if err != nil || len(m) == 0 {
			t.Fatalf("%s: %v (%d logs)", dir, err, len(m))
		}
		logs = append(logs, m...)
	}
	for _, path := range logs {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(logsDir, path)
		var b bytes.Buffer
		for _, run := range goldenRuns {
			fmt.Fprintf(&b, "== %s\n", run.name)
			rep, err := Judge([]Input{{Name: rel, R: bytes.NewReader(data)}}, run.opt)
			if err != nil {
				fmt.Fprintf(&b, "error: %v\n", err)
				continue
			}
			rep.WriteText(&b)
			js, err := json.MarshalIndent(rep, "", " ")
			if err != nil {
				t.Fatal(err)
			}
			b.Write(js)
			b.WriteByte('\n')
		}
		if strings.HasPrefix(rel, "valid") {
			// Cut short: mid-line, and after a whole line with one
			// byte of the next.
			for _, at := range []int{len(data) / 3, len(data) / 2, len(data) - 20} {
				cut := data[:at]
				if k := bytes.LastIndexByte(cut[:at-1], '\n'); k >= 0 && at%2 == 0 {
					cut = data[:k+2]
				}
				_, err := Judge([]Input{{Name: rel, R: bytes.NewReader(cut)}}, Options{})
				fmt.Fprintf(&b, "== cut at %d bytes\nerror: %v\n", len(cut), err)
			}
			// A line broken: its first colon, digit, quote or brace
			// of the tenth line's, changed.
			lines := bytes.SplitAfter(data, []byte("\n"))
			for _, ch := range []string{":", "0123456789", "\"", "{", "}"} {
				bad := bytes.Clone(lines[9])
				k := bytes.IndexAny(bad, ch)
				if ch == "}" {
					k = bytes.LastIndexAny(bad, ch)
				}
				bad[k] = 'x'
				in := bytes.Join([][]byte{bytes.Join(lines[:9], nil), bad, bytes.Join(lines[10:], nil)}, nil)
				_, err := Judge([]Input{{Name: rel, R: bytes.NewReader(in)}}, Options{})
				fmt.Fprintf(&b, "== line 10's first of %q broken\nerror: %v\n", ch, err)
			}
		}
		// The memo only saves time: skipped from the second search on,
		// every report is the same.
		func() {
			defer func(p int) { memoProbe = p }(memoProbe)
			memoProbe = 1
			for _, run := range goldenRuns {
				skipped, err1 := Judge([]Input{{Name: rel, R: bytes.NewReader(data)}}, run.opt)
				memoProbe = 1 << 30
				kept, err2 := Judge([]Input{{Name: rel, R: bytes.NewReader(data)}}, run.opt)
				memoProbe = 1
				if fmt.Sprint(err1) != fmt.Sprint(err2) || !cmp.Equal(skipped, kept) {
					t.Errorf("%s %s: the memo changed the report:\n%s", rel, run.name, cmp.Diff(kept, skipped))
				}
			}
		}()
		// The records of finished attempts kept in memory only save
		// time: with none, every late fact is judged against a record
		// read back from the file, and every report is the same.
		func() {
			defer func(n int) { goneRecent = n }(goneRecent)
			for _, run := range goldenRuns {
				goneRecent = 0
				spilled, err1 := Judge([]Input{{Name: rel, R: bytes.NewReader(data)}}, run.opt)
				goneRecent = 1 << 20
				kept, err2 := Judge([]Input{{Name: rel, R: bytes.NewReader(data)}}, run.opt)
				if fmt.Sprint(err1) != fmt.Sprint(err2) || !cmp.Equal(spilled, kept) {
					t.Errorf("%s %s: the records' file changed the report:\n%s", rel, run.name, cmp.Diff(kept, spilled))
				}
			}
		}()
		name := strings.ReplaceAll(strings.TrimSuffix(rel, ".jsonl"), string(filepath.Separator), "-") + ".txt"
		golden := filepath.Join(goldenDir, name)
		if *rewrite {
			if err := os.MkdirAll(goldenDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (go test ./checker/conform -run TestJudge_Goldens -rewrite writes it)", err)
		}
		if d := cmp.Diff(string(want), b.String()); d != "" {
			t.Errorf("%s: the report changed (-golden +now):\n%s", rel, d)
		}
	}
}
