package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/spec"
)

const inputsSmallConfig = "../../testdata/configs/small.json"

// wantRefused fails unless a command exits 2 with nothing on stdout and
// every want on stderr.
func wantRefused(t *testing.T, args []string, want ...string) string {
	t.Helper()
	code, out, errOut := runCLI(t, args...)
	if code != exitUsage || out != "" {
		t.Fatalf("%v: exit %d, stdout %q, stderr %q; want exit 2 and no output", args, code, out, errOut)
	}
	for _, w := range want {
		if !strings.Contains(errOut, w) {
			t.Errorf("%v: stderr does not say %q:\n%s", args, w, errOut)
		}
	}
	return errOut
}

// A hit larger than the prompt would be priced as more reused tokens than
// the prompt has: it is refused.
func TestPrice_HitAbovePromptRefused(t *testing.T) {
	wantRefused(t, []string{"price", "--bytes-per-token", "1000", "--prompt-tokens", "100", "--hit-tokens", "112"},
		"--hit-tokens 112: more than the 100 tokens of the prompt")
	wantRefused(t, []string{"price", "--groups", groupsFile("glm-hybrid.json"), "--prompt-tokens", "1001", "--hit-tokens", "100000"},
		"--hit-tokens 100000: more than the 1001 tokens of the prompt")
	// The whole prompt is a hit like any other.
	if code, _, errOut := runCLI(t, "price", "--bytes-per-token", "1000", "--prompt-tokens", "100", "--hit-tokens", "100"); code != exitOK {
		t.Fatalf("a hit of the whole prompt: exit %d: %s", code, errOut)
	}
}

// A payload that does not fit the byte count is refused, never wrapped.
func TestPrice_OverflowRefused(t *testing.T) {
	wantRefused(t, []string{"price", "--bytes-per-token", "1000000000000", "--prompt-tokens", "100000000"},
		"100000000 moved tokens × 1000000000000 bytes per token overflow the byte count")
	wantRefused(t, []string{"price", "--bytes-per-token", "1000000000000", "--prompt-tokens", "100000000", "--json"}, "overflow")
}

// writeSpec writes a spec as a file and returns its path and lines.
func writeSpec(t *testing.T, s *spec.Spec) (string, []string) {
	t.Helper()
	data, err := s.Format()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "variant.json")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return file, strings.Split(string(data), "\n")
}

// lineOf is the 1-based line of the only line holding sub.
func lineOf(t *testing.T, lines []string, sub string) int {
	t.Helper()
	found := 0
	for i, l := range lines {
		if strings.Contains(l, sub) {
			if found > 0 {
				t.Fatalf("%q is on lines %d and %d", sub, found, i+1)
			}
			found = i + 1
		}
	}
	if found == 0 {
		t.Fatalf("%q is on no line", sub)
	}
	return found
}

// rowOpen is the line opening the row whose why is why.
func rowOpen(t *testing.T, lines []string, why string) int {
	t.Helper()
	l := lineOf(t, lines, fmt.Sprintf("%q", why))
	for l > 0 && strings.TrimSpace(lines[l-1]) != "{" {
		l--
	}
	return l
}

// Whatever check refuses, validate refuses first, at the row's file:line:
// a row with more actions than the checker holds.
func TestValidate_RefusesWhatCheckRefuses(t *testing.T) {
	s := spec.Default()
	i := s.Source.Lookup(spec.SourceFirst, "Computing", "PrefillPinned")
	row := &s.Source.Rows[i]
	for _, a := range s.Source.Actions {
		if len(row.Actions) > spec.MaxActions {
			break
		}
		if !strings.Contains(" "+strings.Join(row.Actions, " ")+" ", " "+a.Name+" ") {
			row.Actions = append(row.Actions, a.Name)
		}
	}
	row.Why = "a row with one action too many"
	file, lines := writeSpec(t, s)
	at := fmt.Sprintf("%s:%d: ", file, rowOpen(t, lines, row.Why))
	wantRefused(t, []string{"validate", file}, at, "has 9 actions, at most 8 are supported")
	// check refuses it the same way, before exploring anything.
	wantRefused(t, []string{"check", "--config", inputsSmallConfig, "--spec", file}, at, "has 9 actions")
}

// Vocabulary problems and unreachable states carry file:line.
func TestValidate_VocabularyAndReachabilityAtTheirLines(t *testing.T) {
	s := spec.Default()
	s.Destination.Actions = append(s.Destination.Actions, spec.Action{Name: "Levitate", Doc: "not a thing the model knows"})
	s.Source.States = append(s.Source.States, spec.State{Name: "Limbo", Terminal: true, Outcome: spec.OutcomeFailure, Doc: "no row leads here"})
	file, lines := writeSpec(t, s)
	wantRefused(t, []string{"validate", file},
		fmt.Sprintf("%s:%d: destination table: action \"Levitate\" is not in the vocabulary the model knows", file, lineOf(t, lines, `"name": "Levitate"`)-1),
		fmt.Sprintf("%s:%d: source table: state \"Limbo\" is refused: no row leads to it", file, lineOf(t, lines, `"name": "Limbo"`)-1))
}

// writeTrace writes a trace of the small configuration with the given
// move lines.
func writeTrace(t *testing.T, moves ...string) string {
	t.Helper()
	cfg, err := os.ReadFile(inputsSmallConfig)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `{"schema": %q, "run": "vllm", "config": %s}`+"\n", "handoffcheck.trace/v1", strings.Join(strings.Fields(string(cfg)), " "))
	for i, m := range moves {
		fmt.Fprintf(&b, `{"step": %d, "move": %q}`+"\n", i+1, m)
	}
	file := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// A move naming a handoff the configuration lacks says how many it has.
func TestReplay_OutOfRangeHandoff(t *testing.T) {
	file := writeTrace(t, "route-prefill h=0 worker=0", "deliver-request h=2")
	wantRefused(t, []string{"replay", file},
		file+`:3: checker: bad trace: move "deliver-request h=2": handoff 2 is out of range: the configuration has 1 handoff (h=0)`)
}

// A move that is not enabled lists the enabled ones, one per line.
func TestReplay_EnabledMovesOnePerLine(t *testing.T) {
	file := writeTrace(t, "route-prefill h=0 worker=0", "compute h=0")
	// The steps before the refused one are printed as they replay.
	code, _, errOut := runCLI(t, "replay", file)
	if code != exitUsage || !strings.Contains(errOut, file+":3: step 2: ") || !strings.Contains(errOut, "enabled here:\n  ") {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	i := 0
	for i < len(lines) && !strings.HasSuffix(lines[i], "enabled here:") {
		i++
	}
	moves := lines[i+1:]
	if len(moves) < 2 || !slicesContain(moves, "  deliver-request h=0") {
		t.Fatalf("want the enabled moves one per line, deliver-request h=0 among them:\n%s", errOut)
	}
	for _, m := range moves {
		if _, err := system.ParseMove(strings.TrimSpace(m), nil); err != nil || !strings.HasPrefix(m, "  ") {
			t.Errorf("line %q is not one indented move: %v", m, err)
		}
	}
}

func slicesContain(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Inputs are read with a bound: an endless file is refused at once, naming
// the file and the limit.
func TestInputs_SizeBounded(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	for _, args := range [][]string{
		{"validate", "/dev/zero"},
		{"replay", "/dev/zero"},
		{"price", "--groups", "/dev/zero", "--prompt-tokens", "10"},
	} {
		wantRefused(t, args, "/dev/zero: jsonfile: input too large: more than 16 MiB")
	}
}

// A key given twice is refused with file:line in every input these
// commands read.
func TestInputs_DuplicateKeysRefused(t *testing.T) {
	dir := t.TempDir()
	groups := filepath.Join(dir, "groups.json")
	os.WriteFile(groups, []byte("{\"vllm_version\": \"0.32.0\",\n \"vllm_version\": \"0.31.0\", \"groups\": []}"), 0o644)
	wantRefused(t, []string{"price", "--groups", groups, "--prompt-tokens", "10"}, groups+`:2: model: bad transfer profile: key "vllm_version" appears twice`)

	data, err := spec.Default().Format()
	if err != nil {
		t.Fatal(err)
	}
	variant := filepath.Join(dir, "variant.json")
	os.WriteFile(variant, []byte(strings.Replace(string(data), `"name": "handoff",`, `"name": "handoff", "name": "again",`, 1)), 0o644)
	wantRefused(t, []string{"validate", variant}, variant+`:3: spec: invalid: key "name" appears twice`)

	trace := writeTrace(t)
	text, _ := os.ReadFile(trace)
	os.WriteFile(trace, []byte(strings.Replace(string(text), `"run": "vllm",`, `"run": "vllm", "run": "sglang",`, 1)), 0o644)
	wantRefused(t, []string{"replay", trace}, trace+`:1: checker: bad trace: key "run" appears twice`)
}
