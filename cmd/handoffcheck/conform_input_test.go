package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The same log given twice to conform (the same path, a link to it, a
// copy) is refused with exit 2 naming both arguments, not judged as facts
// that happened twice (a false InFlightAccounting rejection).
func TestConform_SameLogTwice(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(logsDir, "valid", "one-attempt.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(dir, "a.jsonl")
	cp := filepath.Join(dir, "copy.jsonl")
	link := filepath.Join(dir, "link.jsonl")
	for _, p := range []string{a, cp} {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a.jsonl", link); err != nil {
		t.Fatal(err)
	}
	for _, second := range []string{a, link, cp} {
		code, out, errOut := runCLI(t, "conform", a, second)
		if code != exitUsage || !strings.Contains(errOut, a) || !strings.Contains(errOut, second) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("conform %s %s: exit %d, want %d with one line naming both\n%s%s", a, second, code, exitUsage, out, errOut)
		}
	}
	mock := filepath.Join(logsDir, "mocker", "source-first.jsonl")
	if code, out, errOut := runCLI(t, "conform", "--from", "mocker", mock, mock); code != exitUsage || !strings.Contains(errOut, "same file") {
		t.Errorf("--from mocker, one log twice: exit %d\n%s%s", code, out, errOut)
	}
}

// A header whose configuration names another policy or engine than the
// header itself is refused (exit 2, file:1, what was expected), not
// judged under one of the two.
func TestConform_HeaderConfigDisagrees(t *testing.T) {
	cfg, err := os.ReadFile(filepath.Join(logsDir, "config.json")) // source-first, vllm
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(logsDir, "valid", "one-attempt.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(string(data), "\n", 2)
	compact := strings.Join(strings.Fields(string(cfg)), "")
	dir := t.TempDir()
	for _, c := range []struct{ from, to, want string }{
		{`"policy":"source-first"`, `"policy":"destination-first"`, `the configuration's policy is "source-first" and the header's "destination-first"`},
		{`"engine":"vllm"`, `"engine":"sglang"`, `the configuration's engine is "vllm" and the header's "sglang"`},
	} {
		head := strings.Replace(strings.TrimSuffix(lines[0], "}"), c.from, c.to, 1) + `,"config":` + compact + "}"
		p := filepath.Join(dir, "h.jsonl")
		if err := os.WriteFile(p, []byte(head+"\n"+lines[1]), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runCLI(t, "conform", p)
		if code != exitUsage || !strings.Contains(errOut, p+":1: ") || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, want %d at %s:1 saying %s\n%s%s", c.to, code, exitUsage, p, c.want, out, errOut)
		}
	}
	// The same configuration under the header's own policy and engine is
	// judged.
	head := strings.TrimSuffix(lines[0], "}") + `,"config":` + compact + "}"
	p := filepath.Join(dir, "ok.jsonl")
	if err := os.WriteFile(p, []byte(head+"\n"+lines[1]), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI(t, "conform", p); code != exitOK {
		t.Errorf("agreeing configuration: exit %d\n%s%s", code, out, errOut)
	}
}
