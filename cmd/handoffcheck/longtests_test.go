package main

import (
	"go/ast"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// longEnv is set by make test-long (which CI runs as its own step): the
// tests that take minutes on a busy machine run only then, so that make
// test stays within a few minutes on two cores.
const longEnv = "HANDOFFCHECK_LONG"

// longOnly skips t unless make test-long runs it.
func longOnly(t *testing.T, what string) {
	t.Helper()
	if os.Getenv(longEnv) == "" {
		t.Skipf("%s: make test-long runs it (%s=1; CI runs it too)", what, longEnv)
	}
}

// longTests finds, in every test file of the module, the test functions
// that skip unless make test-long runs them (they call longOnly): the
// result maps a package path ("./checker") to its test names.
func longTests(t *testing.T) map[string][]string {
	t.Helper()
	return testsWhere(t, func(fd *ast.FuncDecl) bool {
		long := false
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "longOnly" {
					long = true
				}
			}
			return !long
		})
		return long
	})
}

// A test that go test ./... skips for taking minutes still runs in CI:
// make test-long runs every such test (LONG_TESTS names each), with the
// variable that lets it run, and .ci/run runs make test-long. A long test
// added later without a line in LONG_TESTS fails this test.
func TestMake_LongTestsRunInCI(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	mk := string(data)
	_, recipe, ok := makeTarget(mk, "test-long")
	if !ok {
		t.Fatal("Makefile: no test-long target")
	}
	if !strings.Contains(recipe, "$(LONG_TESTS)") || !strings.Contains(recipe, "HANDOFFCHECK_LONG=1 $(GO) test") {
		t.Errorf("the test-long recipe does not run LONG_TESTS with HANDOFFCHECK_LONG=1:\n%s", recipe)
	}
	block := regexp.MustCompile(`(?m)^LONG_TESTS\s*=((?:.*\\\n)*.*)$`).FindStringSubmatch(mk)
	if block == nil {
		t.Fatal("Makefile: no LONG_TESTS")
	}
	patterns := map[string][]string{}
	for _, f := range strings.Fields(strings.ReplaceAll(block[1], `\`, " ")) {
		pkg, re, _ := strings.Cut(strings.Trim(f, "'"), ":")
		patterns[pkg] = append(patterns[pkg], strings.ReplaceAll(re, "$$", "$"))
	}
	ci, err := os.ReadFile(filepath.Join(repoRoot, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^step test-long make --no-print-directory GO="\$GO" test-long$`).Match(ci) {
		t.Errorf(".ci/run does not run make test-long as a step of its own:\n%s", ci)
	}
	tests := longTests(t)
	if len(tests) == 0 {
		t.Fatal("no test calls longOnly: make test-long has nothing to run")
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
					t.Fatalf("Makefile: LONG_TESTS %s: -run %q: %v", pkg, re, err)
				}
				covered = covered || r.MatchString(name)
			}
			if !covered {
				t.Errorf("make test-long does not run %s %s, which go test ./... skips (add it to LONG_TESTS)", pkg, name)
			}
		}
	}
}
