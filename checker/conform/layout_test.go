package conform

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"
)

// The judge is read by concept (judge.go: the judge and its attempts;
// node.go: nodes and the visited set; consume.go: consuming facts;
// expand.go: expanding; verdict.go: verdicts), not as one file of every
// method: a file past maxFileLines is a concept that wants a file of its
// own.
const maxFileLines = 700

func TestJudgeSplitByConcept(t *testing.T) {
	for _, name := range []string{"judge.go", "node.go", "consume.go", "expand.go", "verdict.go"} {
		if _, err := os.Stat(name); err != nil {
			t.Errorf("%s: %v; the judge's concepts each have a file", name, err)
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for sc := bufio.NewScanner(f); sc.Scan(); {
			n++
		}
		f.Close()
		if n > maxFileLines {
			t.Errorf("%s has %d lines, more than %d", name, n, maxFileLines)
		}
	}
}
