package system

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// configLines is a configuration whose lines the tests below point at.
// Line numbers are in the comments of the cases.
const configLines = `{
  "schema": "handoffcheck.config/v1",
  "runs": [
    {"name": "vllm", "policy": "source-first", "engine": "vllm"},
    {"name": "sglang",
     "policy": "destination-first", "engine": "sglang"}
  ],
  "workers": [
    {"role": "prefill", "capacity_blocks": 8},
    {"role": "decode",
     "capacity_blocks": 8,
     "slots": 2,
     "headroom_tokens": 1024,
     "prefix_hit_tokens": [16]}
  ],
  "handoffs": [
    {"prompt_tokens": 48,
     "headroom_tokens": 512}
  ],
  "transfer": {"bytes_per_token": 131072, "block_size_tokens": 16},
  "faults": {"duplicate": 1}
}`

func editConfig(t *testing.T, old, new string) []byte {
	t.Helper()
	if !strings.Contains(configLines, old) {
		t.Fatalf("%q is not in the configuration", old)
	}
	return []byte(strings.Replace(configLines, old, new, 1))
}

// parseRefused parses data and returns the error's lines after the first
// (the sentinel); it fails the test if the configuration is accepted.
func parseRefused(t *testing.T, data []byte) []string {
	t.Helper()
	c, err := ParseConfig("c.json", data)
	if err == nil {
		t.Fatalf("accepted: %+v", c.Runs)
	}
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("%v does not wrap ErrConfig", err)
	}
	return strings.Split(err.Error(), "\n")
}

func TestParseConfig_Accepts(t *testing.T) {
	if _, err := ParseConfig("c.json", []byte(configLines)); err != nil {
		t.Fatal(err)
	}
}

// Every problem points at the entry it is about (its key where there is
// one), never at the array that holds it, and says what was expected;
// runs, workers and handoffs are numbered from 0 as reports name them,
// and a wrong limit brings no follow-on problems.
func TestParseConfig_PointsAtTheEntry(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new string
		want     []string // whole error lines, in file order
	}{
		{"run-policy", `"policy": "destination-first"`, `"policy": "sideways"`,
			[]string{`c.json:6: run 1 ("sglang"): policy "sideways" is not source-first or destination-first`}},
		{"worker-role", `{"role": "decode",`, `{"role": "verify",`,
			[]string{`c.json:10: worker 1: role "verify" is not prefill or decode`}},
		// A negative capacity is the one problem: the background load is
		// not also judged against it.
		{"negative-capacity", `"capacity_blocks": 8,
     "slots": 2,`, `"capacity_blocks": -1, "background_blocks": 2,
     "slots": 2,`,
			[]string{`c.json:11: worker 1: capacity_blocks -1, want 1 to 250`}},
		{"background-above-capacity", `"capacity_blocks": 8,
     "slots": 2,`, `"capacity_blocks": 8,
     "slots": 2, "background_blocks": 9,`,
			[]string{`c.json:12: worker 1: background_blocks 9, more than its capacity of 8 blocks`}},
		{"zero-slots", `"slots": 2,`, `"slots": 0, "background_slots": 1,`,
			[]string{`c.json:12: worker 1: slots 0, want 1 to 15`}},
		{"prompt", `{"prompt_tokens": 48,`, `{"prompt_tokens": 0,`,
			[]string{`c.json:17: handoff 0: prompt_tokens 0, want at least 1`}},
		{"negative-handoff-headroom", `"headroom_tokens": 512}`, `"headroom_tokens": -1}`,
			[]string{`c.json:18: handoff 0: headroom_tokens -1, want 0 or more`}},
		// A prefix cache holds at most the whole prompt.
		{"hit-above-prompt", `"prefix_hit_tokens": [16]}`, `"prefix_hit_tokens": [64]}`,
			[]string{`c.json:14: worker 1: prefix hit of 64 tokens for handoff 0, more than its prompt of 48 tokens`}},
		{"hit-on-prefill", `{"role": "prefill", "capacity_blocks": 8}`, `{"role": "prefill", "capacity_blocks": 8, "prefix_hit_tokens": [16]}`,
			[]string{`c.json:9: worker 0: prefix hit for handoff 0 on a prefill worker: prefix hits apply to decode workers only`}},
		{"too-few-workers", `    {"role": "prefill", "capacity_blocks": 8},
`, ``,
			[]string{`c.json:8: workers: 1 given, want 2 to 5 (at least one prefill and one decode worker)`}},
		{"handoff-too-big", `"capacity_blocks": 8}`, `"capacity_blocks": 2}`,
			[]string{`c.json:9: worker 0: handoff 0 needs 3 compute blocks, more than its capacity of 2`}},
		{"unknown-fault", `"duplicate": 1`, `"duplicate": 1, "gremlins": 1`,
			[]string{`c.json:21: unknown fault "gremlins"`}},
		// Two problems, each at its own line, in file order.
		{"two-problems", `"engine": "vllm"}`, `"engine": "tgi"}`,
			[]string{`c.json:4: run 0 ("vllm"): engine "tgi" is not one of vllm, sglang, trtllm`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseRefused(t, editConfig(t, tc.old, tc.new))[1:]
			if len(got) != len(tc.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("problem %d:\n got %s\nwant %s", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// The configuration's type errors say what the file should hold in JSON
// terms: no Go type name reaches a person.
func TestParseConfig_NoGoTypeNames(t *testing.T) {
	for _, tc := range []struct{ old, new, want string }{
		{`"capacity_blocks": 8}`, `"capacity_blocks": "8"}`, `c.json:9: checker: bad configuration: field "workers.capacity_blocks": got JSON string, want an integer from -2147483648 to 2147483647`},
		{`"handoffs": [
    {"prompt_tokens": 48,
     "headroom_tokens": 512}
  ]`, `"handoffs": {}`, `c.json:16: checker: bad configuration: field "handoffs": got JSON object, want an array`},
		{`"duplicate": 1`, `"duplicate": -1`, `c.json:21: checker: bad configuration: field "faults": got JSON number -1, want a non-negative integer`},
	} {
		_, err := ParseConfig("c.json", editConfig(t, tc.old, tc.new))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %s", err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), "model.") || strings.Contains(err.Error(), "checker.") || strings.Contains(err.Error(), "Go ")) {
			t.Errorf("a Go type name in %v", err)
		}
	}
}

// A run name --run cannot select is refused, like a name used twice.
func TestParseConfig_RunNames(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"", `c.json:4: run 0 (""): name is empty`},
		{"a,b", `c.json:4: run 0 ("a,b"): name contains a comma`},
		{"v llm", `c.json:4: run 0 ("v llm"): name contains white space`},
		{"vllm\t", `c.json:4: run 0 ("vllm\t"): name contains white space`},
		{"sglang", `c.json:5: run 1 ("sglang"): name is also the name of run 0`},
	} {
		got := parseRefused(t, editConfig(t, `{"name": "vllm"`, fmt.Sprintf(`{"name": %q`, tc.name)))
		if len(got) != 2 || !strings.HasPrefix(got[1], tc.want) {
			t.Errorf("name %q: got\n%s\nwant %s", tc.name, strings.Join(got, "\n"), tc.want)
		}
	}
}

// A key given twice is refused at its second occurrence: JSON decoding
// keeps the last silently.
func TestParseConfig_DuplicateKey(t *testing.T) {
	_, err := ParseConfig("c.json", editConfig(t, `"slots": 2,`, `"slots": 2, "slots": 3,`))
	want := `c.json:12: checker: bad configuration: key "slots" appears twice in workers[1] (first on line 12); want each key once`
	if err == nil || err.Error() != want || !errors.Is(err, ErrConfig) {
		t.Fatalf("got %v, want %s", err, want)
	}
}

// A transfer whose byte count overflows is refused at the handoff it prices.
func TestParseConfig_TransferOverflow(t *testing.T) {
	got := parseRefused(t, editConfig(t, `"bytes_per_token": 131072`, `"bytes_per_token": 1000000000000000000`))
	if len(got) != 2 || !strings.HasPrefix(got[1], "c.json:17: handoff 0: linear profile: 48 moved tokens × 1000000000000000000 bytes per token overflow the byte count") {
		t.Fatalf("got\n%s", strings.Join(got, "\n"))
	}
}

// Independent problems are reported together, each at its line: a run
// name --run cannot select does not hide the workers' problems.
func TestParseConfig_ReportsIndependentProblemsTogether(t *testing.T) {
	data := editConfig(t, `{"name": "vllm"`, `{"name": "v llm"`)
	data = []byte(strings.Replace(string(data), `"capacity_blocks": 8,
     "slots": 2,`, `"capacity_blocks": -1, "background_blocks": 2,
     "slots": 2,`, 1))
	data = []byte(strings.Replace(string(data), `"engine": "sglang"`, `"engine": "tgi"`, 1))
	got := parseRefused(t, data)[1:]
	want := []string{
		`c.json:4: run 0 ("v llm"): name contains white space`,
		`c.json:6: run 1 ("sglang"): engine "tgi" is not one of vllm, sglang, trtllm`,
		`c.json:11: worker 1: capacity_blocks -1, want 1 to 250`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}

// Each problem is reported at the value its path names: the repeat of a
// group's name (not its first declaration), the group a problem is about
// even when another group has the same name, the prefix hit past the
// handoffs, the negative half of a background load. A reader that found
// the line from the message's words put all of these elsewhere.
func TestParseConfig_LinesFromPaths(t *testing.T) {
	grouped := `"transfer": {"groups": {"vllm_version": "0.32.0", "groups": [
    {"name": "attn", "kind": "full_attention", "block_size_tokens": 16, "transfer_bytes_per_block": 1, "prefix_cacheable": true},
    {"name": "attn", "kind": "full_attention", "block_size_tokens": 16, "transfer_bytes_per_block": 1, "prefix_cacheable": true},
    {"name": "attn", "kind": "full_attention", "block_size_tokens": 32, "transfer_bytes_per_block": 1, "prefix_cacheable": true}]}},`
	for _, tc := range []struct {
		name     string
		old, new string
		want     []string // whole error lines, in file order
	}{
		{"name-repeated", `"transfer": {"bytes_per_token": 131072, "block_size_tokens": 16},`, grouped, []string{
			`c.json:22: transfer groups: prefill profile: group "attn": declared twice`,
			`c.json:23: transfer groups: prefill profile: group "attn": declared twice`,
			`c.json:23: transfer groups: prefill profile: group "attn": full-attention groups must share one block size (16 and 32)`,
		}},
		{"hit-past-the-handoffs", `"prefix_hit_tokens": [16]}`, `"prefix_hit_tokens": [16,
       16]}`, []string{`c.json:15: worker 1: prefix hits for 2 handoffs, but there are 1`}},
		{"negative-background-slots", `"slots": 2,`, `"slots": 2, "background_blocks": 1,
     "background_slots": -1,`, []string{`c.json:13: worker 1: background load of 1 blocks and -1 slots, want neither negative`}},
		// The decode role's profile is the one that cannot pair.
		{"decode-profile-differs", `"transfer": {"bytes_per_token": 131072, "block_size_tokens": 16},`, `"transfer": {"bytes_per_token": 131072, "block_size_tokens": 16,
    "decode": {"bytes_per_token": 65536, "block_size_tokens": 16}},`, []string{
			`c.json:21: transfer: the prefill role's linear profile (131072 bytes per token, 16-token pages) and the decode role's (65536 bytes per token, 16-token pages) differ`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseRefused(t, editConfig(t, tc.old, tc.new))[1:]
			if len(got) != len(tc.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("problem %d:\n got %s\nwant %s", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// No reader of a configuration or a groups file finds where a problem
// belongs from its wording: none of the files that validate or locate
// them matches a regular expression, or searches, splits or cuts an
// error's text. A message can then be reworded without moving its line.
// (spec/jsonfile's DecodeError still reads the unknown key from
// encoding/json's own message, which carries no other form of it.)
func TestParseConfig_NoLocationFromWording(t *testing.T) {
	files := []string{"config.go", "../tracefile.go",
		"../../model/config.go", "../../model/groups.go", "../../model/pricing.go",
		"../../spec/jsonfile/scan.go", "../../spec/jsonfile/problem.go"}
	for _, f := range files {
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range file.Imports {
			if imp.Path.Value == `"regexp"` {
				t.Errorf("%s imports regexp", filepath.Base(f))
			}
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "strings" {
				return true
			}
			readsError := false
			for _, arg := range call.Args {
				ast.Inspect(arg, func(n ast.Node) bool {
					if c, ok := n.(*ast.CallExpr); ok {
						if s, ok := c.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Error" && len(c.Args) == 0 {
							readsError = true
						}
					}
					return !readsError
				})
			}
			if readsError {
				t.Errorf("%s: strings.%s reads an error's text", fset.Position(call.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}
