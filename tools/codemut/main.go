// Command codemut measures how much of a broken production code the test
// suite notices: it makes one small change at a time to the Go files of
// the given packages (model/, checker/ and checker/system/ by default), runs the tests of
// every package that can see the change, cheapest first, and reports per
// file how many changes a test caught. A change the suite misses is a
// survivor: either a test is missing, or the change alters nothing, in
// which case it belongs in the list of equivalent changes with the reason.
//
// The tree is never touched: each changed file reaches the compiler
// through go test -overlay. The sample is drawn with a seed, so a run can
// be repeated exactly. See docs/codemut.md for how to read the result.
//
//	go run ./tools/codemut [-n 300] [-seed 1] [-j 2] [-files REGEXP] [-match REGEXP] [-all] [-list] [-json FILE]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

type options struct {
	root, equivalents, jsonOut string
	calibration                string
	retry, rescore, resume     string
	dirs                       []string
	n, jobs                    int
	seed                       uint64
	files, match               *regexp.Regexp
	all, list                  bool
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("codemut", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var dirs, files, match string
	fs.StringVar(&dirs, "pkgs", "model,checker,checker/system", "comma-separated package `directories` whose production files are changed")
	fs.IntVar(&o.n, "n", 300, "number of changes to sample (spread over the files in proportion to their sites)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the sample")
	fs.IntVar(&o.jobs, "j", 2, "changes tested at once")
	fs.StringVar(&files, "files", "", "only files whose path matches this `regexp`")
	fs.BoolVar(&o.all, "all", false, "every site of the selected files, not a sample")
	fs.StringVar(&match, "match", "", "only changes whose key matches this `regexp` (with -all: re-try given survivors)")
	fs.StringVar(&o.equivalents, "equivalents", "tools/codemut/equivalent.txt", "`file` of changes known to alter nothing, with the reason")
	fs.StringVar(&o.jsonOut, "json", "", "also write every result to this `file` as JSON")
	fs.StringVar(&o.calibration, "calibration", "", "keep the calibration (which tests run which functions) in this `file`, and take it from there when it is of the same tree")
	fs.BoolVar(&o.list, "list", false, "list the chosen changes and stop")
	fs.StringVar(&o.rescore, "rescore", "", "print the report of an earlier run's -json `file` again, judged by today's list of equivalent changes (runs no test)")
	fs.StringVar(&o.resume, "resume", "", "take the changes an earlier run of the same sample judged from its -json `file` (a run cut short by Ctrl-C) and try only the others")
	fs.StringVar(&o.retry, "retry", "", "try again exactly the survivors of an earlier run's -json `file` (every one still in the code)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 || o.n < 1 || o.jobs < 1 {
		fmt.Fprintln(stderr, "codemut: takes flags only; -n and -j must be at least 1")
		return 2
	}
	o.dirs = strings.Split(dirs, ",")
	for _, f := range []struct {
		name, expr string
		re         **regexp.Regexp
	}{{"files", files, &o.files}, {"match", match, &o.match}} {
		if f.expr == "" {
			continue
		}
		re, err := regexp.Compile(f.expr)
		if err != nil {
			fmt.Fprintf(stderr, "codemut: -%s: %v\n", f.name, err)
			return 2
		}
		*f.re = re
	}
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(stderr, "codemut:", err)
		return 2
	}
	o.root = root
	// Ctrl-C stops the run: the tests under way are killed with their
	// processes, and the changes judged so far are reported (exit 3).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := mutate(ctx, &o, stdout, stderr); err != nil {
		if errors.Is(err, errInterrupted) {
			return 3
		}
		fmt.Fprintln(stderr, "codemut:", err)
		return 1
	}
	return 0
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("run inside the module")
	}
	return filepath.Dir(mod), nil
}

// A result is what the suite did with one change.
type result struct {
	Site       *site    `json:"-"`
	Key        string   `json:"key"`
	File       string   `json:"file"`
	Line       int      `json:"line"`
	Op         string   `json:"op"`
	Status     string   `json:"status"` // killed, survived, invalid (did not build), error (could not be judged)
	Package    string   `json:"package,omitempty"`
	Tests      []string `json:"tests,omitempty"`
	Equivalent string   `json:"equivalent,omitempty"`
	// Ran is how many test runs the change took (a test in two steps,
	// -short and full, counts twice).
	Ran     int     `json:"ran"`
	Seconds float64 `json:"seconds"`
}

func mutate(ctx context.Context, o *options, stdout, stderr io.Writer) error {
	equiv, err := readEquivalents(filepath.Join(o.root, o.equivalents))
	if err != nil {
		return err
	}
	if o.rescore != "" {
		results, err := readResults(o.rescore)
		if err != nil {
			return err
		}
		for i := range results {
			results[i].Equivalent = equiv[results[i].Key]
		}
		fmt.Fprintf(stdout, "codemut: the results of %s, judged by %s today\n", o.rescore, o.equivalents)
		report(stdout, results, -1, -1, o, equiv)
		return nil
	}
	files, err := productionFiles(o.root, o.dirs)
	if err != nil {
		return err
	}
	var keep map[string]bool
	if o.retry != "" {
		if keep, err = survivorsOf(o.retry); err != nil {
			return err
		}
		o.all = true
	}
	var all []site
	perFile := map[string][]site{}
	for _, f := range files {
		if o.files != nil && !o.files.MatchString(f) {
			continue
		}
		ss, err := fileSites(o.root, f)
		if err != nil {
			return err
		}
		if o.match != nil || keep != nil {
			ss = slices.DeleteFunc(ss, func(s site) bool {
				return (o.match != nil && !o.match.MatchString(s.Key())) || (keep != nil && !keep[s.Key()])
			})
			if len(ss) == 0 {
				continue
			}
		}
		perFile[f] = ss
		all = append(all, ss...)
	}
	if keep != nil {
		found := 0
		for _, ss := range perFile {
			found += len(ss)
		}
		if found < len(keep) {
			fmt.Fprintf(stderr, "codemut: %d of the %d survivors in %s are no longer in the code (it changed there)\n", len(keep)-found, len(keep), o.retry)
		}
	}
	if len(all) == 0 {
		return fmt.Errorf("no sites in %v", o.dirs)
	}
	chosen := sample(perFile, o.n, o.seed, o.all)
	if o.list {
		for i := range chosen {
			fmt.Fprintf(stdout, "%s:%d  %s\n", chosen[i].File, chosen[i].Line, chosen[i].Key())
		}
		fmt.Fprintf(stdout, "%d changes of %d sites in %d files\n", len(chosen), len(all), len(perFile))
		return nil
	}
	fmt.Fprintf(stderr, "codemut: %d changes of %d sites in %d files; calibrating the suite\n", len(chosen), len(all), len(perFile))
	pk, err := loadPackages(o.root)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "codemut")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := pk.calibrate(ctx, o, tmp, stderr); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "codemut: interrupted while calibrating the suite; no change judged")
			return errInterrupted
		}
		return err
	}

	results := make([]result, len(chosen))
	done := 0
	if o.resume != "" {
		earlier, err := readResults(o.resume)
		if err != nil {
			return err
		}
		byKey := map[string]result{}
		for _, r := range earlier {
			byKey[r.Key] = r
		}
		for i := range chosen {
			if r, ok := byKey[chosen[i].Key()]; ok {
				r.Site, r.Equivalent = &chosen[i], equiv[r.Key]
				results[i] = r
				done++
			}
		}
		fmt.Fprintf(stderr, "codemut: %d of the %d changes judged in %s; trying the others\n", done, len(chosen), o.resume)
	}
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for j := 0; j < o.jobs; j++ {
		dir := filepath.Join(tmp, fmt.Sprint(j))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				r := pk.try(ctx, o.root, dir, &chosen[i])
				if ctx.Err() != nil {
					// Cut short: the change is not judged.
					continue
				}
				r.Equivalent = equiv[r.Key]
				mu.Lock()
				results[i] = r
				done++
				fmt.Fprintf(stderr, "[%d/%d] %s:%d %s %s %s (%d tests, %.0fs)\n", done, len(chosen), r.File, r.Line, r.Op, r.Status, strings.Join(r.Tests, " "), r.Ran, r.Seconds)
				// Kept after every change: a run cut short keeps what it did.
				err := writeResults(o.jsonOut, results)
				mu.Unlock()
				if err != nil {
					fmt.Fprintln(stderr, "codemut:", err)
				}
			}
		}()
	}
dispatch:
	for i := range chosen {
		if results[i].Status != "" {
			continue
		}
		select {
		case work <- i:
		case <-ctx.Done():
			break dispatch
		}
	}
	close(work)
	wg.Wait()

	judged := slices.DeleteFunc(results, func(r result) bool { return r.Status == "" })
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "codemut: interrupted after %d of %d changes; the report of those\n", len(judged), len(chosen))
	}
	report(stdout, judged, len(all), len(perFile), o, equiv)
	if err := writeResults(o.jsonOut, judged); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return errInterrupted
	}
	return nil
}

// errInterrupted: the run was cut short (Ctrl-C); its report covers the
// changes judged before.
var errInterrupted = errors.New("interrupted")

// writeResults writes the judged results as JSON, when a file is asked for.
func writeResults(path string, results []result) error {
	if path == "" {
		return nil
	}
	judged := slices.DeleteFunc(slices.Clone(results), func(r result) bool { return r.Status == "" })
	b, err := json.MarshalIndent(judged, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// sample draws n sites, spread over the files in proportion to how many
// sites each has (at least one per file), each file's share drawn with a
// seeded shuffle. With all it takes every site.
func sample(perFile map[string][]site, n int, seed uint64, all bool) []site {
	files := make([]string, 0, len(perFile))
	total := 0
	for f, ss := range perFile {
		files = append(files, f)
		total += len(ss)
	}
	sort.Strings(files)
	var out []site
	rng := rand.New(rand.NewPCG(seed, 0x636f64656d7574))
	for _, f := range files {
		ss := append([]site(nil), perFile[f]...)
		k := len(ss)
		if !all {
			k = (n*len(ss) + total/2) / total
			if k < 1 && len(ss) > 0 {
				k = 1
			}
			if k > len(ss) {
				k = len(ss)
			}
			rng.Shuffle(len(ss), func(i, j int) { ss[i], ss[j] = ss[j], ss[i] })
		}
		ss = ss[:k]
		sort.Slice(ss, func(i, j int) bool { return ss[i].start < ss[j].start })
		out = append(out, ss...)
	}
	return out
}

// pkg is one package of the module with tests.
type pkg struct {
	Path, Dir string
	// sees: the packages whose code this package's tests compile in.
	sees map[string]bool
	// shortRuns are its tests' calibration runs with -short; fullRuns
	// those of the tests -short skipped something of, run again without
	// it. short and full are how long each set took.
	shortRuns, fullRuns []testRun
	short, full         time.Duration
}

type packages struct {
	module string
	list   []*pkg
}

func loadPackages(root string) (*packages, error) {
	cmd := exec.Command("go", "list", "-test", "-deps=false", "-f",
		`{{.ImportPath}}|{{join .Deps ","}}|{{len .TestGoFiles}}|{{len .XTestGoFiles}}|{{.Dir}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v", err)
	}
	mod := exec.Command("go", "list", "-m")
	mod.Dir = root
	m, err := mod.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m: %v", err)
	}
	ps := &packages{module: strings.TrimSpace(string(m))}
	byPath := map[string]*pkg{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 5 {
			continue
		}
		path := f[0]
		// go list -test lists "p", "p [p.test]", "p_test [p.test]" and
		// "p.test"; the test variants carry the dependencies of the tests.
		base := strings.TrimSuffix(strings.Fields(path)[0], "_test")
		if strings.HasSuffix(base, ".test") {
			continue
		}
		p := byPath[base]
		if p == nil {
			// Every form of a package shares its directory, where its
			// tests run.
			p = &pkg{Path: base, Dir: f[4], sees: map[string]bool{base: true}}
			byPath[base] = p
		}
		for _, d := range strings.Fields(strings.ReplaceAll(f[1], ",", " ")) {
			if !strings.HasPrefix(d, "[") {
				p.sees[d] = true
			}
		}
		if f[2] != "0" || f[3] != "0" {
			if !contains(ps.list, p) {
				ps.list = append(ps.list, p)
			}
		}
	}
	return ps, nil
}

func contains(l []*pkg, p *pkg) bool {
	for _, q := range l {
		if q == p {
			return true
		}
	}
	return false
}

// plan is the order in which one change is tested: first -short runs of
// the packages that see the file, the changed package first and then the
// cheapest, then the full runs of the tests -short skipped something of;
// in each, only the tests that ran the changed function when calibrated.
type step struct {
	p     *pkg
	short bool
	tests []string
	// d is how long the tests took unchanged.
	d time.Duration
}

func (ps *packages) plan(changed string, s *site) []step {
	var see []*pkg
	for _, p := range ps.list {
		if p.sees[changed] {
			see = append(see, p)
		}
	}
	sort.SliceStable(see, func(i, j int) bool {
		if (see[i].Path == changed) != (see[j].Path == changed) {
			return see[i].Path == changed
		}
		return see[i].short < see[j].short
	})
	var out []step
	for _, short := range []bool{true, false} {
		for _, p := range see {
			runs := p.shortRuns
			if !short {
				runs = p.fullRuns
			}
			if names, d := selected(runs, s); len(names) > 0 {
				out = append(out, step{p, short, names, d})
			}
		}
	}
	return out
}

var failLine = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)

// try builds the changed file into an overlay and runs the plan until a
// package's tests fail.
func (ps *packages) try(ctx context.Context, root, dir string, s *site) (r result) {
	// r is named: the deferred function sets the seconds of what is returned.
	r = result{Site: s, Key: s.Key(), File: s.File, Line: s.Line, Op: s.Op, Status: "survived"}
	t0 := time.Now()
	defer func() { r.Seconds = time.Since(t0).Seconds() }()
	src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(s.File)))
	if err != nil {
		r.Status = "invalid"
		return r
	}
	changed := filepath.Join(dir, filepath.Base(s.File))
	overlay := filepath.Join(dir, "overlay.json")
	ov, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(root, filepath.FromSlash(s.File)): changed}})
	if os.WriteFile(changed, s.apply(src), 0o644) != nil || os.WriteFile(overlay, ov, 0o644) != nil {
		r.Status = "invalid"
		return r
	}
	pkgPath := ps.module + "/" + filepath.ToSlash(filepath.Dir(s.File))
	steps := ps.plan(pkgPath, s)
	if len(steps) == 0 {
		// No test runs the function: the change survives if it builds.
		cmd := exec.CommandContext(ctx, "go", "build", "-overlay", overlay, pkgPath)
		cmd.Dir = root
		killGroup(cmd)
		if out, err := cmd.CombinedOutput(); err != nil {
			r.Status, r.Tests = buildFailed(out, s.File)
		}
		return r
	}
	for _, st := range steps {
		r.Ran += len(st.tests)
		// A change may make a loop endless: five times the unchanged
		// time, plus building, is a generous limit.
		_, out, err := goTest(ctx, root, overlay, st.p.Path, st.short, 5*st.d+30*time.Second, "-run", runPattern(st.tests))
		if err == nil {
			continue
		}
		if bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]")) {
			r.Status, r.Tests = buildFailed(out, s.File)
			return r
		}
		r.Status, r.Package = "killed", st.p.Path
		for _, m := range failLine.FindAllSubmatch(out, -1) {
			r.Tests = append(r.Tests, string(m[1]))
		}
		if bytes.Contains(out, []byte("panic: test timed out")) || errorsIsDeadline(err) {
			r.Tests = append(r.Tests, "(time limit)")
		}
		if len(r.Tests) == 0 {
			r.Tests = append(r.Tests, "(package failed: "+firstLine(out)+")")
		}
		return r
	}
	return r
}

// buildFailed judges a change whose build failed. A change that does not
// build says nothing about the tests. A build that fails elsewhere (a file
// being edited while the run goes on) says nothing about the change
// either.
func buildFailed(out []byte, file string) (status string, tests []string) {
	if !bytes.Contains(out, []byte(filepath.Base(file)+":")) {
		return "error", []string{"(build failed outside the changed file: " + firstLine(out) + ")"}
	}
	return "invalid", nil
}

func errorsIsDeadline(err error) bool { return err == context.DeadlineExceeded }

func firstLine(b []byte) string {
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "FAIL") {
			return oneLine(l)
		}
	}
	return "no output"
}

// goTest runs one package's tests, with the overlay when one is given.
func goTest(ctx context.Context, root, overlay, path string, short bool, limit time.Duration, extra ...string) (time.Duration, []byte, error) {
	args := append([]string{"test", "-count=1", "-failfast", "-vet=off", "-timeout", limit.Round(time.Second).String()}, extra...)
	if short {
		args = append(args, "-short")
	}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	args = append(args, path)
	ctx, cancel := context.WithTimeout(ctx, limit+2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	killGroup(cmd)
	if root != "" {
		cmd.Dir = root
	}
	if short {
		// A -short run is the cheap first try: the tests that make
		// test-long runs (HANDOFFCHECK_LONG, minutes each) wait for the
		// full run, which only a change every -short run missed reaches.
		cmd.Env = withoutEnv(os.Environ(), longEnv)
	}
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = context.DeadlineExceeded
	}
	return time.Since(t0), out, err
}

// longEnv turns on the tests of make test-long.
const longEnv = "HANDOFFCHECK_LONG"

// withoutEnv is env without the variable name.
func withoutEnv(env []string, name string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
}

// readResults reads an earlier run's -json file.
func readResults(path string) ([]result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rs []result
	if err := json.Unmarshal(b, &rs); err != nil {
		return nil, fmt.Errorf("%s: not a -json file of codemut: %v", path, err)
	}
	return rs, nil
}

// survivorsOf reads the keys of the changes that survived in an earlier
// run's -json file.
func survivorsOf(path string) (map[string]bool, error) {
	rs, err := readResults(path)
	if err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	for _, r := range rs {
		if r.Status == "survived" {
			keep[r.Key] = true
		}
	}
	return keep, nil
}

// readEquivalents reads the list of changes known to alter nothing: one
// per line, the change's key, a tab, and why it alters nothing. Lines
// starting with # are comments.
func readEquivalents(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for i, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimRight(line, " \r"); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, why, ok := strings.Cut(line, "\t")
		if !ok || strings.TrimSpace(why) == "" {
			return nil, fmt.Errorf("%s:%d: want a change's key, a tab, and why it alters nothing", path, i+1)
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("%s:%d: %s is listed twice", path, i+1, key)
		}
		out[key] = strings.TrimSpace(why)
	}
	return out, nil
}

type tally struct{ sampled, invalid, killed, survived, equivalent int }

func (t *tally) add(r *result) {
	t.sampled++
	switch {
	case r.Status == "invalid" || r.Status == "error":
		t.invalid++
	case r.Status == "killed":
		t.killed++
	case r.Equivalent != "":
		t.equivalent++
	default:
		t.survived++
	}
}

// score is the share of the changes that alter behaviour (built, and not
// known to be equivalent) that the suite caught.
func (t *tally) score() string {
	n := t.killed + t.survived
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(t.killed)/float64(n))
}

func report(w io.Writer, results []result, sites, nfiles int, o *options, equiv map[string]string) {
	byFile := map[string]*tally{}
	var files []string
	total := &tally{}
	for i := range results {
		r := &results[i]
		if byFile[r.File] == nil {
			byFile[r.File] = &tally{}
			files = append(files, r.File)
		}
		byFile[r.File].add(r)
		total.add(r)
	}
	sort.Strings(files)
	how := fmt.Sprintf("a sample of %d (seed %d)", len(results), o.seed)
	if o.all {
		how = fmt.Sprintf("all %d", len(results))
	}
	if sites >= 0 {
		fmt.Fprintf(w, "codemut: %s of %d sites in %d files\n", how, sites, nfiles)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-28s %7s %7s %7s %8s %10s %7s\n", "file", "changes", "invalid", "killed", "survived", "equivalent", "score")
	for _, f := range files {
		t := byFile[f]
		fmt.Fprintf(w, "%-28s %7d %7d %7d %8d %10d %7s\n", f, t.sampled, t.invalid, t.killed, t.survived, t.equivalent, t.score())
	}
	fmt.Fprintf(w, "%-28s %7d %7d %7d %8d %10d %7s\n", "total", total.sampled, total.invalid, total.killed, total.survived, total.equivalent, total.score())

	fmt.Fprintf(w, "\nSurvivors (alter behaviour, no test noticed):\n")
	n := 0
	for i := range results {
		if r := &results[i]; r.Status == "survived" && r.Equivalent == "" {
			fmt.Fprintf(w, "  %s:%d  %s\n", r.File, r.Line, r.Key)
			n++
		}
	}
	if n == 0 {
		fmt.Fprintln(w, "  none")
	}
	fmt.Fprintf(w, "\nEquivalent (survive, and alter nothing; from %s):\n", o.equivalents)
	n = 0
	for i := range results {
		if r := &results[i]; r.Status == "survived" && r.Equivalent != "" {
			fmt.Fprintf(w, "  %s:%d  %s\n      %s\n", r.File, r.Line, r.Key, r.Equivalent)
			n++
		}
	}
	if n == 0 {
		fmt.Fprintln(w, "  none")
	}
	for i := range results {
		if r := &results[i]; r.Status == "error" {
			fmt.Fprintf(w, "\nnot judged (counted as invalid): %s %v\n", r.Key, r.Tests)
		}
	}
	// A change listed as equivalent that a test caught is listed wrongly.
	for i := range results {
		if r := &results[i]; r.Status == "killed" && r.Equivalent != "" {
			fmt.Fprintf(w, "\nlisted as equivalent but caught by %s %v (remove it from the list): %s\n", r.Package, r.Tests, r.Key)
		}
	}
}
