package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The README and the pages of docs/ are part of the product: a command they
// show is a promise about what it prints. The tests here hold every such
// command to what it prints today, keep the repository root free of stray
// files (the README's examples once wrote their outputs there and the
// outputs got committed), and keep the measured figures of `make check` in
// one place, with the run that produced them.

// repoRoot is the repository root as seen from this package's directory.
var repoRoot = filepath.Join("..", "..")

// docPages lists README.md and every Markdown page of docs/, sorted, as
// paths relative to the repository root.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, p := range pages {
		rel, err := filepath.Rel(repoRoot, p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, filepath.ToSlash(rel))
	}
	sort.Strings(out[1:])
	return out
}

func readPage(t *testing.T, page string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(page)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// docExample is one `$ handoffcheck ...` line of a fenced block, with the
// lines the page shows after it (up to the next `$ ` line or the block's
// end). A line `...` stands for any number of lines of the real output.
type docExample struct {
	page string
	line int
	cmd  string // as shown, continuation lines joined
	args []string
	want []string
	// from is the index of the page's first line of want: -rewrite
	// replaces want there with what the command prints.
	from int
}

func (ex docExample) String() string { return fmt.Sprintf("%s:%d: $ %s", ex.page, ex.line, ex.cmd) }

// parseExamples reads the examples of one page. A `$ ` line that is not a
// handoffcheck command is an error: the test could not check it.
func parseExamples(page, text string) ([]docExample, error) {
	var out []docExample
	lines := strings.Split(text, "\n")
	inBlock := false
	cur := -1
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		switch {
		case strings.HasPrefix(line, "```"):
			inBlock = !inBlock
			cur = -1
		case !inBlock:
		case strings.HasPrefix(line, "$ "):
			start := i + 1
			cmd := strings.TrimPrefix(line, "$ ")
			for strings.HasSuffix(cmd, `\`) && i+1 < len(lines) {
				i++
				cmd = strings.TrimSuffix(cmd, `\`) + " " + strings.TrimSpace(lines[i])
			}
			cmd = strings.Join(strings.Fields(cmd), " ")
			rest, ok := strings.CutPrefix(cmd, "handoffcheck ")
			if !ok {
				return nil, fmt.Errorf("%s:%d: $ %s: not a handoffcheck command, so no test can hold it to its output (show it without the $ prompt, or as handoffcheck commands)", page, start, cmd)
			}
			args, err := splitArgs(rest)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %v", page, start, err)
			}
			out = append(out, docExample{page: page, line: start, cmd: cmd, args: args, from: i + 1})
			cur = len(out) - 1
		case cur >= 0:
			out[cur].want = append(out[cur].want, line)
		}
	}
	return out, nil
}

// splitArgs splits a command line as a shell would for the quoting the
// pages use: words, and single- or double-quoted strings.
func splitArgs(s string) ([]string, error) {
	var args []string
	var b strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				b.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ':
			if inWord {
				args = append(args, b.String())
				b.Reset()
				inWord = false
			}
		case strings.ContainsRune("|;&<>`", r):
			return nil, fmt.Errorf("%q: shell syntax (%c) in an example: show the handoffcheck commands one by one", s, r)
		default:
			b.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("%q: unterminated quote", s)
	}
	if inWord {
		args = append(args, b.String())
	}
	return args, nil
}

// Measured figures (times, rates, memory) differ from run to run; in a line
// that carries one, every number is compared as "a number".
var (
	measuredLine = regexp.MustCompile(`elapsed|states/s|transitions/s|peak heap|peak resident|bytes/state|resident memory|written to files|"elapsed_ms"|"states_per_second"|"transitions_per_second"|"peak_|"resident_bytes|"spilled_bytes"|speedup|took [0-9]`)
	number       = regexp.MustCompile(`[0-9][0-9.,]*(?:ns|µs|ms|h|m|s)?(?:[0-9][0-9.,]*(?:ns|µs|ms|h|m|s))*`)
	memUnit      = regexp.MustCompile(`N (?:B|KiB|MiB|GiB|TiB)\b`)
	anyDigits    = regexp.MustCompile(`[0-9][0-9.,]*`)
)

func maskMeasured(line string) string {
	if !measuredLine.MatchString(line) {
		return line
	}
	return memUnit.ReplaceAllString(number.ReplaceAllString(line, "N"), "N B")
}

// looseExamples are commands whose output depends on the wall clock in
// more than its measured figures: a live run's counts follow the
// scheduling of real processes. Their every number is compared as "a
// number": the shape of the report is checked, not its figures.
var looseExamples = map[string]string{
	"live": "real processes on the wall clock: counts follow the scheduling",
}

// slowExamples take minutes or gigabytes; they run when
// HANDOFFCHECK_DOCS_SLOW=1 (make docs-slow), not in make test.
var slowExamples = map[string]string{
	"check --stats":  "the default job: minutes and about 6 GiB",
	"mutate":         "every mutant of the built-in tables",
	"mutate --timed": "every mutant, simulated",
}

// matchLines reports whether got matches want, where a want line "..."
// (however indented) stands for any number of got lines, and a line that
// ends in "..." for one line that begins as it does.
func matchLines(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if strings.TrimSpace(want[0]) == "..." {
		for k := 0; k <= len(got); k++ {
			if matchLines(want[1:], got[k:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && lineMatches(want[0], got[0]) && matchLines(want[1:], got[1:])
}

// lineMatches: a want line that ends in "..." stands for every line that
// begins with what precedes it.
func lineMatches(want, got string) bool {
	if p, ok := strings.CutSuffix(want, "..."); ok && strings.TrimSpace(p) != "" {
		return strings.HasPrefix(got, p)
	}
	return want == got
}

func TestDocs_ExamplesMatchOutput(t *testing.T) {
	var examples []docExample
	for _, page := range docPages(t) {
		exs, err := parseExamples(page, readPage(t, page))
		if err != nil {
			t.Fatal(err)
		}
		examples = append(examples, exs...)
	}
	if len(examples) < 40 {
		t.Fatalf("found %d examples in README.md and docs/, want the 40 or more they show", len(examples))
	}
	// The pages write their outputs under /tmp; here those go to a
	// directory of the test's own, shared by the examples in order so that
	// a page can replay what an earlier example wrote.
	tmp := t.TempDir()
	t.Chdir(repoRoot)
	slow := os.Getenv("HANDOFFCHECK_DOCS_SLOW") == "1"
	fixes := map[string][]docFix{}
	defer func() { rewritePages(t, fixes) }()
	// A command the pages show more than once (the default live run, in
	// README.md and docs/live.md: seconds of real processes) runs once,
	// and each showing is held to what it printed, as long as no command
	// run between them names a path under /tmp that it names.
	printed := map[string]string{}
	for _, ex := range examples {
		key := strings.Join(ex.args, " ")
		if reason, ok := slowExamples[key]; ok && !slow {
			t.Logf("%v: not run (%s); HANDOFFCHECK_DOCS_SLOW=1 runs it", ex, reason)
			continue
		}
		args := make([]string, 0, len(ex.args))
		for _, a := range ex.args {
			a = strings.ReplaceAll(a, "/tmp/", tmp+"/")
			if strings.ContainsAny(a, "*?[") {
				m, err := filepath.Glob(a)
				if err != nil || len(m) == 0 {
					t.Fatalf("%v: %s matches no file", ex, a)
				}
				args = append(args, m...)
				continue
			}
			args = append(args, a)
		}
		asRun := strings.Join(args, "\x00")
		text, again := printed[asRun]
		if !again {
			var out, errb bytes.Buffer
			run(args, &out, &errb)
			text = strings.ReplaceAll(out.String()+errb.String(), tmp, "/tmp")
			for k := range printed {
				if sharesTmp(strings.Split(k, "\x00"), args, tmp) {
					delete(printed, k)
				}
			}
			printed[asRun] = text
		} else {
			t.Logf("%v: shown before, held to what it printed then", ex)
		}
		var got []string
		if text != "" {
			got = strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		}
		want := ex.want
		for len(want) > 0 && want[len(want)-1] == "" {
			want = want[:len(want)-1]
		}
		norm := func(lines []string) []string {
			n := make([]string, len(lines))
			for i, l := range lines {
				l = maskMeasured(l)
				if _, ok := looseExamples[ex.args[0]]; ok {
					l = anyDigits.ReplaceAllString(l, "N")
				}
				n[i] = l
			}
			return n
		}
		if matchLines(norm(want), norm(got)) {
			continue
		}
		if *rewrite {
			if reason := unrewritable(ex.args[0], want); reason != "" {
				t.Errorf("%v: cannot rewrite: %s; edit the page by hand to\n%s", ex, reason, strings.Join(got, "\n"))
				continue
			}
			fixes[ex.page] = append(fixes[ex.page], docFix{from: ex.from, n: len(want), lines: rewritten(want, got)})
			continue
		}
		t.Errorf("%v: the page shows\n%s\nthe command prints\n%s\n(when the change is intended: go test ./cmd/handoffcheck -run TestDocs_ExamplesMatchOutput -rewrite)", ex, strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
}

// sharesTmp reports whether two commands' arguments name a path under
// dir in common (one of them, or a file in one of them).
func sharesTmp(a, b []string, dir string) bool {
	for _, x := range a {
		for _, y := range b {
			if !strings.HasPrefix(x, dir+"/") || !strings.HasPrefix(y, dir+"/") {
				continue
			}
			if x == y || strings.HasPrefix(x, y+"/") || strings.HasPrefix(y, x+"/") {
				return true
			}
		}
	}
	return false
}

// docFix replaces n lines of a page from index from with lines.
type docFix struct {
	from, n int
	lines   []string
}

// unrewritable says why an example's output cannot be written over: an
// elision ("...") inside the output or a loose example would lose what
// the page chose to show, so a person edits it. A page that shows only
// the output's last lines (a first line "...") keeps showing as many.
func unrewritable(cmd string, want []string) string {
	if _, ok := looseExamples[cmd]; ok {
		return "its numbers follow the wall clock"
	}
	for i, l := range want {
		if strings.HasSuffix(strings.TrimSpace(l), "...") && (i > 0 || strings.TrimSpace(l) != "...") {
			return "the page elides part of the output with ..."
		}
	}
	return ""
}

// rewritten is what -rewrite puts in the page for an example: the output,
// or its last lines after a leading "...".
func rewritten(want, got []string) []string {
	if len(want) > 0 && strings.TrimSpace(want[0]) == "..." {
		keep := min(len(want)-1, len(got))
		return append([]string{want[0]}, got[len(got)-keep:]...)
	}
	return got
}

// rewritePages writes the fixes -rewrite gathered into their pages, last
// first so that earlier indices stay valid. It runs in the repository
// root, where the examples ran.
func rewritePages(t *testing.T, fixes map[string][]docFix) {
	pages := make([]string, 0, len(fixes))
	for p := range fixes {
		pages = append(pages, p)
	}
	sort.Strings(pages)
	for _, page := range pages {
		path := filepath.FromSlash(page)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		fs := fixes[page]
		sort.Slice(fs, func(i, j int) bool { return fs[i].from > fs[j].from })
		for _, f := range fs {
			lines = append(lines[:f.from], append(append([]string{}, f.lines...), lines[f.from+f.n:]...)...)
		}
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: rewrote %d examples", page, len(fs))
	}
}

// Every relative link of README.md and docs/ leads to a file of the
// repository, and every #anchor to a heading of the page it names.
func TestDocs_LinksResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(page string) map[string]bool {
		if a, ok := anchors[page]; ok {
			return a
		}
		a := map[string]bool{}
		inBlock := false
		for _, l := range strings.Split(readPage(t, page), "\n") {
			if strings.HasPrefix(l, "```") {
				inBlock = !inBlock
			}
			if inBlock || !strings.HasPrefix(l, "#") {
				continue
			}
			a[githubAnchor(strings.TrimLeft(l, "#"))] = true
		}
		anchors[page] = a
		return a
	}
	for _, page := range docPages(t) {
		inBlock := false
		for n, l := range strings.Split(readPage(t, page), "\n") {
			if strings.HasPrefix(l, "```") {
				inBlock = !inBlock
			}
			if inBlock {
				continue
			}
			for _, m := range link.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, frag, _ := strings.Cut(target, "#")
				dest := page
				if file != "" {
					dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), file)))
					if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(dest))); err != nil {
						t.Errorf("%s:%d: link %s: no file %s", page, n+1, target, dest)
						continue
					}
				}
				if frag != "" && strings.HasSuffix(dest, ".md") && !anchorsOf(dest)[frag] {
					t.Errorf("%s:%d: link %s: %s has no heading with anchor #%s", page, n+1, target, dest, frag)
				}
			}
		}
	}
}

// githubAnchor is the anchor GitHub gives a heading: lower case, spaces to
// hyphens, punctuation other than hyphens and underscores dropped.
func githubAnchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// rootEntries are the files and directories the repository root may hold.
// Anything else at the root (an example's output, a checkpoint, a shard)
// was written there by accident.
var rootEntries = []string{
	".ci", ".dockerignore", ".gitignore", "Dockerfile", "Makefile", "README.md",
	"checker", "cmd", "deploy", "docs", "fuzz", "gen", "go.mod", "go.sum",
	"machines", "model", "spec", "testdata", "tools",
}

func TestRepoRoot_OnlyListedFiles(t *testing.T) {
	var names []string
	if out, err := exec.Command("git", "-C", repoRoot, "ls-files").Output(); err == nil {
		seen := map[string]bool{}
		for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			top, _, _ := strings.Cut(f, "/")
			if top != "" && !seen[top] {
				seen[top] = true
				names = append(names, top)
			}
		}
	} else {
		// No git (a source archive): the directory as it is.
		ents, err := os.ReadDir(repoRoot)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.Name() != ".git" {
				names = append(names, e.Name())
			}
		}
	}
	allowed := map[string]bool{}
	for _, n := range rootEntries {
		allowed[n] = true
	}
	sort.Strings(names)
	for _, n := range names {
		if !allowed[n] {
			t.Errorf("the repository root holds %s, which is not in rootEntries: move it (an example's output belongs under /tmp) or list it", n)
		}
	}
	if len(names) < 10 {
		t.Fatalf("found only %d entries at the root (%v): the listing is broken", len(names), names)
	}
}

// The measured time and memory of `make check` are stated once, on the
// measurements page, with the run that produced them: when they were
// repeated in several places they drifted apart (3 or 4 minutes; 9, 6.9
// and 9.3 GiB).
func TestDocs_MakeCheckFiguresInOnePlace(t *testing.T) {
	figure := regexp.MustCompile(`\b[0-9][0-9.,]*\s?(?:s|seconds?|min|minutes?|GiB|MiB|GB|MB)\b`)
	var places []string
	for _, page := range docPages(t) {
		for i, para := range paragraphs(readPage(t, page)) {
			if strings.Contains(para, "make check") && figure.MatchString(para) {
				places = append(places, fmt.Sprintf("%s (paragraph %d: %q)", page, i+1, firstLine(para)))
				if page == "README.md" {
					t.Errorf("README.md states a figure of make check (paragraph %d: %q): it belongs on docs/measurements.md alone", i+1, firstLine(para))
				}
			}
		}
	}
	if len(places) != 1 || !strings.HasPrefix(places[0], "docs/measurements.md ") {
		t.Errorf("make check's time and memory are stated in %d places, want once, on docs/measurements.md:\n%s", len(places), strings.Join(places, "\n"))
	}
}

// paragraphs splits a page at blank lines; a fenced block is part of the
// paragraph it sits in, blank lines and all.
func paragraphs(text string) []string {
	var out []string
	var cur []string
	inBlock := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "```") {
			inBlock = !inBlock
		}
		if !inBlock && strings.TrimSpace(l) == "" {
			if len(cur) > 0 {
				out = append(out, strings.Join(cur, "\n"))
				cur = nil
			}
			continue
		}
		cur = append(cur, l)
	}
	if len(cur) > 0 {
		out = append(out, strings.Join(cur, "\n"))
	}
	return out
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// -rewrite writes each example's real output over what its page shows,
// leaves the rest of the page as it was, and refuses an elided example.
func TestDocs_RewriteReplacesOnlyTheOutput(t *testing.T) {
	page := "intro\n```\n$ handoffcheck version \\\n    --json\nold 1\nold 2\n\n$ handoffcheck help\nkept\n```\nend\n"
	exs, err := parseExamples("docs/x.md", page)
	if err != nil || len(exs) != 2 {
		t.Fatalf("%d examples, %v", len(exs), err)
	}
	ex := exs[0]
	if got := strings.Join(ex.want, "|"); got != "old 1|old 2|" {
		t.Fatalf("want lines %q", got)
	}
	t.Chdir(t.TempDir())
	if err := os.MkdirAll("docs", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("docs/x.md", []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	rewritePages(t, map[string][]docFix{"docs/x.md": {{from: ex.from, n: 2, lines: []string{"new 1", "new 2", "new 3"}}}})
	got, err := os.ReadFile("docs/x.md")
	if err != nil {
		t.Fatal(err)
	}
	want := "intro\n```\n$ handoffcheck version \\\n    --json\nnew 1\nnew 2\nnew 3\n\n$ handoffcheck help\nkept\n```\nend\n"
	if string(got) != want {
		t.Errorf("rewritten page:\n%s\nwant:\n%s", got, want)
	}
	if unrewritable("check", []string{"a", "..."}) == "" || unrewritable("check", []string{"a", "b..."}) == "" ||
		unrewritable("live", []string{"a"}) == "" || unrewritable("check", []string{"a"}) != "" || unrewritable("check", []string{"...", "a"}) != "" {
		t.Error("an elided or loose example must be refused, a plain one or one showing its last lines rewritten")
	}
	if got := strings.Join(rewritten([]string{"...", "x", "y"}, []string{"a", "b", "c", "d"}), "|"); got != "...|c|d" {
		t.Errorf("a page showing the last two lines gets %q, want ...|c|d", got)
	}
}
