package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// rewriteTests finds, in every test file of the module, the test functions
// that honour -rewrite: they read the flag (a variable named rewrite, or
// flag.Lookup("rewrite")) or run datadriven, which registers it. The
// result maps a package path ("./checker/sim") to its test names.
func rewriteTests(t *testing.T) map[string][]string {
	t.Helper()
	return testsWhere(t, func(fd *ast.FuncDecl) bool {
		uses := false
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Ident:
				uses = uses || n.Name == "rewrite"
			case *ast.CallExpr:
				if s, ok := n.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Lookup" && len(n.Args) == 1 {
					if l, ok := n.Args[0].(*ast.BasicLit); ok && l.Value == `"rewrite"` {
						uses = true
					}
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "datadriven" {
					uses = true
				}
			}
			return !uses
		})
		return uses
	})
}

// testsWhere finds, in every test file of the module, the test functions
// match accepts: the result maps a package path ("./checker/sim") to
// their names.
func testsWhere(t *testing.T, match func(fd *ast.FuncDecl) bool) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && p != repoRoot) {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !strings.HasPrefix(fd.Name.Name, "Test") || fd.Body == nil || !match(fd) {
				continue
			}
			rel, err := filepath.Rel(repoRoot, filepath.Dir(p))
			if err != nil {
				return err
			}
			pkg := "./" + filepath.ToSlash(rel)
			out[pkg] = append(out[pkg], fd.Name.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// makeTarget returns the recipe lines of a Makefile target, and its
// prerequisites.
func makeTarget(mk, name string) (prereqs []string, recipe string, ok bool) {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `:([^\n=]*)\n((?:\t.*\n)*)`).FindStringSubmatch(mk)
	if m == nil {
		return nil, "", false
	}
	return strings.Fields(m[1]), m[2], true
}

// make rewrite is the one regeneration command: it runs go generate, and
// every test that honours -rewrite, in its package, with -rewrite. A golden
// added later without a line here fails this test.
func TestMake_RewriteRunsEveryGolden(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	mk := string(data)
	prereqs, recipe, ok := makeTarget(mk, "rewrite")
	if !ok {
		t.Fatal("Makefile: no rewrite target")
	}
	// What the target runs: its recipe and its prerequisites' recipes.
	runs := recipe
	for _, p := range prereqs {
		_, r, ok := makeTarget(mk, p)
		if !ok {
			t.Fatalf("Makefile: rewrite needs %s, which is no target", p)
		}
		runs += r
	}
	if !strings.Contains(runs, "$(GO) generate ./...") {
		t.Errorf("make rewrite does not run go generate ./...")
	}
	// Each package:regexp of REWRITE_TESTS, and the -rewrite runs written
	// out in the recipes.
	patterns := map[string][]string{}
	block := regexp.MustCompile(`(?m)^REWRITE_TESTS\s*=((?:.*\\\n)*.*)$`).FindStringSubmatch(mk)
	if block == nil {
		t.Fatal("Makefile: no REWRITE_TESTS")
	}
	if !strings.Contains(recipe, "$(REWRITE_TESTS)") || !strings.Contains(recipe, "-rewrite") {
		t.Errorf("the rewrite recipe does not run REWRITE_TESTS with -rewrite:\n%s", recipe)
	}
	for _, f := range strings.Fields(strings.ReplaceAll(block[1], `\`, " ")) {
		pkg, re, _ := strings.Cut(strings.Trim(f, "'"), ":")
		patterns[pkg] = append(patterns[pkg], strings.ReplaceAll(re, "$$", "$"))
	}
	written := regexp.MustCompile(`\$\(GO\) test (\./\S+) -run '([^']+)' -rewrite`)
	for _, m := range written.FindAllStringSubmatch(runs, -1) {
		patterns[m[1]] = append(patterns[m[1]], strings.ReplaceAll(m[2], "$$", "$"))
	}
	tests := rewriteTests(t)
	if len(tests) < 5 {
		t.Fatalf("found tests that honour -rewrite in %d packages, want the 5 or more the module has: %v", len(tests), tests)
	}
	pkgs := make([]string, 0, len(tests))
	for p := range tests {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, pkg := range pkgs {
		for _, name := range tests[pkg] {
			covered := false
			for _, re := range patterns[pkg] {
				r, err := regexp.Compile(re)
				if err != nil {
					t.Fatalf("Makefile: %s: -run %q: %v", pkg, re, err)
				}
				covered = covered || r.MatchString(name)
			}
			if !covered {
				t.Errorf("make rewrite does not rewrite %s %s, which honours -rewrite (add it to REWRITE_TESTS)", pkg, name)
			}
		}
	}
}

// .ci/run runs the freshness check, gofmt, go vet, staticcheck, the
// tests and the long tests (make test-long), and prints how long each took; a failing step fails the run
// without hiding the steps after it. Here go, gofmt and make are stand-ins
// that record how they were called.
func TestCI_RunTimesTestsAndLinters(t *testing.T) {
	bin := t.TempDir()
	calls := filepath.Join(bin, "calls")
	fake := func(name, body string) {
		script := "#!/bin/sh\necho \"" + name + " $*\" >> " + calls + "\n" + body + "\n"
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// go vet fails: the run must say so, go on, and exit 1.
	fake("go", `case "$1" in version) echo "go version stand-in";; vet) exit 1;; esac; exit 0`)
	fake("gofmt", "exit 0")
	fake("make", "exit 0")
	cmd := exec.Command("bash", filepath.Join(repoRoot, ".ci", "run"))
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "GO=")
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf(".ci/run with a failing go vet: %v, want exit 1\n%s", err, out)
	}
	rec, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"go vet ./...", "go tool staticcheck ./...", "go test -count=1 -timeout 30m ./...", "gofmt -l .", "make --no-print-directory GO=go fresh",
		"make --no-print-directory GO=go test-long"} {
		if !strings.Contains(string(rec), want+"\n") {
			t.Errorf(".ci/run did not run %q; it ran:\n%s", want, rec)
		}
	}
	for _, step := range []string{"fresh", "gofmt", "vet", "staticcheck", "test", "test-long"} {
		result := "ok"
		if step == "vet" {
			result = "FAILED"
		}
		if !regexp.MustCompile(`(?m)^== ` + step + `: ` + result + ` in [0-9]+ s$`).Match(out) {
			t.Errorf(".ci/run printed no time for %s (%s):\n%s", step, result, out)
		}
		if !regexp.MustCompile(`(?m)^` + step + ` +` + result + ` +[0-9]+$`).Match(out) {
			t.Errorf(".ci/run's summary has no line for %s (%s):\n%s", step, result, out)
		}
	}
}
