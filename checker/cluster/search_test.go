package cluster

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The drivers step the composed system (checker/system); the search
// (checker: the explorer, walks, reports) is a consumer of that system
// like they are, not a layer below them. A driver that imported the
// search would carry its storage and reduction modes and could reach
// states around the system's seam. Every package under checker/ other
// than the search itself, and the tests of each, stay off it; a package
// that truly needs the search is listed in needsSearch with the reason.
func TestNoDriverImportsTheSearch(t *testing.T) {
	const search = "github.com/handoffcheck/handoffcheck/checker"
	needsSearch := map[string]string{
		search + "/explore": "the page is a front end of the search: it steps a run in the search's sessions, opens its trace files and searches from a state",
		search + "/repro":   "a reproduction is of a counterexample the search found: it replays it and writes it as the search's trace file",
	}
	// Packages whose code stays off the search but whose tests use it.
	testsNeedSearch := map[string]string{
		search + "/props": "the judge is held to whole searches: its cache against evaluation on every state, its cost in a benchmark",
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the drivers' imports: %v", err)
	}
	out, err := exec.Command(goBin, "list", search+"/...").Output()
	if err != nil {
		t.Fatalf("go list %s/...: %v", search, err)
	}
	pkgs := strings.Fields(string(out))
	for _, want := range []string{search + "/system", search + "/sim", search + "/live", search + "/conform", search + "/cluster"} {
		if !slices.Contains(pkgs, want) {
			t.Errorf("go list %s/... does not list %s", search, want)
		}
	}
	for _, p := range pkgs {
		if p == search || needsSearch[p] != "" {
			continue
		}
		deps, err := exec.Command(goBin, "list", "-deps", p).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", p, err)
		}
		if slices.Contains(strings.Fields(string(deps)), search) {
			t.Errorf("%s imports the search (%s), directly or through another package; it needs only the composed system (%s/system)", p, search, search)
		}
		tests, err := exec.Command(goBin, "list", "-f", `{{join .TestImports " "}} {{join .XTestImports " "}}`, p).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", p, err)
		}
		if slices.Contains(strings.Fields(string(tests)), search) && testsNeedSearch[p] == "" {
			t.Errorf("the tests of %s import the search (%s)", p, search)
		}
	}
}
