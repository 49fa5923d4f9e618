package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// docGo renders doc.go from the registry: the commands registered in
// `commands` and the exit codes of exitCodes, the very lists --help prints.
func docGo() string {
	var b strings.Builder
	b.WriteString(`// Command handoffcheck verifies the prefill-to-decode KV handoff lifecycle
// of disaggregated LLM serving. It parses flags and calls the packages;
// reports are rendered by the packages that compute them.
//
`)
	width := 0
	for _, n := range commandNames() {
		width = max(width, len(n))
	}
	for _, n := range commandNames() {
		fmt.Fprintf(&b, "//\thandoffcheck %-*s  %s\n", width, n, commands[n].summary)
	}
	b.WriteString(`//
// Exit codes, the same for every command (docs/cli.md):
//
`)
	for _, x := range exitCodes() {
		fmt.Fprintf(&b, "//\t%d  %s\n", x.code, x.text)
	}
	b.WriteString(`//
// handoffcheck help COMMAND prints a command's flags with their defaults and
// the exit codes it can return.
//
// This comment is rendered from the command registry by
// TestDocGo_IsTheRegistry (go test ./cmd/handoffcheck -run
// TestDocGo_IsTheRegistry -rewrite, or make rewrite): edit the registry,
// not this file.
package main
`)
	return b.String()
}

// doc.go lists every command and exit code that --help lists: it lacked
// four commands (conform, live, merge, worker) and exit code 4 when it was
// written by hand.
func TestDocGo_IsTheRegistry(t *testing.T) {
	want := docGo()
	if *rewrite {
		if err := os.WriteFile("doc.go", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, string(got)); d != "" {
		t.Errorf("doc.go is not what the registry renders (go test ./cmd/handoffcheck -run TestDocGo_IsTheRegistry -rewrite; -registry +doc.go):\n%s", d)
	}
	// And --help prints the same lists.
	code, out, _ := runCLI(t, "--help")
	if code != exitOK {
		t.Fatalf("--help: exit %d", code)
	}
	for _, n := range commandNames() {
		if !strings.Contains(out, fmt.Sprintf("  %-9s %s\n", n, commands[n].summary)) {
			t.Errorf("--help does not list %s", n)
		}
	}
	for _, x := range exitCodes() {
		if !strings.Contains(out, fmt.Sprintf("  %d  %s\n", x.code, x.text)) {
			t.Errorf("--help does not list exit code %d", x.code)
		}
	}
}
