package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A change can only alter what a test sees if the test runs the changed
// function. So before the first change each test runs once alone, built
// with coverage of the changed packages, and records which functions it
// ran; a change then runs only the tests that ran its function. Most
// changes sit in functions a handful of tests reach, and a change in a
// function every test reaches is caught by the first test that fails
// (-failfast): either way far fewer tests run than the whole suite.
//
// The selection misses a test only when the changed code ran where the
// coverage cannot see it: in a process the test started from a binary
// built without coverage. Processes started from the test binary itself
// (live's workers, the command's subprocesses) write their coverage to
// GOCOVERDIR, which each calibration run sets. A missed test can only
// turn a caught change into a survivor, never the other way, so the score
// errs low.

// pos is a line and a byte column, 1-based, as go/token and coverage
// profiles count them.
type pos struct{ line, col int }

func (a pos) before(b pos) bool { return a.line < b.line || a.line == b.line && a.col < b.col }

// span is a function declaration's extent, from its first byte to just
// after its last.
type span struct{ from, to pos }

// testRun is one test's calibration run: how long it took and the
// functions of the changed packages it ran, each named by funcID.
type testRun struct {
	Name  string          `json:"name"`
	D     time.Duration   `json:"ns"`
	Funcs map[string]bool `json:"funcs"`
}

// funcID names a function declaration by its file and first line.
func funcID(file string, sp span) string { return fmt.Sprintf("%s:%d", file, sp.from.line) }

// ranAny reports whether any of the sorted block starts lies in sp.
func ranAny(bs []pos, sp span) bool {
	i := sort.Search(len(bs), func(i int) bool { return !bs[i].before(sp.from) })
	return i < len(bs) && bs[i].before(sp.to)
}

// funcsRun names the functions of spans (per file) with a block in blocks.
func funcsRun(blocks map[string][]pos, spans map[string][]span) map[string]bool {
	out := map[string]bool{}
	for file, bs := range blocks {
		for _, sp := range spans[file] {
			if ranAny(bs, sp) {
				out[funcID(file, sp)] = true
			}
		}
	}
	return out
}

// funcSpans lists the function declarations of the given files.
func funcSpans(root string, files []string) (map[string][]span, error) {
	out := map[string][]span{}
	for _, rel := range files {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, filepath.Join(root, filepath.FromSlash(rel)), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				from, to := fset.Position(fd.Pos()), fset.Position(fd.End())
				out[rel] = append(out[rel], span{pos{from.Line, from.Column}, pos{to.Line, to.Column}})
			}
		}
	}
	return out, nil
}

// selected lists the runs that ran the site's function, and how long they
// took together.
func selected(runs []testRun, s *site) (names []string, d time.Duration) {
	id := funcID(s.File, s.fn)
	for i := range runs {
		if runs[i].Funcs[id] {
			names = append(names, runs[i].Name)
			d += runs[i].D
		}
	}
	return names, d
}

// runPattern is the -run pattern of exactly the named top-level tests.
func runPattern(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = regexp.QuoteMeta(n)
	}
	return "^(" + strings.Join(q, "|") + ")$"
}

// readProfile adds the blocks that ran in a coverage profile (the text
// format of -coverprofile and of go tool covdata textfmt) to blocks, keyed
// by the file's path relative to the module. Blocks of files outside the
// module are left out.
func readProfile(r io.Reader, module string, blocks map[string][]pos) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if n == 1 && strings.HasPrefix(line, "mode:") || line == "" {
			continue
		}
		// github.com/m/p/file.go:12.3,15.2 4 1
		name, rest, ok := strings.Cut(line, ":")
		f := strings.Fields(rest)
		if !ok || len(f) != 3 {
			return fmt.Errorf("line %d: want FILE:L.C,L.C STATEMENTS COUNT, got %q", n, line)
		}
		count, err := strconv.Atoi(f[2])
		if err != nil {
			return fmt.Errorf("line %d: count %q is not a number", n, f[2])
		}
		from, _, _ := strings.Cut(f[0], ",")
		l, c, ok := strings.Cut(from, ".")
		line1, err1 := strconv.Atoi(l)
		col1, err2 := strconv.Atoi(c)
		if !ok || err1 != nil || err2 != nil {
			return fmt.Errorf("line %d: want a block L.C,L.C, got %q", n, f[0])
		}
		rel, ok := strings.CutPrefix(name, module+"/")
		if count == 0 || !ok {
			continue
		}
		blocks[rel] = append(blocks[rel], pos{line1, col1})
	}
	return sc.Err()
}

// readProfileFile is readProfile of the file at path.
func readProfileFile(path, module string, blocks map[string][]pos) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := readProfile(f, module, blocks); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}

// sortBlocks sorts and de-duplicates each file's block starts (a profile
// merged from several processes names a block once per process).
func sortBlocks(blocks map[string][]pos) {
	for f, bs := range blocks {
		sort.Slice(bs, func(i, j int) bool { return bs[i].before(bs[j]) })
		out := bs[:0]
		for i, b := range bs {
			if i == 0 || b != bs[i-1] {
				out = append(out, b)
			}
		}
		blocks[f] = out
	}
}

// calibration is one test to run alone with coverage.
type calibration struct {
	p     *pkg
	bin   string
	name  string
	short bool
}

// calibrate builds each package's tests with coverage of the packages
// changes are made in, runs each test alone (with -short, and again
// without where -short skipped something), and keeps which functions each
// ran. An unchanged suite that fails would catch every change, so a
// failing test stops the run.
func (ps *packages) calibrate(ctx context.Context, o *options, tmp string, stderr io.Writer) error {
	key, keyErr := calibrationKey(o)
	if o.calibration != "" && keyErr == nil && ps.load(o.calibration, key) {
		fmt.Fprintf(stderr, "codemut: the calibration in %s is of this tree; not run again\n", o.calibration)
		return nil
	}
	files, err := productionFiles(o.root, o.dirs)
	if err != nil {
		return err
	}
	spans, err := funcSpans(o.root, files)
	if err != nil {
		return err
	}
	var cover []string
	for _, d := range o.dirs {
		cover = append(cover, ps.module+"/"+filepath.ToSlash(filepath.Clean(d)))
	}
	coverpkg := strings.Join(cover, ",")
	var todo []calibration
	for i, p := range ps.list {
		bin := filepath.Join(tmp, fmt.Sprintf("calibrate%d.test", i))
		cmd := exec.CommandContext(ctx, "go", "test", "-c", "-vet=off", "-cover", "-covermode=set", "-coverpkg", coverpkg, "-o", bin, p.Path)
		cmd.Dir = o.root
		killGroup(cmd)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building the tests of %s with coverage: %v\n%s", p.Path, err, out)
		}
		out, err := exec.Command(bin, "-test.list", ".").Output()
		if err != nil {
			return fmt.Errorf("listing the tests of %s: %v", p.Path, err)
		}
		for _, name := range strings.Fields(string(out)) {
			if strings.HasPrefix(name, "Benchmark") {
				continue
			}
			todo = append(todo, calibration{p: p, bin: bin, name: name, short: true})
		}
	}
	fmt.Fprintf(stderr, "codemut: running %d tests alone with coverage, %d at once\n", len(todo), o.jobs)
	var mu sync.Mutex
	var failed []string
	done := 0
	// running is held shared by each calibration run and alone by a
	// failed test's second try: two tests of one package side by side may
	// share a fixed path, but alone the test must pass.
	var running sync.RWMutex
	try := func(c calibration) (testRun, bool, error) {
		running.RLock()
		defer running.RUnlock()
		return calibrateOne(ctx, ps.module, tmp, spans, c)
	}
	work := make(chan calibration)
	var wg sync.WaitGroup
	for j := 0; j < o.jobs; j++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				run, skipped, err := try(c)
				if err != nil && ctx.Err() == nil {
					running.Lock()
					run, skipped, err = calibrateOne(ctx, ps.module, tmp, spans, c)
					running.Unlock()
				}
				var full testRun
				if err == nil && skipped {
					c.short = false
					full, _, err = try(c)
				}
				mu.Lock()
				done++
				if done%50 == 0 || done == len(todo) {
					fmt.Fprintf(stderr, "  [%d/%d] calibrated\n", done, len(todo))
				}
				if err != nil {
					failed = append(failed, fmt.Sprintf("%s %s: %v", c.p.Path, c.name, err))
				} else {
					c.p.shortRuns = append(c.p.shortRuns, run)
					c.p.short += run.D
					if skipped {
						c.p.fullRuns = append(c.p.fullRuns, full)
						c.p.full += full.D
					}
				}
				mu.Unlock()
			}
		}()
	}
send:
	for _, c := range todo {
		select {
		case work <- c:
		case <-ctx.Done():
			break send
		}
	}
	close(work)
	wg.Wait()
	if len(failed) > 0 {
		sort.Strings(failed)
		return fmt.Errorf("the unchanged suite fails:\n%s", strings.Join(failed, "\n"))
	}
	for _, p := range ps.list {
		// Tests in source order no more: by name, so that a run's plan does
		// not depend on which calibration finished first.
		byName := func(rs []testRun) {
			sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
		}
		byName(p.shortRuns)
		byName(p.fullRuns)
		fmt.Fprintf(stderr, "  %-60s %4d tests %6.1fs short, %3d again %6.1fs full\n",
			p.Path, len(p.shortRuns), p.short.Seconds(), len(p.fullRuns), p.full.Seconds())
	}
	if o.calibration != "" {
		if keyErr != nil {
			fmt.Fprintf(stderr, "codemut: the calibration is not kept in %s: %v\n", o.calibration, keyErr)
			return nil
		}
		return ps.save(o.calibration, key)
	}
	return nil
}

// A calibrationFile keeps a calibration for the next run on the same tree
// (a -retry after writing tests, another seed): calibrating runs every
// test alone, the long ones too.
type calibrationFile struct {
	// Key is calibrationKey's: the tree, the changed packages, the Go
	// version and whether the long tests ran.
	Key      string                  `json:"key"`
	Packages map[string]calibrations `json:"packages"`
}

type calibrations struct {
	Short []testRun `json:"short"`
	Full  []testRun `json:"full,omitempty"`
}

// calibrationKey hashes what a calibration depends on: every file git
// lists (tracked, or new and not ignored) with its content, the changed
// packages, the Go version and whether make test-long's tests run.
func calibrationKey(o *options) (string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = o.root
	list, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git ls-files: %v (the key of a calibration is the tree git lists)", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s=%s\x00", runtime.Version(), strings.Join(o.dirs, ","), longEnv, os.Getenv(longEnv))
	for _, name := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		b, err := os.ReadFile(filepath.Join(o.root, name))
		if os.IsNotExist(err) {
			continue // deleted, not yet staged
		}
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// load takes the calibration in path if it is of key and names every
// package with tests; otherwise it reports false and changes nothing.
func (ps *packages) load(path, key string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var f calibrationFile
	if json.Unmarshal(b, &f) != nil || f.Key != key {
		return false
	}
	for _, p := range ps.list {
		if _, ok := f.Packages[p.Path]; !ok {
			return false
		}
	}
	for _, p := range ps.list {
		c := f.Packages[p.Path]
		p.shortRuns, p.fullRuns, p.short, p.full = c.Short, c.Full, 0, 0
		for _, r := range c.Short {
			p.short += r.D
		}
		for _, r := range c.Full {
			p.full += r.D
		}
	}
	return true
}

func (ps *packages) save(path, key string) error {
	f := calibrationFile{Key: key, Packages: map[string]calibrations{}}
	for _, p := range ps.list {
		f.Packages[p.Path] = calibrations{Short: p.shortRuns, Full: p.fullRuns}
	}
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

var skipLine = regexp.MustCompile(`(?m)^\s*--- SKIP: `)

// calibrateOne runs one test alone in its package's directory with
// coverage, from the test binary and from every process it started from
// that binary, and reports which of spans' functions it ran and whether it
// skipped anything.
func calibrateOne(ctx context.Context, module, tmp string, spans map[string][]span, c calibration) (testRun, bool, error) {
	dir, err := os.MkdirTemp(tmp, "cover")
	if err != nil {
		return testRun{}, false, err
	}
	defer os.RemoveAll(dir)
	profile := filepath.Join(dir, "profile")
	children := filepath.Join(dir, "children")
	if err := os.Mkdir(children, 0o755); err != nil {
		return testRun{}, false, err
	}
	args := []string{"-test.run", runPattern([]string{c.name}), "-test.count", "1", "-test.v",
		"-test.timeout", "90m", "-test.coverprofile", profile}
	env := os.Environ()
	if c.short {
		args = append(args, "-test.short")
		env = withoutEnv(env, longEnv)
	}
	// make test-long's tests take minutes each, more with coverage on a
	// loaded machine.
	ctx, cancel := context.WithTimeout(ctx, 95*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	killGroup(cmd)
	cmd.Dir = c.p.Dir
	cmd.Env = append(withoutEnv(env, "GOCOVERDIR"), "GOCOVERDIR="+children)
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	run := testRun{Name: c.name, D: time.Since(t0)}
	blocks := map[string][]pos{}
	if err != nil {
		return run, false, fmt.Errorf("%v\n%s", err, lastLines(out, 20))
	}
	if err := readProfileFile(profile, module, blocks); err != nil {
		return run, false, err
	}
	if ents, _ := os.ReadDir(children); len(ents) > 0 {
		merged := filepath.Join(dir, "children.txt")
		if out, err := exec.Command("go", "tool", "covdata", "textfmt", "-i", children, "-o", merged).CombinedOutput(); err != nil {
			return run, false, fmt.Errorf("go tool covdata: %v\n%s", err, out)
		}
		if err := readProfileFile(merged, module, blocks); err != nil {
			return run, false, err
		}
	}
	sortBlocks(blocks)
	run.Funcs = funcsRun(blocks, spans)
	return run, skipLine.Match(out), nil
}

// lastLines is the end of a test's output, where a failure says why.
func lastLines(out []byte, n int) string {
	lines := bytes.Split(bytes.TrimRight(out, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
