package cluster

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The drivers differ only in when they take moves: a virtual clock, real
// processes, a log. What they share lives below them, here, so none of
// them builds on another; a driver importing a driver would let one
// driver's clock or bookkeeping leak into the others' verdicts.
func TestNoDriverImportsAnother(t *testing.T) {
	const mod = "github.com/handoffcheck/handoffcheck/"
	drivers := []string{mod + "checker/sim", mod + "checker/live", mod + "checker/conform"}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the drivers' imports: %v", err)
	}
	for _, d := range drivers {
		out, err := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}}", d).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", d, err)
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, d) {
			t.Fatalf("go list -deps %s does not list the package itself: %q", d, deps)
		}
		for _, o := range drivers {
			if o != d && slices.Contains(deps, o) {
				t.Errorf("%s imports %s (directly or through another package); drivers share the cluster layer, not each other", d, o)
			}
		}
	}
}
