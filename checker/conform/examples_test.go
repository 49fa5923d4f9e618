package conform

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/logs/invalid from the valid examples, and testdata/goldens/conform from the reports (TestJudge_Goldens)")

const logsDir = "../../testdata/logs"

// expectation is what the judge must say of an invalid example.
type expectation struct {
	File      string `json:"file"`
	Shape     string `json:"shape"`
	From      string `json:"from"`
	Line      int    `json:"line"`
	Invariant string `json:"invariant"`
}

// shapeFile names an invalid example.
func shapeFile(name string) string {
	f := strings.NewReplacer(" ", "-", "`", "").Replace(strings.ToLower(name))
	return f + ".jsonl"
}

// The invalid examples are the valid complete examples with one line
// changed to each invalid shape (the first example with a place for it);
// -rewrite writes them and their expectations, and otherwise the files
// must be what the valid examples and the shapes give.
func TestInvalidExamplesFresh(t *testing.T) {
	valid := []string{"source-first-complete.jsonl", "destination-first-complete.jsonl"}
	files := map[string][]byte{}
	var exp []expectation
	for _, sh := range shapes {
		for _, v := range valid {
			data, err := os.ReadFile(filepath.Join(logsDir, "valid", v))
			if err != nil {
				t.Fatal(err)
			}
			l := readLog(t, data)
			lines, line, ok := sh.mutate(l)
			if !ok {
				continue
			}
			want := sh.invariant
			if sh.name == "source released before the reader completed" && l.h.Policy.String() == "destination-first" {
				continue // its physics allows it there: an example names an invariant
			}
			name := shapeFile(sh.name)
			files[name] = l.bytes(lines)
			exp = append(exp, expectation{File: name, Shape: sh.name, From: "valid/" + v, Line: line, Invariant: want})
			break
		}
	}
	js, _ := json.MarshalIndent(exp, "", "  ")
	files["expect.json"] = append(js, '\n')
	if len(exp) != len(shapes) {
		t.Errorf("%d of the %d shapes have an example", len(exp), len(shapes))
	}
	for name, want := range files {
		path := filepath.Join(logsDir, "invalid", name)
		if *rewrite {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./checker/conform -run TestInvalidExamplesFresh -rewrite writes it)", err)
		}
		if d := cmp.Diff(string(want), string(got)); d != "" {
			t.Errorf("%s is not what the valid examples and the shapes give (-want +got):\n%s", path, d)
		}
	}
}

// Every valid example is explained; every invalid one is rejected at its
// line with its invariant.
func TestExamples(t *testing.T) {
	valid, _ := filepath.Glob(filepath.Join(logsDir, "valid", "*.jsonl"))
	if len(valid) < 4 {
		t.Fatalf("want the four valid examples, have %v", valid)
	}
	for _, path := range valid {
		data, _ := os.ReadFile(path)
		rep := judgeBytes(t, path, data, Options{})
		if rep.Verdict != Explained {
			t.Errorf("%s: %s %+v", path, rep.Verdict, rep.Rejection)
		}
	}
	var exp []expectation
	data, err := os.ReadFile(filepath.Join(logsDir, "invalid", "expect.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &exp); err != nil {
		t.Fatal(err)
	}
	for _, e := range exp {
		path := filepath.Join(logsDir, "invalid", e.File)
		data, _ := os.ReadFile(path)
		rep := judgeBytes(t, e.File, data, Options{})
		x := rep.Rejection
		if rep.Verdict != Rejected || x.Line != e.Line || x.Invariant != e.Invariant {
			t.Errorf("%s (%s): want rejected at line %d with %s, got %s %+v", path, e.Shape, e.Line, e.Invariant, rep.Verdict, x)
		}
	}
}
