package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A module of two packages: a holds the code changes are made in; b's
// test runs a's F only in a process it starts from its own binary, as
// live's tests run the workers.
var coverModule = map[string]string{
	"go.mod": "module example.com/m\n\ngo 1.21\n",
	"a/a.go": `package a

func F(x int) int {
	if x > 0 {
		return x
	}
	return -x
}

func G() int { return 1 }

func H() int { return 2 }
`,
	"a/a_test.go": `package a

import "testing"

func TestF(t *testing.T) {
	if F(1) != 1 {
		t.Fatal("F(1)")
	}
}

func TestG(t *testing.T) {
	if G() != 1 {
		t.Fatal("G")
	}
}

func TestLong(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	if G()+H() != 3 {
		t.Fatal("G+H")
	}
}
`,
	"b/b_test.go": `package b

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"example.com/m/a"
)

func TestMain(m *testing.M) {
	if os.Getenv("CODEMUT_CHILD") == "1" {
		fmt.Println(a.F(-2))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestChild(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "CODEMUT_CHILD=1")
	out, err := cmd.Output()
	if err != nil || string(out) != "2\n" {
		t.Fatalf("child: %q %v", out, err)
	}
}
`,
}

// writeCoverModule writes coverModule into a temporary directory and
// makes it the working directory.
func writeCoverModule(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for name, src := range coverModule {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(root)
	return root
}

func siteIn(t *testing.T, root, fn, op string) *site {
	t.Helper()
	ss, err := fileSites(root, "a/a.go")
	if err != nil {
		t.Fatal(err)
	}
	for i := range ss {
		if ss[i].Func == fn && ss[i].Op == op {
			return &ss[i]
		}
	}
	t.Fatalf("no %s site in %s", op, fn)
	return nil
}

// Each change runs only the tests that ran its function when calibrated:
// F's in a's TestF and in b's TestChild, whose F ran in a child process;
// G's in TestG with -short and TestLong without; H's only in TestLong,
// which -short skips. A change no test runs is only built.
func TestCalibrate_SelectsTheTestsThatRunTheFunction(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a module's tests with coverage")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	root := writeCoverModule(t)
	ps, err := loadPackages(root)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "init", "-q", root).CombinedOutput(); err != nil {
		t.Skipf("git init: %v %s", err, out)
	}
	o := &options{root: root, dirs: []string{"a"}, jobs: 2, calibration: filepath.Join(t.TempDir(), "calibration.json")}
	if err := ps.calibrate(t.Context(), o, t.TempDir(), io.Discard); err != nil {
		t.Fatal(err)
	}
	// The next run on the same tree takes the calibration kept; a tree
	// changed anywhere calibrates again.
	for _, c := range []struct {
		edit string
		kept bool
	}{{"", true}, {"a/a_test.go", false}} {
		if c.edit != "" {
			if err := os.WriteFile(filepath.Join(root, c.edit), []byte(coverModule[c.edit]+"\n// changed\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		again, err := loadPackages(root)
		if err != nil {
			t.Fatal(err)
		}
		var log strings.Builder
		if err := again.calibrate(t.Context(), o, t.TempDir(), &log); err != nil {
			t.Fatal(err)
		}
		if kept := strings.Contains(log.String(), "not run again"); kept != c.kept {
			t.Errorf("after changing %q: calibration kept %v, want %v:\n%s", c.edit, kept, c.kept, log.String())
		}
		ps = again
	}
	plan := func(s *site) []string {
		var out []string
		for _, st := range ps.plan("example.com/m/a", s) {
			mode := "full"
			if st.short {
				mode = "short"
			}
			out = append(out, strings.TrimPrefix(st.p.Path, "example.com/m/")+" "+mode+" "+strings.Join(st.tests, ","))
		}
		return out
	}
	for _, c := range []struct {
		fn, op string
		want   []string
	}{
		{"F", opNegateIf, []string{"a short TestF", "b short TestChild"}},
		{"G", opIntLiteral, []string{"a short TestG", "a full TestLong"}},
		{"H", opIntLiteral, []string{"a full TestLong"}},
	} {
		if got := plan(siteIn(t, root, c.fn, c.op)); !slices.Equal(got, c.want) {
			t.Errorf("%s %s: plan %q, want %q", c.fn, c.op, got, c.want)
		}
	}

	// F's condition inverted: TestF, the first test run, catches it.
	r := ps.try(t.Context(), root, t.TempDir(), siteIn(t, root, "F", opNegateIf))
	if r.Status != "killed" || r.Package != "example.com/m/a" || !slices.Equal(r.Tests, []string{"TestF"}) || r.Ran != 1 {
		t.Errorf("F's condition inverted: %s by %s %q after %d tests, want killed by a's TestF after 1", r.Status, r.Package, r.Tests, r.Ran)
	}
	if r.Seconds <= 0 {
		t.Errorf("the change took %v s: the time it took is not kept", r.Seconds)
	}
}

// A test runs a function when a block it ran starts inside the function's
// declaration: from its first byte, up to but not including its end.
func TestFuncsRun_OnlyBlocksInsideTheSpan(t *testing.T) {
	fn := span{pos{10, 1}, pos{20, 2}}
	spans := map[string][]span{"a/a.go": {fn}}
	for _, c := range []struct {
		at   pos
		want bool
	}{
		{pos{9, 40}, false}, {pos{10, 1}, true}, {pos{15, 3}, true},
		{pos{20, 1}, true}, {pos{20, 2}, false}, {pos{21, 1}, false},
	} {
		blocks := map[string][]pos{"a/a.go": {{1, 1}, c.at, {30, 1}}, "a/b.go": {{12, 1}}}
		sortBlocks(blocks)
		if got := funcsRun(blocks, spans)[funcID("a/a.go", fn)]; got != c.want {
			t.Errorf("a block at %v: runs %v, want %v", c.at, got, c.want)
		}
		if len(funcsRun(blocks, spans)) > 1 {
			t.Errorf("a block in another file counted: %v", funcsRun(blocks, spans))
		}
	}
}

// A profile's blocks that ran are kept per module-relative file; blocks
// that did not run and files of other modules are left out; a line that
// is not a block is an error naming its line.
func TestReadProfile(t *testing.T) {
	blocks := map[string][]pos{}
	in := "mode: set\nexample.com/m/a/a.go:3.19,4.11 1 1\nexample.com/m/a/a.go:7.2,7.11 1 0\nother.org/x/x.go:1.1,2.2 1 1\nexample.com/m/a/a.go:4.11,6.3 1 1\n"
	if err := readProfile(strings.NewReader(in), "example.com/m", blocks); err != nil {
		t.Fatal(err)
	}
	sortBlocks(blocks)
	if got := blocks["a/a.go"]; !slices.Equal(got, []pos{{3, 19}, {4, 11}}) || len(blocks) != 1 {
		t.Errorf("blocks %v", blocks)
	}
	err := readProfile(strings.NewReader("mode: set\nexample.com/m/a/a.go:3.19 1\n"), "example.com/m", blocks)
	if err == nil || !strings.Contains(err.Error(), "line 2:") {
		t.Errorf("a cut line: %v", err)
	}
}

// cancelOn cancels a context when a line starting with prefix is written.
type cancelOn struct {
	prefix string
	cancel context.CancelFunc
	buf    strings.Builder
}

func (c *cancelOn) Write(b []byte) (int, error) {
	c.buf.Write(b)
	if strings.Contains(c.buf.String(), "\n"+c.prefix) {
		c.cancel()
	}
	return len(b), nil
}

// Ctrl-C after the first change is judged: the run stops, reports that
// change alone, keeps it in the -json file, and says it was interrupted.
func TestMutate_InterruptedReportsWhatItJudged(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a module's tests with coverage")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	root := writeCoverModule(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stderr := &cancelOn{prefix: "[1/", cancel: cancel}
	var stdout strings.Builder
	jsonOut := filepath.Join(t.TempDir(), "run.json")
	o := &options{root: root, dirs: []string{"a"}, jobs: 1, all: true, jsonOut: jsonOut, equivalents: "none.txt"}
	err := mutate(ctx, o, &stdout, stderr)
	if !errors.Is(err, errInterrupted) {
		t.Fatalf("mutate: %v, want interrupted\n%s", err, stderr.buf.String())
	}
	if !strings.Contains(stderr.buf.String(), "interrupted after 1 of ") {
		t.Errorf("no word of the interruption:\n%s", stderr.buf.String())
	}
	if !strings.Contains(stdout.String(), "codemut: all 1 of ") {
		t.Errorf("the report is not of the one change judged:\n%s", stdout.String())
	}
	b, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	var rs []result
	if err := json.Unmarshal(b, &rs); err != nil || len(rs) != 1 || rs[0].Status == "" {
		t.Fatalf("the -json file holds %d results (%v), want the one judged:\n%s", len(rs), err, b)
	}

	// Resumed, the run takes the change judged and tries the others.
	o.resume = jsonOut
	var log strings.Builder
	stdout.Reset()
	if err := mutate(t.Context(), o, &stdout, &log); err != nil {
		t.Fatalf("resumed: %v\n%s", err, log.String())
	}
	sites, err := fileSites(root, "a/a.go")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(log.String(), "\n["); !strings.Contains(log.String(), "1 of the ") || n != len(sites)-1 {
		t.Errorf("resumed: %d changes tried, want the %d not judged before:\n%s", n, len(sites)-1, log.String())
	}
	var all []result
	if b, err = os.ReadFile(jsonOut); err == nil {
		err = json.Unmarshal(b, &all)
	}
	if err != nil || len(all) != len(sites) || !slices.ContainsFunc(all, func(r result) bool {
		return r.Key == rs[0].Key && r.Status == rs[0].Status && r.Seconds == rs[0].Seconds
	}) {
		t.Errorf("resumed: the -json file (%v) does not hold the earlier change as it was beside the new ones:\n%s", err, b)
	}
}
