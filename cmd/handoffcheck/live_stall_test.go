package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/spec"
)

// stuckTables writes the built-in tables with one source-first row
// changed: the reads' end moves the source to Aborting without asking
// its core for the release, so it waits there for ever for a release
// nothing applies, holding its pin, with no deadline armed. The
// simulator names that BoundedReclaim once the destination's outcome is
// made (the source owes its pin back).
func stuckTables(t *testing.T) string {
	t.Helper()
	data, err := json.Marshal(spec.Default())
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	changed := 0
	for _, r := range s["source"].(map[string]any)["rows"].([]any) {
		row := r.(map[string]any)
		from, _ := row["from"].([]any)
		if row["event"] == "ReaderCompleted" && slices.Equal(from, []any{"Pinned"}) {
			row["to"] = "Aborting"
			row["actions"] = []any{"DisarmLease"}
			row["why"] = "the reads ended; no release is asked for"
			changed++
		}
	}
	if changed != 1 {
		t.Fatalf("the built-in tables have %d rows for ReaderCompleted in Pinned alone, want 1", changed)
	}
	s["name"] = "reads-end-without-release"
	out, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "stuck.json")
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestCLI_LiveStuckAttemptEnds: an attempt whose source is stuck with
// nothing enabled does not make live wait for ever: the run ends with
// the invariant simulate names for the same tables and workload, naming
// the attempt and its sides, exit 1, and its logs are still judged.
func TestCLI_LiveStuckAttemptEnds(t *testing.T) {
	// Waits (a build, a process, a silence) with little CPU: beside the
	// other tests that do.
	t.Parallel()
	w := liveWorkload(t, 2, "10")
	var rep struct {
		Stall *struct {
			Invariant    string   `json:"invariant"`
			Attempt      string   `json:"attempt"`
			Sides        []string `json:"sides"`
			Inconclusive bool     `json:"inconclusive"`
		} `json:"stall"`
		Conform *struct {
			Verdict string `json:"verdict"`
		} `json:"conform"`
	}
	tables := stuckTables(t)
	code, simOut, errOut := runCLI(t, "simulate", "--workload", w, "--spec", tables)
	m := regexp.MustCompile(`VIOLATION ([A-Za-z]+) at `).FindStringSubmatch(simOut)
	if code != exitViolation || m == nil {
		t.Fatalf("simulate on the stuck tables: exit %d, want a violation\n%s%s", code, simOut, errOut)
	}
	code, stdout, errOut := runCLI(t, "live", "--workload", w, "--out", t.TempDir(), "--spec", tables, "--adapt-scale=false", "--json")
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("exit %d: %v\n%s\n%s", code, err, errOut, stdout)
	}
	s := rep.Stall
	if code != exitViolation || s == nil || s.Inconclusive || s.Invariant != m[1] || s.Attempt == "" || len(s.Sides) != 2 ||
		!strings.Contains(s.Sides[0], "state Aborting") || rep.Conform == nil || rep.Conform.Verdict == "" {
		t.Fatalf("exit %d, want a stall naming %s (as simulate does) with the source in Aborting, and the logs judged:\n%s\n%s", code, m[1], errOut, stdout)
	}
}
