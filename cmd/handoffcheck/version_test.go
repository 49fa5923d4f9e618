package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A binary built the way make install builds it names the revision it was
// built from, whether or not the toolchain recorded it (it does not in a
// git worktree, nor with GOFLAGS=-buildvcs=false): never a bare "devel".
func TestVersion_InstalledBinaryNamesItsRevision(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	// Waits (a build, a process, a silence) with little CPU: beside the
	// other tests that do.
	t.Parallel()
	out, err := exec.Command("make", "-s", "-n", "-C", "../..", "install").Output()
	if err != nil {
		t.Skipf("make: %v", err)
	}
	// The Makefile's own recipe, with go build into a file of the test
	// instead of go install into GOPATH/bin.
	recipe := strings.TrimSpace(string(out))
	_, ldflags, ok := strings.Cut(recipe, `-ldflags "`)
	ldflags, _, ok2 := strings.Cut(ldflags, `"`)
	if !ok || !ok2 || !strings.Contains(ldflags, "main.stampRevision=") {
		t.Fatalf("make install does not stamp the revision: %s", recipe)
	}
	rev, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("git: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "handoffcheck")
	build := exec.Command("go", "build", "-buildvcs=false", "-ldflags", ldflags, "-o", bin, ".")
	build.Env = os.Environ()
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	got, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "handoffcheck devel (" + strings.TrimSpace(string(rev))[:12]; !strings.HasPrefix(string(got), want) {
		t.Fatalf("--version printed %q, want it to start %q", got, want)
	}
}
