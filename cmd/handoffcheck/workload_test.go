package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/sim/workload"
)

// TestWorkload_GenDeterministic: the same flags and seed give the same
// bytes; another seed gives others.
func TestWorkload_GenDeterministic(t *testing.T) {
	for _, extra := range [][]string{nil, {"--arrival", "bursty", "--burst-factor", "8"}, {"--prefix-groups", "0", "--cancel-fraction", "0"}} {
		args := append([]string{"workload", "gen", "--requests", "300", "--seed", "5"}, extra...)
		code, a, errOut := runCLI(t, args...)
		if code != exitOK || errOut != "" {
			t.Fatalf("%v: exit %d, stderr %s", args, code, errOut)
		}
		_, b, _ := runCLI(t, args...)
		if a != b {
			t.Fatalf("%v: two runs differ", args)
		}
		if n := strings.Count(a, "\n"); n != 301 {
			t.Fatalf("%v: %d lines, want a header and 300 requests", args, n)
		}
		_, other, _ := runCLI(t, append(args, "--seed", "6")...)
		if other == a {
			t.Fatalf("%v: seeds 5 and 6 give the same workload", args)
		}
	}
}

// TestWorkload_GenDefaultIsTheEmbeddedDefault: the flags' defaults are
// the embedded default workload's configuration.
func TestWorkload_GenDefaultIsTheEmbeddedDefault(t *testing.T) {
	code, out, errOut := runCLI(t, "workload", "gen", "--requests", "200", "--name", "default")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if out != string(workload.DefaultJSONL()) {
		t.Fatal("workload gen --requests 200 --name default is not the embedded default workload")
	}
}

// TestWorkload_GenCheckRoundTrip: what gen writes, check reads and
// summarizes.
func TestWorkload_GenCheckRoundTrip(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "w.jsonl")
	code, out, errOut := runCLI(t, "workload", "gen", "--requests", "50", "--rate", "10", "--prompt", "fixed:100",
		"--output", "uniform:10-20", "--prefix-groups", "2", "--prefix-share", "1", "--prefix", "fixed:60",
		"--cancel-fraction", "1", "--cancel-after", "fixed:1", "--out", file)
	if code != exitOK || out != "" || errOut != "" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "workload", "check", file, "../../checker/sim/workload/default.jsonl")
	if code != exitOK || errOut != "" {
		t.Fatalf("check: exit %d, stderr %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one line per file:\n%s", out)
	}
	for _, want := range []string{file + ": 50 requests, arrivals over ", " s, mean prompt 100.0 tokens, mean output 1", " tokens, 2 prefix groups (50 requests), 50 cancels"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("summary lacks %q: %s", want, lines[0])
		}
	}
	if want := "../../checker/sim/workload/default.jsonl: 200 requests, arrivals over 5.073 s, mean prompt 2184.2 tokens, mean output 121.7 tokens, 8 prefix groups (95 requests), 11 cancels"; lines[1] != want {
		t.Errorf("default summary:\n%s\nwant:\n%s", lines[1], want)
	}
}

// TestWorkload_CheckRefusals: a refused file prints its file:line error
// and exits 2; the other files are still summarized.
func TestWorkload_CheckRefusals(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	data := `{"format":"handoffcheck.workload/v1"}` + "\n" +
		`{"arrival_ms":1,"prompt_tokens":2,"output_tokens":3}` + "\n" +
		`{"arrival_ms":2,"prompt_tokens":0,"output_tokens":3}` + "\n"
	if err := os.WriteFile(bad, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.jsonl")
	if err := os.WriteFile(empty, []byte(`{"format":"handoffcheck.workload/v1"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "workload", "check", bad, empty, filepath.Join(dir, "missing.jsonl"))
	if code != exitUsage {
		t.Fatalf("exit %d, want 2", code)
	}
	if want := bad + ":3: workload: bad workload: prompt_tokens 0, want 1 to 1048576"; !strings.Contains(errOut, "handoffcheck workload check: "+want+"\n") {
		t.Errorf("stderr lacks %q:\n%s", want, errOut)
	}
	if !strings.Contains(errOut, "missing.jsonl: no such file or directory") {
		t.Errorf("stderr lacks the missing file:\n%s", errOut)
	}
	if out != empty+": 0 requests\n" {
		t.Errorf("stdout %q", out)
	}
}

func TestWorkload_UsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"workload"}, "handoffcheck workload: want a subcommand: gen or check\nrun 'handoffcheck help workload' for usage\n"},
		{[]string{"workload", "simulate"}, `handoffcheck workload: unknown subcommand "simulate"; want gen or check`},
		{[]string{"workload", "gen", "extra"}, "handoffcheck workload gen: unexpected argument \"extra\"\nrun 'handoffcheck workload gen --help' for usage\n"},
		{[]string{"workload", "gen", "--bogus"}, "handoffcheck workload gen: flag provided but not defined: -bogus\nrun 'handoffcheck workload gen --help' for usage\n"},
		{[]string{"workload", "gen", "--requests", "0"}, "handoffcheck workload gen: --requests 0, want 1 or more\n"},
		{[]string{"workload", "gen", "--requests", "x"}, `handoffcheck workload gen: invalid value "x" for flag -requests`},
		{[]string{"workload", "gen", "--rate", "-1"}, "handoffcheck workload gen: --rate -1, want a positive number of requests per second\n"},
		{[]string{"workload", "gen", "--rate", "NaN"}, "handoffcheck workload gen: --rate NaN, want a positive number of requests per second\n"},
		{[]string{"workload", "gen", "--arrival", "uniform"}, "handoffcheck workload gen: --arrival \"uniform\", want poisson or bursty\n"},
		{[]string{"workload", "gen", "--burst-factor", "2"}, "handoffcheck workload gen: --burst-factor applies to --arrival bursty\n"},
		{[]string{"workload", "gen", "--arrival", "bursty", "--burst-factor", "0.5"}, "handoffcheck workload gen: --burst-factor 0.5, want 1 to 1000000"},
		{[]string{"workload", "gen", "--arrival", "bursty", "--burst-off-ms", "0"}, "handoffcheck workload gen: --burst-off-ms 0, want 0.001 to 100000000000 milliseconds\n"},
		{[]string{"workload", "gen", "--arrival", "bursty", "--burst-on-ms", "-2"}, "handoffcheck workload gen: --burst-on-ms -2, want 0.001 to 100000000000 milliseconds\n"},
		{[]string{"workload", "gen", "--arrival", "bursty", "--burst-factor", "0"}, "handoffcheck workload gen: --burst-factor 0, want 1 to 1000000"},
		{[]string{"workload", "gen", "--prompt", "normal:5"}, `handoffcheck workload gen: --prompt: "normal:5": kind "normal", want fixed:V, uniform:MIN-MAX or lognormal:mean=M,sigma=S[,min=A][,max=B]`},
		{[]string{"workload", "gen", "--prompt", "fixed:0"}, "handoffcheck workload gen: --prompt fixed:0 gives 0 tokens, want 1 to 1048576\n"},
		{[]string{"workload", "gen", "--output", "uniform:9-5"}, `handoffcheck workload gen: --output: "uniform:9-5": min 9 above max 5`},
		{[]string{"workload", "gen", "--prefix-groups", "0", "--prefix-share", "0.2"}, "handoffcheck workload gen: --prefix-share applies when --prefix-groups is above 0\n"},
		{[]string{"workload", "gen", "--prefix-groups", "0", "--prefix", "fixed:3"}, "handoffcheck workload gen: --prefix applies when --prefix-groups is above 0\n"},
		{[]string{"workload", "gen", "--prefix-groups", "-1"}, "handoffcheck workload gen: --prefix-groups -1, want 0 to 65536\n"},
		{[]string{"workload", "gen", "--prefix-share", "0"}, "handoffcheck workload gen: --prefix-share 0, want a probability above 0, at most 1\n"},
		{[]string{"workload", "gen", "--prefix", "fixed:0"}, "handoffcheck workload gen: --prefix fixed:0 gives 0 tokens, want 1 to 1048576\n"},
		{[]string{"workload", "gen", "--cancel-fraction", "0", "--cancel-after", "fixed:3"}, "handoffcheck workload gen: --cancel-after applies when --cancel-fraction is above 0\n"},
		{[]string{"workload", "gen", "--cancel-fraction", "1.5"}, "handoffcheck workload gen: --cancel-fraction 1.5, want a probability from 0 to 1\n"},
		{[]string{"workload", "gen", "--cancel-after", "lognormal:mean=5"}, `handoffcheck workload gen: --cancel-after: "lognormal:mean=5": want mean and sigma`},
		{[]string{"workload", "gen", "--rate", "1e-9"}, "past the 100000000000 ms a workload may last"},
		{[]string{"workload", "gen", "--out", "/nonexistent/dir/w.jsonl"}, "handoffcheck workload gen: --out: open /nonexistent/dir/w.jsonl: no such file or directory\n"},
		{[]string{"workload", "check"}, "handoffcheck workload check: want FILE..., got 0 arguments\nrun 'handoffcheck workload check --help' for usage\n"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want 2 (%d bytes of stdout, stderr %q)", code, len(out), errOut)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Fatalf("stderr:\n%s\nwant it to hold:\n%s", errOut, tc.want)
			}
		})
	}
}

// TestWorkload_GenOutRemovedOnError: a workload cut short is not left
// behind.
func TestWorkload_GenOutRemovedOnError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "w.jsonl")
	if code, _, _ := runCLI(t, "workload", "gen", "--rate", "1e-9", "--out", file); code != exitUsage {
		t.Fatalf("exit %d", code)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("the partial workload was left behind: %v", err)
	}
}

func TestWorkload_Help(t *testing.T) {
	for _, args := range [][]string{{"workload", "--help"}, {"help", "workload"}} {
		code, out, errOut := runCLI(t, args...)
		if code != exitOK || errOut != "" || !strings.Contains(out, "usage: handoffcheck workload gen [flags] | check FILE...") ||
			!strings.Contains(out, "  gen    draw a workload") || !strings.Contains(out, "  check  read workload files") {
			t.Errorf("%v: exit %d, stderr %q, stdout:\n%s", args, code, errOut, out)
		}
	}
	code, out, _ := runCLI(t, "workload", "gen", "--help")
	if code != exitOK || !strings.HasPrefix(out, "usage: handoffcheck workload gen [flags]\n") {
		t.Fatalf("gen --help: exit %d:\n%s", code, out)
	}
	for _, f := range []string{"-seed uint", "(default 1)", "-requests int", "(default 1000)", "-rate float", "(default 40)", "-arrival string",
		"-burst-factor", "-burst-on-ms", "-burst-off-ms", `-prompt string`, `(default "lognormal:mean=2048,sigma=0.6,min=64,max=8192")`,
		"-output string", "-prefix-groups int", "-prefix-share float", "-prefix string", "-cancel-fraction float", "-cancel-after string", "-out string", "-name string"} {
		if !strings.Contains(out, f) {
			t.Errorf("gen --help lacks %q", f)
		}
	}
	code, out, _ = runCLI(t, "workload", "check", "--help")
	if code != exitOK || !strings.HasPrefix(out, "usage: handoffcheck workload check FILE...\n") {
		t.Fatalf("check --help: exit %d:\n%s", code, out)
	}
}

// TestWorkload_EveryGeneratorFieldHasAFlag: each field of the generator
// configuration can be set from the command line, and its refusals name
// a flag that exists.
func TestWorkload_EveryGeneratorFieldHasAFlag(t *testing.T) {
	rt := reflect.TypeFor[workload.GenConfig]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		f, ok := genFlags[name]
		if !ok {
			t.Errorf("generator field %s has no flag", name)
			continue
		}
		code, out, _ := runCLI(t, "workload", "gen", "--help")
		if code != exitOK || !strings.Contains(out, "  -"+f+" ") {
			t.Errorf("generator field %s: flag --%s is not in gen --help", name, f)
		}
	}
	if len(genFlags) != rt.NumField()-1 {
		t.Errorf("genFlags names %d fields, the generator has %d", len(genFlags), rt.NumField()-1)
	}
	var b bytes.Buffer
	if _, err := workload.NewWriter(&b, workload.Header{}); err != nil {
		t.Fatal(err)
	}
}
